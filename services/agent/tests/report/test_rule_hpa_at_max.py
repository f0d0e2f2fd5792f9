"""hpa_at_max: an HPA running at maxReplicas, or limited by TooManyReplicas."""

from __future__ import annotations

from report_objects import findings, hpa

LIMITED = {"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas",
           "message": "the desired replica count is more than the maximum replica count"}


def test_at_max_gets_a_higher_max() -> None:
    (f,) = findings("hpa_at_max", hpa(high=10, current=10))
    assert f.observed["max_replicas"] == 10 and f.observed["current_replicas"] == 10
    assert f.fix.startswith("""kubectl patch hpa web -n team-a --type=merge -p '{"spec":{"maxReplicas":15}}'""")
    assert "Deployment/web" in f.why


def test_scaling_limited_counts_even_below_max_and_a_small_max_grows_by_one_at_least() -> None:
    (f,) = findings("hpa_at_max", hpa(high=1, low=1, current=None, conditions=[LIMITED]))
    assert f.observed["scaling_limited"] is True and '"maxReplicas":2' in f.fix


def test_below_max_or_without_status_is_fine() -> None:
    assert findings("hpa_at_max", hpa(high=10, current=4)) == []
    assert findings("hpa_at_max", hpa(high=10, current=None)) == []
    assert findings("hpa_at_max", hpa(high=10, current=3, conditions=[{**LIMITED, "status": "False"}])) == []
