"""Containers without a memory request and limit, without a memory limit, or without any CPU
request. (A missing request next to a limit is fine: the API sets the request to the limit. A
missing CPU limit is fine too: CPU limits throttle, they do not protect the node.)"""

from __future__ import annotations

from collections.abc import Iterator

from sleuth_agent.report._model import Inventory, K8sObject, containers
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report._thresholds import thresholds
from sleuth_agent.report.rules._helpers import quantity


@rule("resources_missing", title="Container without requests or limits", severity="medium",
      kinds=("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    start = thresholds("resources_missing")
    for c in containers(obj):
        res = c.get("resources") or {}
        name = str(c.get("name") or "")
        mem_req, mem_lim = quantity(res, "requests", "memory"), quantity(res, "limits", "memory")
        cpu_req, cpu_lim = quantity(res, "requests", "cpu"), quantity(res, "limits", "cpu")
        missing: list[str] = []
        args: list[str] = []
        guessed = False
        if mem_lim is None:
            missing.append("memory limit" if mem_req is not None else "memory request and limit")
            value = (res.get("requests") or {}).get("memory") or start["memory"]
            args.append(f"--limits=memory={value}")
            if mem_req is None:
                args.insert(0, f"--requests=memory={value}")
                guessed = True
        if cpu_req is None and cpu_lim is None:
            missing.append("CPU request")
            args.insert(0, f"--requests=cpu={start['cpu_request']}")
            guessed = True
        if not missing:
            continue
        first = "starting values: check real use with kubectl top pod" if guessed else ""
        if mem_req is None and mem_lim is None:
            why = ("Without a memory request and limit the scheduler does not count the container's "
                   "memory, so it can starve its neighbours and is among the first to be evicted.")
        elif mem_lim is None:
            why = ("Without a memory limit the container can take all of its node's memory, and the "
                   "node's out-of-memory killer then picks among every pod there.")
        else:
            why = ("Without a CPU request the scheduler counts the container as using no CPU, so it "
                   "lands on busy nodes and gets the least CPU under contention.")
        merged = _merge(args)
        yield Hit(
            why=why,
            fix=f"kubectl set resources {obj.resource}{obj.ns_flag} -c {name} {' '.join(merged)}"
                + (f"   # {first}" if first else ""),
            observed={"container": name, "missing": missing, "requests": dict(res.get("requests") or {}),
                      "limits": dict(res.get("limits") or {})},
        )


def _merge(args: list[str]) -> list[str]:
    """``--requests=a --requests=b`` → ``--requests=a,b`` (kubectl takes one of each)."""
    out: dict[str, list[str]] = {}
    for a in args:
        flag, _, value = a.partition("=")
        out.setdefault(flag, []).append(value)
    return [f"{flag}={','.join(values)}" for flag, values in sorted(out.items(), key=lambda kv: kv[0] != "--requests")]
