"""Evicted pods: the node that evicted them is named, and for a cluster-wide caller its pressure
conditions, taints and EvictionThresholdMet events are read."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import EventView, PodView
from sleuth_agent.rca._signatures import match_all

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
_fakes = sys.modules.get("agent_rca_fakes") or importlib.util.module_from_spec(_spec)
if "agent_rca_fakes" not in sys.modules:
    sys.modules["agent_rca_fakes"] = _fakes
    _spec.loader.exec_module(_fakes)
FakeTools, follow = _fakes.FakeTools, _fakes.follow


def _evicted(i: int, node: str) -> PodView:
    return PodView.parse({
        "namespace": "batch", "name": f"crunch-6b7c8d9e0f-p{i}", "phase": "Failed", "reason": "Evicted",
        "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi.",
        "node": node, "owner": {"kind": "ReplicaSet", "name": "crunch-6b7c8d9e0f"},
        "containers": [{"name": "crunch", "ready": False, "state": {"terminated": {"reason": "ContainerStatusUnknown", "exit_code": 137}}}],
    })


NODES = {"nodes": [
    {"name": "worker-b3", "ready": "True", "conditions": [
        {"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory", "message": "kubelet has insufficient memory available"},
        {"type": "DiskPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
     "taints": [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]},
    {"name": "worker-a1", "ready": "True", "conditions": []},
]}
NODE_EVENTS = {"events": [{"type": "Warning", "reason": "EvictionThresholdMet", "message": "Attempting to reclaim memory", "count": 3,
                           "involved_object": {"kind": "Node", "name": "worker-b3"}}]}


def _obs() -> WorkloadObservation:
    pods = [_evicted(1, "worker-b3"), _evicted(2, "worker-b3"), _evicted(3, "worker-a1")]
    ev = EventView.parse({"type": "Warning", "reason": "Evicted", "message": pods[0].message, "involved_object": {"kind": "Pod", "name": pods[0].name}})
    return WorkloadObservation("batch", "Deployment", "crunch", pods=pods, events=[ev])


async def test_cluster_wide_caller_gets_the_node_pressure() -> None:
    tools = FakeTools({("list_nodes", ""): NODES, ("list_events", "default"): NODE_EVENTS})
    f, _log = follow(tools, cluster_wide=True)
    obs = _obs()
    await f.run(obs)
    text = obs.derived["eviction_node"][0]
    assert "2 of the 3 evicted pods ran on node worker-b3" in text
    assert "MemoryPressure=True" in text and "memory-pressure:NoSchedule" in text and "EvictionThresholdMet" in text
    assert match_all(obs.facts())[0].signature.family == "evicted"


async def test_a_tenant_gets_the_node_name_only() -> None:
    tools = FakeTools({})
    f, _log = follow(tools, cluster_wide=False)
    obs = _obs()
    await f.run(obs)
    assert ("list_nodes", {}) not in tools.calls
    assert "worker-b3" in obs.derived["eviction_node"][0] and "outside your access" in obs.derived["eviction_node"][0]
