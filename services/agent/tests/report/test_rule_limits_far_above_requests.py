"""limits_far_above_requests: memory limit > 2x the request, CPU limit > 4x (thresholds.yaml)."""

from __future__ import annotations

from report_objects import container, findings, inventory, pod_spec, run, workload


def res(requests: dict, limits: dict) -> dict:
    return workload(spec=pod_spec(container("app", resources={"requests": requests, "limits": limits})))


def test_memory_far_above_gets_the_request_raised_to_the_limit() -> None:
    (f,) = findings("limits_far_above_requests", res({"cpu": "1", "memory": "192Mi"}, {"memory": "512Mi"}))
    assert f.severity == "low"
    assert f.observed == {"container": "app", "resource": "memory", "request": "192Mi", "limit": "512Mi", "ratio": 2.67}
    assert f.fix == "kubectl set resources deployment/web -n team-a -c app --requests=memory=512Mi"
    assert "2.7x" in f.why


def test_cpu_far_above_gets_a_request_within_the_ratio() -> None:
    (f,) = findings("limits_far_above_requests", res({"cpu": "100m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"}))
    assert f.observed["resource"] == "cpu" and f.fix.endswith("--requests=cpu=125m")


def test_both_at_once_and_whole_cores() -> None:
    got = findings("limits_far_above_requests", res({"cpu": "0.5", "memory": "1Gi"}, {"cpu": "8", "memory": "4Gi"}))
    assert [f.observed["resource"] for f in got] == ["memory", "cpu"]
    assert got[0].fix.endswith("--requests=memory=4Gi") and got[1].fix.endswith("--requests=cpu=2")


def test_at_the_threshold_missing_halves_and_zero_requests_are_fine() -> None:
    assert findings("limits_far_above_requests", res({"cpu": "250m", "memory": "128Mi"}, {"cpu": "1", "memory": "256Mi"})) == []
    assert findings("limits_far_above_requests", res({}, {"cpu": "4", "memory": "4Gi"})) == []
    assert findings("limits_far_above_requests", res({"cpu": "0", "memory": "0"}, {"cpu": "4", "memory": "4Gi"})) == []


def test_a_value_that_is_not_a_quantity_is_not_checked() -> None:
    out = run("limits_far_above_requests", inventory(res({"memory": "a lot"}, {"memory": "1Gi"})))
    assert out.findings == [] and out.not_checked[0].rule == "limits_far_above_requests"
