"""A cluster-wide caller who names a node: the Node is read, and when it is not ready (say the CNI
is not initialised) node_not_ready on Node/<name> is the root cause, with the failing DaemonSet pod
scheduled on it as supporting evidence, ranked above that pod's own finding."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._cluster import analyse_cluster
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._plan import parse_question
from sleuth_agent.rca._report import build_result
from sleuth_agent.settings import AgentSettings
from sleuth_common.scope import Scope

_spec = importlib.util.spec_from_file_location("agent_rca_fakes_node", Path(__file__).parent / "rca_fakes.py")
assert _spec is not None and _spec.loader is not None
rca_fakes = importlib.util.module_from_spec(_spec)
sys.modules["agent_rca_fakes_node"] = rca_fakes
_spec.loader.exec_module(rca_fakes)

NODE = "rack4-node-17"
NS = "netsys"
AGENT = "flannel-x7k2p"

NODES = {"nodes": [
    {"name": "rack4-node-02", "ready": "True", "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
    {"name": NODE, "ready": "False", "taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}],
     "conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                     "message": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                                "message:Network plugin returns error: cni plugin not initialized"}]},
]}
PODS = {"pods": [
    {"namespace": NS, "name": AGENT, "phase": "Running", "node": NODE, "owner": {"kind": "DaemonSet", "name": "flannel"},
     "containers": [{"name": "kube-flannel", "ready": False, "restart_count": 6,
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                     "last_termination": {"reason": "Error", "exit_code": 1}}]},
    {"namespace": NS, "name": "flannel-a1b2c", "phase": "Running", "node": "rack4-node-02", "owner": {"kind": "DaemonSet", "name": "flannel"},
     "containers": [{"name": "kube-flannel", "ready": True, "restart_count": 0, "state": {"running": {}}}]},
]}
TOOLS = {
    ("list_nodes", ""): NODES,
    ("list_pods", NS): PODS,
    ("list_workloads", NS): {"workloads": [{"kind": "DaemonSet", "name": "flannel", "namespace": NS}]},
    ("list_events", NS): {"events": []},
    ("list_services", NS): {"services": []},
    ("get_pod", AGENT): PODS["pods"][0],
    ("pod_logs", AGENT): {"log": "E0101 failed to dial tcp 10.96.0.1:443: i/o timeout"},
}


async def test_a_named_not_ready_node_is_the_root_cause_with_its_failing_daemonset_pod() -> None:
    log = EvidenceLog()
    question = f"new node {NODE} is still NotReady and nothing gets scheduled on it, flannel again?"
    out = await analyse_cluster(
        rca_fakes.FakeTools(TOOLS), Scope.of(cluster_wide=True, namespaces=[NS]), "c1", parse_question(question), AgentSettings(), log
    )
    r = build_result([out], log, scope_text="the whole cluster", cluster_wide=True)
    assert r.status == "diagnosed" and r.root_cause is not None
    assert r.root_cause.family == "node_not_ready" and r.root_cause.resource == f"Node/{NODE}"
    assert "cni plugin not initialized" in r.root_cause.summary and AGENT in r.root_cause.summary


async def test_a_node_word_is_not_looked_up_for_a_namespaced_caller() -> None:
    tools = rca_fakes.FakeTools(TOOLS)
    log = EvidenceLog()
    await analyse_cluster(tools, Scope.of(namespaces=[NS]), "c1", parse_question(f"is {NODE} ok?"), AgentSettings(), log)
    assert not any(t == "list_nodes" for t, _ in tools.calls)
