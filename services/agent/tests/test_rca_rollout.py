"""A stuck rollout is reported next to the cause of its new pods' failure (with the old
ReplicaSet still serving), and an old probe failure of a sidecar that is ready now does not
become a confident probe_failure candidate."""

from __future__ import annotations

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import EventView, PodView, WorkloadView
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca._targets import _rollout_note
from sleuth_agent.rca.followups import FollowUps


def _crashing_pod_with_ready_sidecar() -> PodView:
    return PodView.parse({
        "namespace": "pay", "name": "ledger-7f6d5c4b3a-qqqqq", "phase": "Running",
        "owner": {"kind": "ReplicaSet", "name": "ledger-7f6d5c4b3a"},
        "containers": [
            {"name": "ledger", "image": "r/ledger:9", "ready": False, "restart_count": 12,
             "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "last_termination": {"reason": "Error", "exit_code": 2},
             "readiness_probe": {"type": "http", "path": "/ready", "port": 8080}},
            {"name": "envoy", "image": "r/envoy:1", "ready": True, "state": {"running": {}},
             "readiness_probe": {"type": "http", "path": "/ready", "port": 9901}},
        ],
    })


def _probe_event(port: int) -> EventView:
    return EventView.parse({"type": "Warning", "reason": "Unhealthy", "count": 2,
                            "message": f'Readiness probe failed: Get "http://10.1.2.3:{port}/ready": dial tcp 10.1.2.3:{port}: connect: connection refused',
                            "involved_object": {"kind": "Pod", "name": "ledger-7f6d5c4b3a-qqqqq"}})


async def _run(obs: WorkloadObservation) -> None:
    class NoTools:
        def has_tool(self, name: str) -> bool:
            return False

    await FollowUps(NoTools(), EvidenceLog(), Collected(), 5.0, False).run(obs)  # type: ignore[arg-type]


async def test_a_ready_sidecars_old_probe_failure_is_held_low() -> None:
    pod = _crashing_pod_with_ready_sidecar()
    obs = WorkloadObservation("pay", "Deployment", "ledger", pods=[pod], events=[_probe_event(9901)])
    await _run(obs)
    by_family = {m.signature.family: m.confidence for m in match_all(obs.facts())}
    assert by_family["probe_failure"] == "low"
    assert match_all(obs.facts())[0].signature.family == "crash_loop_app_error"


async def test_a_probe_failure_of_the_failing_container_is_kept() -> None:
    pod = _crashing_pod_with_ready_sidecar()
    obs = WorkloadObservation("pay", "Deployment", "ledger", pods=[pod], events=[_probe_event(8080)])
    await _run(obs)
    assert "probe_recovered" not in obs.derived


