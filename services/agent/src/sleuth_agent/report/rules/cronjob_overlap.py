"""CronJobs with ``concurrencyPolicy: Allow`` (the default) whose runs last longer than the time
between two runs: a new run starts while the last one still works, and they pile up."""

from __future__ import annotations

from collections.abc import Iterator

from sleuth_agent.report._model import Inventory, K8sObject, kubectl_patch
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report._thresholds import thresholds
from sleuth_agent.report.rules._cron import shortest_interval
from sleuth_common.k8s import parse_time


def runtimes(obj: K8sObject, inv: Inventory) -> dict[str, float]:
    """Seconds each Job of the CronJob ran (still running: until the inventory's "now")."""
    out = {}
    for job in inv.of("Job", obj.namespace):
        if job.owner != ("CronJob", obj.name):
            continue
        info = job.record.get("job") or {}
        start = parse_time(info.get("start_time"))
        end = parse_time(info.get("completion_time")) or (inv.now if info.get("active") else None)
        if start is not None and end is not None and end >= start:
            out[job.name] = (end - start).total_seconds()
    return out


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 60:.0f}min" if seconds >= 60 else f"{seconds:.0f}s"


@rule("cronjob_overlap", title="CronJob runs overlap", severity="medium", kinds=("CronJob",), reads=("Job",))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    spec = obj.data.get("spec") or {}
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy != "Allow" or spec.get("suspend") is True:
        return
    interval = shortest_interval(str(spec.get("schedule") or ""))
    runs = runtimes(obj, inv)
    active = len((obj.data.get("status") or {}).get("active") or [])
    longest = max(runs.values(), default=0.0)
    share = float(thresholds("cronjob_overlap")["runtime_share"])
    if longest <= interval * share and active <= 1:
        return
    slowest = max(runs, key=lambda k: runs[k]) if runs else ""
    seen = f"run {slowest} took {_duration(longest)}" if longest > interval * share else f"{active} runs are active at once"
    yield Hit(
        why=f"Runs may start every {_duration(interval)} and {seen}, and with concurrencyPolicy Allow "
            "the next run starts anyway, so runs pile up and compete for the same work.",
        fix=kubectl_patch(obj, {"spec": {"concurrencyPolicy": "Forbid"}}) + "   # or Replace, to drop the old run",
        observed={"schedule": spec.get("schedule"), "concurrency_policy": policy, "interval_seconds": interval,
                  "longest_run_seconds": round(longest), "longest_run": slowest, "active_runs": active},
    )
