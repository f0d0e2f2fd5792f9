"""no_spread: several replicas with neither pod anti-affinity nor topology spread constraints."""

from __future__ import annotations

import yaml
from report_objects import findings, pod_spec, workload


def test_replicas_without_spreading_get_spread_constraints_on_their_selector() -> None:
    (f,) = findings("no_spread", workload(replicas=3, spec=pod_spec()))
    assert f.observed == {"replicas": 3, "selector": "app=web"}
    spread = yaml.safe_load(f.fix)["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert [s["topologyKey"] for s in spread] == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
    assert all(s["labelSelector"] == {"matchLabels": {"app": "web"}} for s in spread)
    assert "&id" not in f.fix  # written out, no YAML anchors


def test_spread_anti_affinity_one_replica_and_daemonsets_are_fine() -> None:
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    assert findings("no_spread", workload(replicas=3)) == []  # the default has a spread constraint
    assert findings("no_spread", workload(replicas=3, spec=pod_spec(affinity=anti))) == []
    assert findings("no_spread", workload(replicas=1, spec=pod_spec())) == []
    assert findings("no_spread", workload("DaemonSet", spec=pod_spec())) == []


def test_statefulsets_count_and_a_missing_selector_falls_back_to_labels() -> None:
    sts = workload("StatefulSet", "db", replicas=2, spec=pod_spec())
    del sts["spec"]["selector"]
    (f,) = findings("no_spread", sts)
    assert f.observed["selector"] == "app=db"
