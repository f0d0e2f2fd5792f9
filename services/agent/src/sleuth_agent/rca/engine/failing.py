"""Is a workload failing now? Pods not running and ready, a ready pod still in trouble (restarts
with repeated kubelet warnings), a CronJob skipping runs, a controller that cannot create pods, a
stuck or failed rollout or Job. A pod that recovered a while ago is history, not a failure."""

from __future__ import annotations

import re

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._recency import recovered
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca.engine.cite import _telling

__all__ = ["_failing", "_troubled"]

_TROUBLE_EVENTS = ("BackOff", "Killing", "Unhealthy", "OOMKilling", "Evicted", "NodeNotReady")


def _troubled(pod: PodView, obs: WorkloadObservation, now: float | None = None) -> bool:
    """A ready pod that is still in trouble: it restarts, and the kubelet keeps saying why (events
    live about an hour, so a repeated warning is recent). A pod whose last restart and last warning
    are well before ``now`` and that has been running and ready since has recovered: that is
    history, noted on the observation, not a current failure."""
    note = recovered(pod, obs.events, now)
    if note is not None:
        obs.derive("history", note)
        minutes = re.search(r"about (\d+) min before", note)
        if minutes:
            obs.derive("history_minutes", minutes.group(1))
        return False
    warn = [e for e in obs.events if e.object_name == pod.name and e.reason in _TROUBLE_EVENTS and _telling(e)]
    if pod.restarts and any(e.count >= 3 for e in warn):
        return True
    return any(e.count >= 3 and e.reason in ("Unhealthy", "BackOff") for e in warn) and pod.restarts > 0


def _failing(obs: WorkloadObservation, now: float | None = None) -> bool:
    w = obs.workload
    if obs.pods and not obs.healthy:
        return True
    if any([_troubled(p, obs, now) for p in obs.pods]):
        return True
    if w is not None and w.kind == "CronJob":
        # A CronJob has no pods of its own: it is in trouble when the controller says it skips or
        # misses runs, or when it is suspended (its runs are Jobs, observed one by one).
        skipping = {"JobAlreadyActive", "TooManyMissedTimes", "MissSchedule", "FailedNeedsStart", "FailedCreate"}
        return any(e.reason in skipping and e.object_name == w.name for e in obs.events) or (
            w.extra.get("suspend") is True and obs.named
        )
    if any(e.reason == "FailedCreate" and e.type == "Warning" and e.object_kind in ("ReplicaSet", "StatefulSet", "DaemonSet", "Job") for e in obs.events):
        return True  # the controller cannot create the pods (quota, LimitRange, admission webhook)
    if w is not None:
        conds = " ".join(f"{t}={s} {r}" for t, s, r, _m in w.conditions)
        if w.paused and (w.updated or 0) < (w.replicas or 0):
            return True
        if "ProgressDeadlineExceeded" in conds or "ReplicaFailure=True" in conds:
            return True
        if w.kind == "Job" and ("Failed=True" in conds or w.failed):
            return True
        if not obs.pods and (w.replicas or 0) > 0 and w.kind in ("Deployment", "StatefulSet", "DaemonSet"):
            # No pod seen: none exists, unless the pod list stopped at its limit before reaching them.
            return not obs.pods_unread
    return False
