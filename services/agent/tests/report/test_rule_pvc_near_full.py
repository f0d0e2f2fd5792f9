"""pvc_near_full: runs only when volume usage metrics were read; severity by how full."""

from __future__ import annotations

import pytest
from report_objects import findings, inventory, pvc, run


@pytest.mark.parametrize(("used", "severity"), [(0.82, "medium"), (0.91, "high"), (0.99, "critical")])
def test_severity_follows_usage(used: float, severity: str) -> None:
    (f,) = findings("pvc_near_full", pvc(capacity="10Gi"), pvc_usage={("team-a", "data"): used})
    assert f.severity == severity and f.observed["used"] == used and f.observed["capacity"] == "10Gi"
    assert f.fix.startswith("""kubectl patch pvc data -n team-a -p '{"spec":{"resources":{"requests":{"storage":"15Gi"}}}}'""")
    assert f"{used:.0%} full" in f.why


def test_below_threshold_or_no_sample_is_fine() -> None:
    assert findings("pvc_near_full", pvc(), pvc_usage={("team-a", "data"): 0.5}) == []
    assert findings("pvc_near_full", pvc(), pvc_usage={("team-a", "other"): 0.99}) == []


def test_without_metrics_it_does_not_run_and_says_why() -> None:
    out = run("pvc_near_full", inventory(pvc(), metrics_note="no Prometheus tool is configured for this cluster"))
    assert out.findings == [] and out.checked == 0
    assert out.notes == ["Volume nearly full (pvc_near_full) not checked on demo: no Prometheus tool is configured "
                         "for this cluster"]


def test_unknown_capacity_still_reports_with_a_look_command() -> None:
    claim = pvc()
    del claim["status"]["capacity"]
    del claim["spec"]["resources"]
    (f,) = findings("pvc_near_full", claim, pvc_usage={("team-a", "data"): 0.95})
    assert f.fix.startswith("kubectl get pvc data -n team-a")
