"""The rule registry: every module registers, ids are unique and have a test, thresholds exist,
a clean object trips no rule, and a rule that raises costs only the object it raised on."""

from __future__ import annotations

import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from report_objects import cronjob, hpa, inventory, job, pdb, pod, pvc, workload

from sleuth_agent.report import Hit, Inventory, K8sObject, Rule, load_rules, rule, run_rules
from sleuth_agent.report import rules as rules_pkg
from sleuth_common.messages import SEVERITIES

HERE = Path(__file__).parent


def test_every_rule_module_registers_and_every_rule_has_its_own_test() -> None:
    registry = load_rules()
    modules = {m.name for m in pkgutil.iter_modules(rules_pkg.__path__) if not m.name.startswith("_")}
    assert modules == {r.module.rsplit(".", 1)[-1] for r in registry.values()}
    assert len(registry) >= 15
    for r in registry.values():
        assert (HERE / f"test_rule_{r.id}.py").is_file(), f"rule {r.id} has no test module"
        assert r.severity in SEVERITIES and r.kinds and r.title


def test_the_registry_refuses_a_second_rule_with_the_same_id_and_bad_severities() -> None:
    load_rules()
    with pytest.raises(ValueError, match="registered twice"):
        rule("no_spread", title="again", severity="low", kinds=("Deployment",))(lambda o, i: iter(()))
    with pytest.raises(ValueError, match="severity"):
        rule("x", title="x", severity="urgent", kinds=("Deployment",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kinds"):
        rule("x", title="x", severity="low", kinds=())


def test_well_configured_objects_trip_no_rule() -> None:
    inv = inventory(
        workload(), workload("StatefulSet", "db", replicas=3), workload("DaemonSet", "agent"), cronjob(),
        job("nightly-1", cron="nightly", start="2026-11-30T02:00:00Z", end="2026-11-30T02:10:00Z"),
        pod(), pdb(maxUnavailable=1), hpa(current=3), pvc(), pvc_usage={("team-a", "data"): 0.4},
    )
    out = run_rules(inv)
    assert out.findings == [] and out.not_checked == [] and out.notes == []
    assert out.checked > 40


def boom(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    if obj.name == "odd":
        raise KeyError("spec")
    yield Hit(why="Seen.", fix="kubectl get deployment", observed={"name": obj.name})


def test_a_rule_raising_on_one_object_reports_it_not_checked_and_the_rest_goes_on() -> None:
    flaky = Rule("flaky", "Flaky", "low", ("Deployment",), boom)
    inv = inventory(workload(name="odd"), workload(name="fine", replicas=1))
    out = run_rules(inv, [flaky, load_rules()["single_replica_no_pdb"]])
    assert [(n.rule, n.kind, n.namespace, n.name) for n in out.not_checked] == [("flaky", "Deployment", "team-a", "odd")]
    assert out.not_checked[0].reason == "KeyError: 'spec'"
    assert sorted((f.rule, f.name) for f in out.findings) == [("flaky", "fine"), ("single_replica_no_pdb", "fine")]


def test_objects_a_controller_owns_are_judged_through_it() -> None:
    owned_pod = pod("web-1", owner=("ReplicaSet", "web-7d9"))
    node_pod = pod("static", owner=("Node", "node-1"))
    cron_job = job("nightly-1", cron="nightly")
    inv = inventory(owned_pod, node_pod, cron_job)
    assert [o.name for o in inv.subjects(("Pod", "Job"))] == ["static"]
