"""Citations: the evidence a finding rests on (the pod, its telling events, its logs, its
workload's conditions, the follow-ups' results, the rollout that changed it), each recorded in the
evidence log with the lines that matter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation, clip, error_lines
from sleuth_agent.rca._records import ContainerView, EventView, PodView
from sleuth_agent.rca.engine.onset import before_onset
from sleuth_agent.rca.followups.changes import explains

if TYPE_CHECKING:
    from sleuth_agent.rca._collect import Details
    from sleuth_agent.rca.engine.rank import Finding

__all__ = ["_cite", "_cite_change", "_pod_state", "_telling", "log_results"]


def _pod_state(p: PodView) -> str:
    if p.reason:
        return p.reason
    if p.deleting:
        return "Terminating"
    for c in p.all_containers:
        if c.state == "waiting" and c.reason and c.reason != "PodInitializing":
            return f"Init:{c.reason}" if c.init else c.reason
        if c.state == "terminated" and c.reason and not c.init:
            return c.reason
    for ctype, status, reason, _msg in p.conditions:
        if ctype == "PodScheduled" and status != "True" and reason:
            return f"{p.phase} ({reason})"
    if p.phase == "Running" and not all(c.ready for c in p.containers):
        return "Running, not ready"
    return p.phase or "unknown"



def _cite(log: EvidenceLog, obs: WorkloadObservation, det: Details | None, finding: Finding) -> list[str]:
    ids: list[str] = []
    pod, c = obs.representative()
    if det is not None and det.pod is not None and det.pod.ok and pod is not None:
        ids.append(log.cite(det.pod, f"pod {pod.name}: {_pod_state(pod)}", _pod_highlights(pod, c, finding)))
    ids.extend(_cite_events(log, obs, det, pod))
    if det is not None and c is not None:
        ids.extend(_cite_logs(log, obs, det, pod, c))
    ids.extend(_cite_workload(log, obs, finding))
    for result, summary, hl in obs.cites:
        ids.append(log.cite(result, summary, hl))
    return list(dict.fromkeys(ids))


def _pod_highlights(pod: PodView, c: ContainerView | None, finding: Finding) -> list[str]:
    hl = [_pod_state(pod)]
    if pod.message:
        hl.append(pod.message[:160])
    if c is not None:
        hl.extend(_container_highlights(c, finding))
    for ctype, status, _r, msg in pod.conditions:
        if ctype == "PodScheduled" and status != "True" and msg:
            hl.append(msg[:160])
    if pod.node_selector:
        hl.append("nodeSelector " + ",".join(f"{k}={v}" for k, v in pod.node_selector))
    return hl


def _container_highlights(c: ContainerView, finding: Finding) -> list[str]:
    hl = []
    if c.last_reason:
        hl.append(f"last terminated: {c.last_reason}")
    if c.last_exit_code is not None:
        hl.append(f"exit code {c.last_exit_code}")
    if c.restart_count:
        hl.append(f"{c.restart_count} restarts")
    if c.memory_limit:
        hl.append(f"limits.memory={c.memory_limit}")
    if c.cpu_limit and finding.family == "cpu_throttled":
        hl.append(f"limits.cpu={c.cpu_limit}")
    if c.state == "waiting" and c.message:
        hl.append(clip(c.message, 180))
    if c.last_message:
        hl.append(clip(c.last_message, 180))
    return hl


def _cite_events(log: EvidenceLog, obs: WorkloadObservation, det: Details | None, pod: PodView | None) -> list[str]:
    """The telling events about the pod (or the workload), from its own read or else the namespace's."""
    names = {p.name for p in obs.pods} | {obs.name}
    warn = [e for e in obs.events if _telling(e) and (e.object_name in names or e.object_kind in ("ReplicaSet", "Job"))]
    if det is not None and det.events is not None and det.events.ok:
        mine = [e for e in warn if pod is None or e.object_name in (pod.name, obs.name)] or warn
        mine.sort(key=lambda e: not _probe_kill(e))  # the kubelet saying why it restarts the container first
        summary = f"{len(mine)} warning event(s) for {pod.name if pod else obs.name}"
        return [log.cite(det.events, summary, [f"{e.reason}: {clip(e.message, 180)}" for e in mine[:3]])]
    if warn:
        ns_events = [r for r in log_results(log, "list_events", obs.namespace)]
        if ns_events:
            return [
                log.cite(ns_events[0], f"{len(warn)} warning event(s) about {obs.name}", [f"{e.reason}: {clip(e.message, 180)}" for e in warn[:3]])
            ]
    return []


