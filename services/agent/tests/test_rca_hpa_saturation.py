"""Ready pods that are slow: an HPA pinned at maxReplicas with CPU use per pod at the container's
limit is cpu_throttled with the observed numbers; an HPA with headroom is not."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca._signatures import match_all

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
_fakes = sys.modules.get("agent_rca_fakes") or importlib.util.module_from_spec(_spec)
if "agent_rca_fakes" not in sys.modules:
    sys.modules["agent_rca_fakes"] = _fakes
    _spec.loader.exec_module(_fakes)

POD = PodView.parse({"namespace": "web", "name": "render-6f7a8b9c0d-qqqqq", "phase": "Running",
                     "owner": {"kind": "ReplicaSet", "name": "render-6f7a8b9c0d"},
                     "containers": [{"name": "render", "ready": True, "state": {"running": {}},
                                     "resources": {"requests": {"cpu": "400m"}, "limits": {"cpu": "500m"}}}]})
LISTED = {"items": [{"name": "render", "target": "Deployment/render", "max_replicas": 10, "current_replicas": 10,
                     "metrics": [{"type": "Resource", "resource": "cpu", "target": 60}],
                     "conditions": [{"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas", "message": "the desired replica count is more than the maximum replica count"}]}]}


def _full(util: int) -> dict:
    return {"kind": "HorizontalPodAutoscaler", "spec": {"maxReplicas": 10},
            "status": {"currentReplicas": 10, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": util}}}]}}


async def _run(util: int) -> WorkloadObservation:
    tools = _fakes.FakeTools({("list_resources", "web"): LISTED, ("get_resource", "render"): _full(util)})
    f, _log = _fakes.follow(tools)
    obs = WorkloadObservation("web", "Deployment", "render", pods=[POD], named=True, quiet=True)
    await f.run(obs)
    return obs


async def test_hpa_at_max_with_cpu_at_the_limit_is_cpu_throttled() -> None:
    obs = await _run(124)
    top = match_all(obs.facts())[0]
    assert (top.signature.family, top.confidence) == ("cpu_throttled", "high")
    text = obs.variables["cpu_saturation"]
    assert "10/10" in text and "124% of the 400m request" in text and "500m CPU limit" in text


async def test_hpa_at_max_with_cpu_below_the_limit_is_not_throttling() -> None:
    obs = await _run(80)
    assert "cpu_saturated" not in obs.derived and "hpa_maxed" in obs.derived
    assert not any(m.signature.family == "cpu_throttled" for m in match_all(obs.facts()))
