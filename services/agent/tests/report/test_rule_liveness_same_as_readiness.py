"""liveness_same_as_readiness: the liveness probe checks what readiness checks."""

from __future__ import annotations

import yaml
from report_objects import container, findings, pod_spec, workload

SAME = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10, "failureThreshold": 3}


def web(live: dict | None, ready: dict | None) -> dict:
    return workload(spec=pod_spec(container("app", livenessProbe=live, readinessProbe=ready)))


def test_identical_probes_get_a_separate_liveness_path_and_later_give_up() -> None:
    (f,) = findings("liveness_same_as_readiness", web(SAME, SAME))
    assert f.observed == {"container": "app", "probe": {"httpGet": SAME["httpGet"]}, "identical_settings": True}
    (c,) = yaml.safe_load(f.fix)["spec"]["template"]["spec"]["containers"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/livez", "port": 8080}
    assert c["livenessProbe"]["failureThreshold"] == 6


def test_same_handler_with_other_timings_still_counts() -> None:
    (f,) = findings("liveness_same_as_readiness", web(SAME, {**SAME, "periodSeconds": 5}))
    assert f.observed["identical_settings"] is False


def test_tcp_and_exec_handlers() -> None:
    tcp = {"tcpSocket": {"port": 5432}}
    assert len(findings("liveness_same_as_readiness", web(tcp, tcp))) == 1
    assert findings("liveness_same_as_readiness", web(tcp, {"tcpSocket": {"port": 5433}})) == []


def test_different_or_missing_probes_are_fine() -> None:
    assert findings("liveness_same_as_readiness", web(SAME, {"httpGet": {"path": "/ready", "port": 8080}})) == []
    assert findings("liveness_same_as_readiness", web(SAME, None)) == []
    assert findings("liveness_same_as_readiness", web({"periodSeconds": 3}, {"periodSeconds": 3})) == []
    assert findings("liveness_same_as_readiness", web("yes", "yes")) == []  # type: ignore[arg-type]