def _cite_logs(
    log: EvidenceLog, obs: WorkloadObservation, det: Details, pod: PodView | None, c: ContainerView
) -> list[str]:
    """The container's previous and current logs, with their error lines."""
    ids = []
    for result, label in ((det.previous_log, "previous"), (det.current_log, "current")):
        if result is not None and result.ok:
            text = obs.logs.get((pod.name if pod else "", c.name, label == "previous"), "")
            lines = error_lines(text, limit=3)
            if not lines and label == "previous" and obs.variables.get("stop_line"):
                lines = [obs.variables["stop_line"]]  # how the last run ended (a SIGTERM while starting)
            if lines or label == "previous":
                ids.append(log.cite(result, f"{label} log of {c.name} ({len(text.splitlines())} lines)", lines))
    return ids


def _cite_workload(log: EvidenceLog, obs: WorkloadObservation, finding: Finding) -> list[str]:
    """The workload's failing conditions, for the families they decide (or when it has no pods)."""
    if obs.workload is not None and (finding.family in ("rollout_stuck", "quota_exceeded", "job_failed") or not obs.pods):
        r = next(iter(log_results(log, "list_workloads", obs.namespace)), None)
        if r is not None:
            conds = [f"{t}={s} {rr}: {m}"[:160] for t, s, rr, m in obs.workload.conditions if s != "True" or t in ("ReplicaFailure", "Failed")]
            if obs.workload.paused:
                conds.insert(0, "paused: true")
            return [log.cite(r, f"{obs.kind} {obs.name}: {obs.workload.ready or 0}/{obs.workload.replicas} ready", conds)]
    return []


def _cite_change(log: EvidenceLog, finding: Finding) -> None:
    """The newest rollout's template diff, when a changed field can explain the family."""
    ch = finding.obs.rollout
    if ch is None or finding.match is None:
        return
    relevant = [c for c in ch.changes if explains(finding.family, c)]
    if not relevant:
        return
    eid = log.cite(
        ch.result,
        f"{ch.kind} {ch.current} (revision {ch.current_revision}) against {ch.previous} (revision {ch.previous_revision})",
        [c.text() for c in relevant[:4]],
    )
    finding.evidence.append(eid)
    data = ch.result.data if isinstance(ch.result.data, dict) else {}
    if ch.kind == "Deployment template":
        finding.changed = (
            "Waiting in the paused Deployment: its template changes "
            + "; ".join(c.text() for c in relevant[:3])
            + f" against its newest ReplicaSet {ch.previous} (revision {ch.previous_revision}); the pause keeps it from rolling out [{eid}]."
        )
        return
    when = before_onset((data.get("metadata") or {}).get("creationTimestamp"), finding.obs)
    finding.changed = (
        f"What changed: revision {ch.current_revision} ({ch.kind} {ch.current}"
        + (f", {when}" if when else "")
        + ") changed "
        + "; ".join(c.text() for c in relevant[:3])
        + f" from revision {ch.previous_revision} [{eid}]."
    )


def _probe_kill(e: EventView) -> bool:
    """The kubelet's ``Killing: Container X failed liveness probe, will be restarted`` (type Normal)."""
    return e.reason == "Killing" and "probe" in e.message.lower()


def _telling(e: EventView) -> bool:
    """Events that say what went wrong: warnings, and the Normal event of a probe-triggered restart."""
    return e.type == "Warning" or _probe_kill(e)


def log_results(log: EvidenceLog, tool: str, namespace: str) -> list:
    return [r for r in log.results if r.tool == tool and r.ok and (r.args or {}).get("namespace") == namespace]
