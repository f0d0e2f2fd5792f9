"""Calibrated confidence (DESIGN §3): ``high`` needs two independent sources or one dispositive
signal. A dispositive signal is one the cluster itself records as the cause (the kubelet's
OOMKilled, a scheduler or admission refusal, a pull error, a missing ConfigMap at container
creation, a controller's failed condition, an object read that shows the fault): the families
built on those keep the catalog's confidence. The others (a crash, a refused connection, a DNS
error, a probe, throttling…) are inferred from what the application says; one source alone (a log
line of pods that are otherwise fine) holds them at ``medium``."""

from __future__ import annotations

from sleuth_agent.rca._observe import Facts
from sleuth_agent.rca._signatures import Match

__all__ = ["DISPOSITIVE", "calibrate", "sources"]

DISPOSITIVE = frozenset({
    "oom_killed", "image_pull", "missing_config", "unschedulable_resources", "unschedulable_constraints",
    "pvc_pending", "volume_mount_failed", "quota_exceeded", "node_not_ready", "evicted", "rollout_stuck",
    "job_failed", "service_no_endpoints",
})
_QUIET_STATES = {"", "Running", "Completed", "PodInitializing", "ContainerCreating"}


def sources(facts: Facts) -> set[str]:
    """The independent kinds of evidence present: the container/pod state the kubelet reports,
    events, the application's own log, the controller's conditions, follow-up object reads, alerts."""
    out: set[str] = set()
    states = [*facts.waiting_reason, *facts.termination_reason, *facts.last_termination_reason, *facts.pod_reason]
    if any(s not in _QUIET_STATES for s in states) or facts.max_restarts > 0:
        out.add("state")
    if facts.event_reason:
        out.add("events")
    if facts.log or facts.exception:
        out.add("logs")
    if any(not c.split(" ", 1)[0].endswith("=True") or "Failure" in c or "Failed" in c for c in facts.workload_condition):
        out.add("controller")
    if any(v for k, v in facts.derived.items() if k not in ("history", "history_minutes", "cpu_limit", "rollout")):
        out.add("objects")
    if facts.alert:
        out.add("alert")
    return out


def calibrate(matches: list[Match], facts: Facts) -> list[Match]:
    """The matches with ``high`` held at ``medium`` where it rests on one source alone."""
    if not any(m.confidence == "high" and m.signature.family not in DISPOSITIVE for m in matches):
        return matches
    if len(sources(facts)) >= 2:
        return matches
    return [
        Match(m.signature, "medium", m.variables) if m.confidence == "high" and m.signature.family not in DISPOSITIVE else m
        for m in matches
    ]