def test_stuck_rollout_note_names_the_condition_and_the_old_replicaset() -> None:
    pod = _crashing_pod_with_ready_sidecar()
    deploy = WorkloadView.parse({"namespace": "pay", "kind": "Deployment", "name": "ledger", "replicas": {"desired": 2, "ready": 2, "updated": 1},
                                 "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                                 "message": 'ReplicaSet "ledger-7f6d5c4b3a" has timed out progressing.'}]})
    rs_new = WorkloadView.parse({"namespace": "pay", "kind": "ReplicaSet", "name": "ledger-7f6d5c4b3a", "replicas": {"desired": 1, "ready": 0},
                                 "owner": {"kind": "Deployment", "name": "ledger"}})
    rs_old = WorkloadView.parse({"namespace": "pay", "kind": "ReplicaSet", "name": "ledger-55c4d3b2a1", "replicas": {"desired": 2, "ready": 2},
                                 "owner": {"kind": "Deployment", "name": "ledger"}})
    obs = WorkloadObservation("pay", "Deployment", "ledger", pods=[pod], workload=deploy)
    _rollout_note(obs, Collected(workloads={"pay": [deploy, rs_new, rs_old]}), EvidenceLog())
    note = " ".join(obs.derived["rollout"])
    assert "ProgressDeadlineExceeded" in note and "ledger-55c4d3b2a1 2/2" in note and "ledger-7f6d5c4b3a 0" not in note


# -- a pod stuck Terminating on a node that is gone --------------------------------------------
async def test_stranded_pod_gets_a_force_delete_with_caution_and_its_local_volume_is_named() -> None:
    import importlib.util
    import sys
    from pathlib import Path

    from sleuth_agent.rca._report import fill
    from sleuth_agent.rca.engine.match import _variables

    spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
    assert spec and spec.loader
    fakes = importlib.util.module_from_spec(spec)
    sys.modules["agent_rca_fakes"] = fakes
    spec.loader.exec_module(fakes)
    pod = PodView.parse({
        "metadata": {"namespace": "q", "name": "broker-1", "deletionTimestamp": "2026-05-01T10:00:00Z",
                     "ownerReferences": [{"kind": "StatefulSet", "name": "broker"}]},
        "spec": {"nodeName": "rack2-n7", "containers": [{"name": "broker", "image": "r/b:3"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-broker-1"}}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "broker", "ready": False, "state": {"running": {}}}]},
    })
    tools = fakes.FakeTools({
        ("list_pvcs", "q"): {"pvcs": [{"name": "data-broker-1", "phase": "Bound", "storage_class": "fast", "capacity": "50Gi", "volume": "pv-9"}]},
        ("get_resource", "pv-9"): {"kind": "PersistentVolume", "spec": {"local": {"path": "/mnt/disks/1"}, "nodeAffinity": {"required": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["rack2-n7"]}]}]}}}},
    })
    fu, _ = fakes.follow(tools)
    ev = EventView.parse({"type": "Warning", "reason": "NodeNotReady", "message": "Node is not ready",
                          "involved_object": {"kind": "Pod", "name": "broker-1"}})
    obs = WorkloadObservation("q", "StatefulSet", "broker", pods=[pod], events=[ev])
    await fu.run(obs)
    m = match_all(obs.facts())[0]
    assert m.signature.family == "node_not_ready"
    v = _variables(obs, m)
    force = next(a for a in m.signature.actions if "--force" in a["command"])
    assert fill(force["command"], v) == "kubectl delete pod broker-1 -n q --grace-period=0 --force"
    text = fill(force["text"], v)
    assert "Caution" in text and "rack2-n7" in text and "data-broker-1" in text


async def test_a_namespace_question_states_a_stuck_rollout_too() -> None:
    """Not only "why is the rollout stuck?": any answer about a Deployment whose rollout timed out says so."""
    import importlib.util
    import sys
    from pathlib import Path

    from sleuth_agent.rca._cluster import analyse_cluster
    from sleuth_agent.rca._plan import parse_question
    from sleuth_agent.rca._report import build_result
    from sleuth_agent.settings import AgentSettings
    from sleuth_common.scope import Scope

    spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
    assert spec and spec.loader
    fakes = importlib.util.module_from_spec(spec)
    sys.modules["agent_rca_fakes"] = fakes
    spec.loader.exec_module(fakes)
    pod = {"namespace": "pay", "name": "ledger-7f6d5c4b3a-qqqqq", "phase": "Running",
           "owner": {"kind": "ReplicaSet", "name": "ledger-7f6d5c4b3a"},
           "containers": [{"name": "ledger", "image": "r/ledger:9", "ready": False, "restart_count": 12,
                           "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                           "last_termination": {"reason": "Error", "exit_code": 2}}]}
    workloads = [
        {"namespace": "pay", "kind": "Deployment", "name": "ledger", "replicas": {"desired": 2, "ready": 2, "updated": 1},
         "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                         "message": 'ReplicaSet "ledger-7f6d5c4b3a" has timed out progressing.'}]},
        {"namespace": "pay", "kind": "ReplicaSet", "name": "ledger-55c4d3b2a1", "replicas": {"desired": 2, "ready": 2},
         "owner": {"kind": "Deployment", "name": "ledger"}},
    ]
    tools = fakes.FakeTools({
        ("list_pods", "pay"): {"pods": [pod]}, ("list_workloads", "pay"): {"workloads": workloads},
        ("list_events", "pay"): {"events": []}, ("list_services", "pay"): {"services": []},
        ("get_pod", pod["name"]): pod, ("pod_logs", pod["name"]): {"log": "2031-01-01T00:00:00Z panic: bad config"},
    })
    log = EvidenceLog()
    out = await analyse_cluster(tools, Scope.of(namespaces=["pay"]), "c1", parse_question("what is broken in pay?"), AgentSettings(), log)
    result = build_result([out], log, scope_text="pay")
    assert result.root_cause is not None and result.root_cause.resource == "Deployment/pay/ledger"
    assert "ProgressDeadlineExceeded" in result.root_cause.summary and "ledger-55c4d3b2a1 2/2" in result.root_cause.summary
