"""Quota: the namespace's ResourceQuotas and LimitRanges, the LimitRange bound a rejection names,
and a memory limit that a LimitRange's default set at admission."""

from __future__ import annotations

import re
from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca.followups._context import FollowUpContext

__all__ = ["injected_limits", "run"]

_LIMIT_RANGE = re.compile(r"(maximum|minimum) (\S+) usage per (Container|Pod) is (\S+?),? but (limit|request) is (\S+?)[\],.]*(?:\s|$)", re.IGNORECASE)


async def run(ctx: FollowUpContext, obs: WorkloadObservation) -> None:
    r = await ctx.read("list_quotas", {"namespace": obs.namespace})
    if not r.ok or not isinstance(r.data, dict):
        return
    hl = []
    for q in r.data.get("resource_quotas") or []:
        hard, used = q.get("hard") or {}, q.get("used") or {}
        parts = [f"{k} {used.get(k, '0')}/{v}" for k, v in sorted(hard.items())]
        full = q.get("at_limit") or []
        text = f"ResourceQuota {q.get('name')} (used/hard): {', '.join(parts)}"
        if full:
            text += f"; at its limit: {', '.join(full)}"
        obs.derive("quota", text + ".")
        hl.append(text[:160])
    for lr in r.data.get("limit_ranges") or []:
        parts = []
        for item in lr.get("limits") or []:
            bounds = [
                f"{word} {', '.join(f'{k}={v}' for k, v in sorted((item.get(key) or {}).items()))}"
                for key, word in (("max", "max"), ("min", "min"), ("default", "default limit"), ("default_request", "default request"))
                if item.get(key)
            ]
            if bounds:
                parts.append(f"{item.get('type')}: {'; '.join(bounds)}")
        if parts:
            text = f"LimitRange {lr.get('name')}: " + " | ".join(parts)
            obs.derive("quota", text + ".")
            hl.append(text[:200])
    if hl:
        obs.cites.append((r, f"resource quotas and limit ranges in {obs.namespace}", hl))
    messages = " ".join(obs.facts().workload_condition + obs.facts().event_message)
    m = _LIMIT_RANGE.search(messages)
    if m:
        bound, resource, per, allowed, which, asked = m.groups()
        obs.variables.update({"lr_bound": bound.lower(), "lr_resource": resource, "lr_per": per, "lr_allowed": allowed, "lr_which": which, "lr_value": asked})
        owners = [
            str(lr.get("name")) for lr in r.data.get("limit_ranges") or []
            if any(item.get("type") == per and resource in (item.get(bound.lower()) or {}) for item in lr.get("limits") or [])
        ]
        if len(owners) == 1:
            obs.variables["lr_name"] = owners[0]
    # A past termination of a pod that runs again now is history: the new pods are never created.
    for p in obs.pods:
        for c in p.containers:
            if p.healthy and c.last_reason:
                limit = f" at its {c.memory_limit} memory limit" if c.memory_limit and c.last_reason == "OOMKilled" else ""
                obs.derive(
                    "quota",
                    f"Pod {p.name} (ReplicaSet {p.owner_name}) was {c.last_reason}{limit} earlier and is running again: "
                    "that is history (likely why the resources were changed), not what blocks the new pods.",
                )
                break


async def injected_limits(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView, container: Any) -> None:
    """The LimitRanger admission plugin records the limits it set on the pod
    (``kubernetes.io/limit-ranger``): then a LimitRange's default is where the limit came from."""
    note = dict(pod.annotations).get("kubernetes.io/limit-ranger", "")
    if not note or "memory limit" not in note or container.name not in note:
        return
    obs.variables["limit_source"] = "LimitRange"
    r = await ctx.read("list_quotas", {"namespace": obs.namespace})
    if r.ok and isinstance(r.data, dict):
        owners = [
            str(lr.get("name")) for lr in r.data.get("limit_ranges") or []
            if any("memory" in (item.get("default") or {}) for item in lr.get("limits") or [])
        ]
        if len(owners) == 1:
            obs.variables["limit_range"] = owners[0]
            obs.derive("limit_source", f"LimitRange {owners[0]} set this memory limit as its default ({note}); the pod spec sets none.")
            obs.cites.append((r, f"LimitRange {owners[0]} in {obs.namespace}", [f"default memory limit: {container.memory_limit}", note[:160]]))
