"""The signature catalog covers DESIGN's families, and its confidence gates behave: a dispositive
signal or two sources give high, a contradiction holds a signature at low, and the order of the
catalog puts specific causes before generic ones (alternatives become candidates)."""

from __future__ import annotations

from sleuth_agent.rca import load_catalog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import EventView, PodView
from sleuth_agent.rca._signatures import match_all

DESIGN_FAMILIES = {
    "oom_killed", "crash_loop_app_error", "missing_config", "image_pull", "unschedulable_resources",
    "unschedulable_constraints", "pvc_pending", "volume_mount_failed", "probe_failure", "quota_exceeded",
    "node_not_ready", "evicted", "dns_failure", "network_policy_blocked", "service_no_endpoints",
    "rollout_stuck", "job_failed", "rbac_denied", "dependency_unreachable", "disk_full", "cpu_throttled",
}


def _obs(state: dict, last: dict | None = None, restarts: int = 0, logs: str = "", events=(), kind="Deployment"):
    raw = {
        "namespace": "team-a",
        "name": "api-7d9f8c6b5d-x2k4p",
        "phase": "Running",
        "owner": {"kind": "ReplicaSet", "name": "api-7d9f8c6b5d"},
        "containers": [
            {"name": "api", "image": "reg/api:1", "ready": False, "restart_count": restarts, "state": state,
             "last_termination": last, "resources": {"limits": {"memory": "256Mi"}, "requests": {}}}
        ],
    }
    p = PodView.parse(raw)
    obs = WorkloadObservation("team-a", kind, "api", pods=[p], events=[EventView.parse(e) for e in events])
    if logs:
        obs.logs[(p.name, "api", True)] = logs
    return obs


def _ev(reason: str, message: str) -> dict:
    return {"namespace": "team-a", "type": "Warning", "reason": reason, "message": message,
            "involved_object": {"kind": "Pod", "name": "api-7d9f8c6b5d-x2k4p"}}


def test_every_design_family_has_a_signature_with_summary_and_actions() -> None:
    cat = load_catalog()
    assert DESIGN_FAMILIES <= {s.family for s in cat}
    assert all(s.summary and s.actions for s in cat)


def test_specific_cause_beats_crash_loop_and_crash_loop_stays_a_candidate() -> None:
    obs = _obs({"waiting": {"reason": "CrashLoopBackOff"}}, {"reason": "Error", "exit_code": 1}, 6,
               "2026-11-30T08:00:00Z Error: connect ECONNREFUSED 10.96.87.14:5432")
    families = [m.signature.family for m in match_all(obs.facts())]
    assert families[0] == "dependency_unreachable"
    assert "crash_loop_app_error" in families


def test_disk_full_and_dns_are_named_from_logs() -> None:
    disk = _obs({"waiting": {"reason": "CrashLoopBackOff"}}, {"reason": "Error", "exit_code": 1}, 4,
                "2026-11-30T08:00:00Z FATAL: could not write to file: No space left on device")
    assert match_all(disk.facts())[0].signature.family == "disk_full"
    dns = _obs({"waiting": {"reason": "CrashLoopBackOff"}}, {"reason": "Error", "exit_code": 1}, 4,
               "2026-11-30T08:00:00Z dial tcp: lookup redis-mastr on 10.96.0.10:53: no such host")
    m = match_all(dns.facts())[0]
    assert m.signature.family == "dns_failure" and m.confidence == "high"


def test_probe_failure_contradicted_by_oom_is_held_low() -> None:
    obs = _obs({"running": {}}, {"reason": "OOMKilled", "exit_code": 137}, 2,
               events=[_ev("Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500")])
    by_family = {m.signature.family: m for m in match_all(obs.facts())}
    assert by_family["oom_killed"].confidence == "high"
    assert by_family["probe_failure"].confidence == "low"


def test_quiet_workload_ignores_history() -> None:
    obs = _obs({"running": {}}, {"reason": "OOMKilled", "exit_code": 137}, 1)
    obs.quiet = True
    assert match_all(obs.facts()) == []
    obs.logs[(obs.pods[0].name, "api", False)] = (
        '2026-11-30T08:00:00Z Error: pods is forbidden: User "system:serviceaccount:team-a:api" '
        'cannot list resource "pods" in API group ""'
    )
    assert match_all(obs.facts())[0].signature.family == "rbac_denied"
