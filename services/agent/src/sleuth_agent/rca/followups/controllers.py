"""Controller semantics read from the objects, not guessed (DESIGN §3): a CronJob whose
``concurrencyPolicy: Forbid`` meets a run that never ends skips every new run; a suspended CronJob
starts none; a Job stopped by ``activeDeadlineSeconds`` fails with DeadlineExceeded whatever its
pods did; a StatefulSet with ``podManagementPolicy: OrderedReady`` waits for each ordinal before the
next, and an update ``partition`` keeps lower ordinals on the old revision. Returns typed facts;
``apply`` folds them into the observation for the matcher and the wording."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import WorkloadView
from sleuth_common.k8s import parse_time

__all__ = ["ControllerFact", "apply", "controller_facts"]


@dataclass(frozen=True)
class ControllerFact:
    kind: str  # cron_blocked | cron_suspended | job_deadline | ordered_ready | partition
    detail: str
    variables: tuple[tuple[str, str], ...] = ()


def _job(workloads: Iterable[WorkloadView], name: str) -> WorkloadView | None:
    return next((w for w in workloads if w.kind == "Job" and w.name == name), None)


def controller_facts(obs: WorkloadObservation, workloads: list[WorkloadView]) -> list[ControllerFact]:
    w = obs.workload
    if w is None:
        return []
    x, out = w.extra, []
    if w.kind == "CronJob":
        active = [str(a) for a in x.get("active_jobs") or []]
        if x.get("suspend") is True:
            out.append(ControllerFact("cron_suspended", f"CronJob {w.name} has suspend: true, so it starts no Job"))
        if x.get("concurrency_policy") == "Forbid" and active:
            job = _job(workloads, active[0])
            started = parse_time(job.extra.get("start_time") if job else None)
            # The controller says so (JobAlreadyActive: "Not starting job because prior execution is
            # running"); lastScheduleTime is not advanced by skipped runs, so it cannot tell.
            skipped = [e for e in obs.events if e.reason == "JobAlreadyActive" and e.object_name == w.name]
            if skipped:
                since = f" since {started:%Y-%m-%d %H:%M} UTC" if started is not None else ""
                count = sum(e.count for e in skipped)
                out.append(ControllerFact(
                    "cron_blocked",
                    f"its concurrencyPolicy is Forbid and its run {active[0]} has been active{since}, so the controller "
                    f"skipped {count} scheduled run(s) (JobAlreadyActive: \"{skipped[0].message[:160]}\")",
                    (("active_job", active[0]), ("active_since", f"{started:%Y-%m-%d %H:%M} UTC" if started else "unknown")),
                ))
        if x.get("starting_deadline_seconds") is not None:
            out.append(ControllerFact("cron_deadline", f"startingDeadlineSeconds is {x['starting_deadline_seconds']}",
                                      (("starting_deadline", str(x["starting_deadline_seconds"])),)))
    elif w.kind == "Job":
        conds = " ".join(f"{t}={s} {r}" for t, s, r, _m in w.conditions)
        reasons = {e.reason for e in obs.events}
        if x.get("active_deadline_seconds") is not None and ("DeadlineExceeded" in conds or "DeadlineExceeded" in reasons):
            secs = int(x["active_deadline_seconds"])
            span = f"{secs // 3600} h" if secs % 3600 == 0 else f"{secs // 60} min" if secs % 60 == 0 else f"{secs} s"
            out.append(ControllerFact(
                "job_deadline",
                f"Job {w.name} ran past its activeDeadlineSeconds ({secs} s = {span}); Kubernetes stopped its pods and marked it "
                "failed (DeadlineExceeded), whatever the pods were doing",
                (("active_deadline", str(secs)), ("active_deadline_span", span)),
            ))
    elif w.kind == "StatefulSet":
        bad = sorted((p for p in obs.pods if not p.healthy), key=lambda p: _ordinal(p.name))
        if bad and (x.get("pod_management_policy") or "OrderedReady") == "OrderedReady" and (w.ready or 0) < (w.replicas or 0):
            out.append(ControllerFact(
                "ordered_ready",
                f"podManagementPolicy is OrderedReady, so the StatefulSet goes on to the next ordinal only when {bad[0].name} "
                "is Running and Ready: the ordinals after it wait",
            ))
        if x.get("partition"):
            out.append(ControllerFact(
                "partition",
                f"its updateStrategy has partition {x['partition']}: only ordinals {x['partition']} and above get the new revision",
            ))
    return out


def _ordinal(pod: str) -> int:
    m = re.search(r"-(\d+)$", pod)
    return int(m.group(1)) if m else 0


def apply(obs: WorkloadObservation, facts: list[ControllerFact]) -> None:
    for f in facts:
        obs.variables.update(dict(f.variables))
        if f.kind in ("ordered_ready", "partition"):
            obs.derive("rollout", f"{obs.kind} {obs.name}: {f.detail}.")
        else:
            obs.derive(f.kind, f.detail)
