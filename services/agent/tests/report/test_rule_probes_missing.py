"""probes_missing: no liveness probe, or a serving port without a readiness probe."""

from __future__ import annotations

import yaml
from report_objects import container, cronjob, findings, inventory, pod_spec, run, workload


def web(**overrides: object) -> dict:
    return workload(spec=pod_spec(container("app", **overrides)))


def test_both_missing_gets_both_probes_on_the_observed_port() -> None:
    (f,) = findings("probes_missing", web(livenessProbe=None, readinessProbe=None))
    assert f.observed == {"container": "app", "missing": ["liveness", "readiness"], "port": 8080}
    head, body = f.fix.split("\n", 1)
    assert head == "# kubectl patch deployment web -n team-a --patch-file fix.yaml"
    (c,) = yaml.safe_load(body)["spec"]["template"]["spec"]["containers"]
    assert c["name"] == "app"
    assert c["livenessProbe"]["tcpSocket"] == {"port": 8080}
    assert c["readinessProbe"]["httpGet"] == {"path": "/ready", "port": 8080}


def test_only_liveness_missing() -> None:
    (f,) = findings("probes_missing", web(livenessProbe=None))
    assert f.observed["missing"] == ["liveness"] and "never restarted" in f.why


def test_a_worker_without_ports_needs_no_readiness_and_gets_an_exec_liveness() -> None:
    (f,) = findings("probes_missing", workload(spec=pod_spec(container("worker", port=None, livenessProbe=None,
                                                                         readinessProbe=None))))
    assert f.observed["missing"] == ["liveness"] and "exec" in f.fix


def test_jobs_and_cronjobs_are_not_judged_nor_probed_containers() -> None:
    assert findings("probes_missing", cronjob(), web()) == []


def test_an_odd_port_is_not_checked() -> None:
    out = run("probes_missing", inventory(web(livenessProbe=None, ports=[{"containerPort": "http"}])))
    assert out.findings == [] and out.not_checked[0].rule == "probes_missing"
