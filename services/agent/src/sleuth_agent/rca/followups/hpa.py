"""Ready pods that are slow: the HorizontalPodAutoscaler is at its maximum with CPU at the limit."""

from __future__ import annotations

from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation, clip
from sleuth_agent.rca._records import items_of
from sleuth_agent.rca.followups._context import FollowUpContext
from sleuth_common.k8s import cpu_millicores, quantity_or_none

__all__ = ["run"]


def _millicores(q: str) -> float | None:
    value = quantity_or_none(q)
    return float(cpu_millicores(value)) if value is not None else None


async def run(ctx: FollowUpContext, obs: WorkloadObservation, container: Any) -> None:
    """Pods Running and Ready but slow: the HPA that scales the workload is at maxReplicas and
    its CPU utilisation (of the request) puts each pod at its CPU limit, so the pods are
    throttled and cannot be scaled out further."""
    if not ctx.tools.has_tool("list_resources"):
        return
    r = await ctx.read("list_resources", {"kind": "horizontalpodautoscalers", "namespace": obs.namespace})
    if not r.ok:
        return
    hpa = next((h for h in items_of(r.data, "items") if str(h.get("target")) == f"{obs.kind}/{obs.name}"), None)
    if hpa is None:
        return
    name = str(hpa.get("name"))
    full = await ctx.read("get_resource", {"kind": "HorizontalPodAutoscaler", "name": name, "namespace": obs.namespace})
    spec = (full.data.get("spec") or {}) if full.ok and isinstance(full.data, dict) else {}
    status = (full.data.get("status") or {}) if full.ok and isinstance(full.data, dict) else {}
    top = hpa.get("max_replicas") or spec.get("maxReplicas")
    current = hpa.get("current_replicas") or status.get("currentReplicas")
    conds = hpa.get("conditions") or status.get("conditions") or []
    limited = next((c for c in conds if c.get("type") == "ScalingLimited" and c.get("status") == "True"), None)
    util = None
    for m in status.get("currentMetrics") or []:
        res = m.get("resource") or {}
        if res.get("name") == "cpu":
            util = (res.get("current") or {}).get("averageUtilization")
    target = next((m.get("target") for m in hpa.get("metrics") or [] if m.get("resource") == "cpu"), None)
    at_max = top is not None and current is not None and int(current) >= int(top)
    if not (at_max or limited) or util is None:
        return
    req, lim = _millicores(container.cpu_request), _millicores(container.cpu_limit)
    if req is None:
        return
    used = req * float(util) / 100
    text = (
        f"HorizontalPodAutoscaler {name} is at maxReplicas ({current}/{top})"
        + (f", {limited.get('reason')}" if limited else "")
        + f", with CPU at {util}% of the {container.cpu_request} request"
        + (f" (target {target}%)" if target else "")
        + f", about {used:.0f}m per pod"
    )
    if lim is not None and used >= 0.9 * lim:
        text += (
            f": that is the container's {container.cpu_limit} CPU limit, so {container.name} is CPU-throttled and "
            "the HPA cannot add pods: requests queue and get slow while every pod stays Ready."
        )
        obs.derive("cpu_saturated", text)
    else:
        obs.derive("hpa_maxed", text + ".")
    slow = [e for e in obs.events if e.type == "Warning" and e.reason == "Unhealthy"]
    if slow:
        obs.derive("cpu_saturated" if "cpu_saturated" in obs.derived else "hpa_maxed",
                   f"{sum(e.count for e in slow)} readiness/liveness probe failure(s) recorded: \"{clip(slow[0].message, 140)}\".")
    obs.variables["cpu_saturation"] = " ".join(obs.derived.get("cpu_saturated", [text]))
    obs.cites.append((full if full.ok else r, f"HorizontalPodAutoscaler {name}: {current}/{top} replicas, CPU {util}%",
                      [f"maxReplicas {top}", f"cpu {util}% of request {container.cpu_request}", *([f"{limited.get('reason')}: {clip(str(limited.get('message', '')), 120)}"] if limited else [])]))
