"""Nodes: the node of a pod stuck on NodeNotReady, and the node that evicted a workload's pods
(their status only with cluster-wide access; otherwise the answer says it is outside it)."""

from __future__ import annotations

from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation, clip
from sleuth_agent.rca._records import EventView, PodView, items_of
from sleuth_agent.rca.followups._context import FollowUpContext

__all__ = ["eviction_node", "node"]


async def node(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView | None) -> None:
    node = pod.node if pod else ""
    if not node:
        return
    if not (ctx.cluster_wide and ctx.tools.has_tool("list_nodes")):
        obs.derive(
            "node_access",
            f"Node {node}'s own status is outside your access (nodes are readable only with cluster-wide "
            "access), so this rests on the pod's events.",
        )
        return
    r = await ctx.read("list_nodes", {})
    if not r.ok:
        return
    for n in items_of(r.data, "nodes"):
        if n.get("name") != node:
            continue
        ready = str(n.get("ready", "Unknown"))
        if ready != "True":
            cond: dict[str, Any] = next((c for c in n.get("conditions") or [] if c.get("type") == "Ready"), {})
            text = f"Node {node} is not ready: Ready={ready} ({cond.get('reason', '')}: {cond.get('message', '')})."
            obs.derive("node", text)
            obs.cites.append((r, f"node {node}: Ready={ready}", [text[:160]]))


async def eviction_node(ctx: FollowUpContext, obs: WorkloadObservation) -> None:
    """Evicted pods: the node that evicted them, its pressure conditions, taints and the
    kubelet's EvictionThresholdMet events (cluster-wide callers); otherwise name the node."""
    counts: dict[str, int] = {}
    for p in obs.pods:
        if p.reason == "Evicted" and p.node:
            counts[p.node] = counts.get(p.node, 0) + 1
    if not counts:
        return
    node = max(counts, key=lambda n: (counts[n], n))
    evicted = sum(counts.values())
    on = (
        f"The evicted pod ran on node {node}" if evicted == 1
        else f"All {evicted} evicted pods ran on node {node}" if counts[node] == evicted
        else f"{counts[node]} of the {evicted} evicted pods ran on node {node}"
    )
    obs.variables["node"] = node
    if not (ctx.cluster_wide and ctx.tools.has_tool("list_nodes")):
        obs.derive("eviction_node", f"{on}; the node's own status is outside your access (nodes are readable only with cluster-wide access).")
        return
    r = await ctx.read("list_nodes", {})
    if not r.ok:
        obs.derive("eviction_node", f"{on}.")
        return
    rec = next((n for n in items_of(r.data, "nodes") if n.get("name") == node), None)
    if rec is None:
        obs.derive("eviction_node", f"{on}, which no longer exists.")
        return
    pressure = [
        f"{c.get('type')}=True" + (f" ({c.get('message')})" if c.get("message") else "")
        for c in rec.get("conditions") or []
        if str(c.get("type", "")).endswith("Pressure") and c.get("status") == "True"
    ]
    taints = [f"{t.get('key')}:{t.get('effect')}" for t in rec.get("taints") or []]
    alloc = (rec.get("allocatable") or {}).get("memory")
    text = f"{on}: " + ("; ".join(pressure) if pressure else "no pressure condition is set on it now")
    if taints:
        text += f"; taints {', '.join(taints)}"
    if alloc:
        text += f"; allocatable memory {alloc}"
    hl = [clip(x, 160) for x in [*pressure, *(["taints: " + ", ".join(taints)] if taints else [])]]
    obs.cites.append((r, f"node {node}: " + (", ".join(x.split(" (")[0] for x in pressure) or "no pressure now"), hl or [f"node {node}"]))
    ev = await ctx.read("list_events", {"namespace": "default", "involved_object_name": node})
    if ev.ok:
        kubelet = [
            e for e in (EventView.parse(x) for x in items_of(ev.data, "events"))
            if e.object_name == node and (e.reason in ("EvictionThresholdMet", "NodeHasInsufficientMemory", "NodeHasDiskPressure") or "reclaim" in e.message.lower())
        ]
        if kubelet:
            e = kubelet[0]
            text += f"; the kubelet reported {e.reason}: \"{clip(e.message, 160)}\"" + (f" ({e.count} times)" if e.count > 1 else "")
            obs.cites.append((ev, f"events of node {node}", [f"{x.reason}: {clip(x.message, 160)}" for x in kubelet[:3]]))
    obs.derive("eviction_node", text + ".")
