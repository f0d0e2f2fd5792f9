"""Targets beyond the namespaces' workloads: nodes the question or an alert names, claims and
HorizontalPodAutoscalers that stand for the workloads behind them, and the note on a Deployment
whose rollout timed out."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from sleuth_agent.rca._collect import Collected, Toolbox
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._plan import QuestionTerms
from sleuth_agent.rca._records import EventView, PodView, items_of
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca.engine.cite import _cite, _pod_state, log_results
from sleuth_agent.rca.engine.match import _variables
from sleuth_agent.rca.engine.rank import Finding, rank_matches
from sleuth_common.scope import Scope

if TYPE_CHECKING:
    from sleuth_agent.rca._cluster import ClusterOutcome

__all__ = ["_claim_owners", "_hpa_targets", "_named_nodes", "_node_support", "_node_targets", "_rollout_note"]


async def _named_nodes(tools: Toolbox, log: EvidenceLog, terms: QuestionTerms, limit: float) -> list[str]:
    """Nodes the question names exactly (a word equal to a node's name)."""
    words = {w for w in terms.names if terms.names_an_object([w])}
    if not words:
        return []
    from sleuth_agent.rca._collect import _call

    r = await _call(tools, log, "list_nodes", {}, limit)
    if not r.ok:
        return []
    return [str(n.get("name")) for n in items_of(r.data, "nodes") if str(n.get("name", "")).lower() in words]


def _node_support(out: ClusterOutcome, got: Collected, namespaces: list[str], log: EvidenceLog) -> None:
    """A node the question names that is not ready is the root cause: the failing pods scheduled on
    it (a CNI or other DaemonSet agent that cannot start there) are its supporting evidence, and
    their own findings become consequences listed after it."""
    for f in out.findings:
        if f.obs.kind != "Node" or f.match is None or f.family != "node_not_ready":
            continue
        on_it = [p for ns in namespaces for p in got.pods.get(ns, []) if p.node == f.obs.name and not p.healthy]
        if on_it:
            text = "Failing pods on it: " + ", ".join(
                f"{p.name} ({p.workload[0]} {p.namespace}/{p.workload[1]}: {_pod_state(p)})" for p in on_it[:5]
            ) + "."
            f.obs.derive("node", text)
            f.variables = _variables(f.obs, f.match)
            for ns in dict.fromkeys(p.namespace for p in on_it):
                r = got.results.get(("list_pods", ns))
                if r is not None and r.ok:
                    f.evidence.append(
                        log.cite(r, f"pods on node {f.obs.name} in {ns}", [f"{p.name}: {_pod_state(p)}" for p in on_it if p.namespace == ns][:4])
                    )
        f.pinned = True
    out.findings.sort(key=lambda x: -x.score)


_MAX_CLAIM_PODS = 10
_CLAIM_WORDS = r"(?:pvc|claim|volume|persistentvolumeclaim)\b"


async def _claim_owners(
    tools: Toolbox,
    log: EvidenceLog,
    got: Collected,
    namespaces: list[str],
    words: list[str],
    terms: QuestionTerms,
    limit: float,
) -> dict[str, set[tuple[str, str]]]:
    """Words that name a PersistentVolumeClaim → the (namespace, workload) of the pods mounting it.

    A StatefulSet's claim is named ``<template>-<pod>``, so a claim ending in ``-<pod name>`` is that
    pod's; otherwise the namespace's claims are listed and, for a claim the question names, the pods
    (unhealthy first, a bounded number) are read to see which mount it."""
    out: dict[str, set[tuple[str, str]]] = {}
    text = terms.text.lower()
    wanted = [
        w
        for w in words
        if terms.names_an_object([w])
        or re.search(rf"(?<![-\w]){re.escape(w)}\s+{_CLAIM_WORDS}|{_CLAIM_WORDS}\s+{re.escape(w)}(?![-\w])", text)
    ]
    if not wanted:
        return out
    pods = {ns: got.pods.get(ns, []) for ns in namespaces}
    rest = []
    for w in wanted:
        owners = {(ns, p.workload[1]) for ns, ps in pods.items() for p in ps if w.endswith("-" + p.name)}
        if owners:
            out[w] = owners
        else:
            rest.append(w)
    if not rest or not tools.has_tool("list_pvcs"):
        return out
    from sleuth_agent.rca._collect import _call

    listed = await asyncio.gather(*(_call(tools, log, "list_pvcs", {"namespace": ns}, limit) for ns in namespaces))
    claims = {
        (ns, str(c.get("name")))
        for ns, r in zip(namespaces, listed, strict=True)
        if r.ok
        for c in items_of(r.data, "pvcs")
    }
    for w in rest:
        where = [ns for ns, name in claims if name == w]
        if not where:
            continue
        candidates = [p for ns in where for p in sorted(pods[ns], key=lambda p: (p.healthy, p.name))][:_MAX_CLAIM_PODS]
        read = await asyncio.gather(
            *(_call(tools, log, "get_pod", {"namespace": p.namespace, "name": p.name}, limit) for p in candidates)
        )
        owners = set()
        for p, r in zip(candidates, read, strict=True):
            if not (r.ok and isinstance(r.data, dict)):
                continue
            full = PodView.parse(r.data.get("pod", r.data))
            if any(t == "pvc" and src == w for _n, t, src in full.volumes):
                owners.add((p.namespace, p.workload[1]))
        if owners:
            out[w] = owners
    return out


async def _hpa_targets(
    tools: Toolbox, log: EvidenceLog, namespaces: list[str], words: list[str], limit: float
) -> dict[str, tuple[str, str]]:
    """Words that name a HorizontalPodAutoscaler → (namespace, name of its scale target)."""
    if not tools.has_tool("list_resources"):
        return {}
    from sleuth_agent.rca._collect import _call

    listed = await asyncio.gather(
        *(_call(tools, log, "list_resources", {"kind": "hpa", "namespace": ns}, limit) for ns in namespaces)
    )
    out: dict[str, tuple[str, str]] = {}
    for ns, r in zip(namespaces, listed, strict=True):
        if not r.ok:
            continue
        for hpa in items_of(r.data, "items"):
            target = str(hpa.get("target") or "")
            if hpa.get("name") in words and "/" in target:
                out[str(hpa["name"])] = (ns, target.partition("/")[2])
    return out


def _rollout_note(obs: WorkloadObservation, got: Collected, log: EvidenceLog) -> None:
    """A Deployment whose rollout timed out (Progressing=False ProgressDeadlineExceeded): say so,
    and how many pods the old ReplicaSets still serve, next to whatever makes the new pods fail."""
    w = obs.workload
    if w is None or w.kind != "Deployment":
        return
    cond = next((c for c in w.conditions if c[0] == "Progressing" and c[1] == "False"), None)
    if cond is None or cond[2] != "ProgressDeadlineExceeded":
        return
    sets = [r for r in got.workloads.get(obs.namespace, []) if r.kind == "ReplicaSet" and r.owner_name == w.name]
    new_rs = {p.owner_name for p in obs.unhealthy_pods if p.owner_kind == "ReplicaSet"}
    m = re.search(r'ReplicaSet "([^"]+)"', cond[3])
    if m:
        new_rs.add(m.group(1))
    old = [r for r in sets if r.name not in new_rs and (r.replicas or 0) > 0]
    text = f"The rollout of {obs.resource} is stuck: Progressing=False ProgressDeadlineExceeded ({cond[3]})."
    if old:
        serving = ", ".join(f"{r.name} {r.ready or 0}/{r.replicas}" for r in old)
        text += f" The old ReplicaSet still has its pods ({serving} ready), so the pods of the previous version keep serving."
    obs.derive("rollout", text)
    r = next(iter(log_results(log, "list_workloads", obs.namespace)), None)
    if r is not None:
        obs.cites.append((r, f"Deployment {w.name}: Progressing=False ProgressDeadlineExceeded", [text[:180]]))


async def _node_targets(
    tools: Toolbox, log: EvidenceLog, nodes: list[str], scope: Scope, out: ClusterOutcome, limit: float
) -> None:
    """An alert about a node: read the node (cluster-wide callers only)."""
    if not (scope.cluster_wide and tools.has_tool("list_nodes")):
        out.notes.append(
            f"The alert is about node {', '.join(nodes)}; nodes are readable only with cluster-wide access, "
            "which you do not have, so the node itself was not examined."
        )
        return
    from sleuth_agent.rca._collect import _call

    r = await _call(tools, log, "list_nodes", {}, limit)
    if not r.ok:
        return
    for n in items_of(r.data, "nodes"):
        name = str(n.get("name"))
        if name not in nodes:
            continue
        obs = WorkloadObservation("", "Node", name, named=True)
        ready = str(n.get("ready", "Unknown"))
        cond: dict[str, Any] = next((c for c in n.get("conditions") or [] if c.get("type") == "Ready"), {})
        text = f"Node {name} is {'ready' if ready == 'True' else 'not ready'}: Ready={ready} ({cond.get('reason', '')}: {cond.get('message', '')})."
        if ready != "True":
            obs.derive("node", text)
        taints = ", ".join(f"{t.get('key')}:{t.get('effect')}" for t in n.get("taints") or [])
        pressure = [
            c for c in n.get("conditions") or []
            if str(c.get("type", "")).endswith("Pressure") and str(c.get("status")) == "True"
        ]
        obs.cites.append((r, f"node {name}: Ready={ready}", [
            text[:160], *(f"{c.get('type')}=True: {c.get('message', '')}"[:160] for c in pressure), *([f"taints: {taints}"] if taints else []),
        ]))
        if pressure:
            await _node_pressure(tools, log, obs, name, pressure, limit)
        obs.variables.update({"node": name, "pod": "(pods on the node)"})
        matches = match_all(obs.facts())
        if matches:
            primary, others = rank_matches(matches)
            f = Finding(obs, primary, alternatives=others)
            f.variables = _variables(obs, f.match)
            f.evidence = _cite(log, obs, None, f)
            out.findings.append(f)
        else:
            out.healthy.append(obs)


_RECLAIM = re.compile(r"reclaim (\S+)|low on resource: (\S+?)\.?(?:\s|$)", re.IGNORECASE)


async def _node_pressure(
    tools: Toolbox, log: EvidenceLog, obs: WorkloadObservation, node: str, pressure: list[dict], limit: float
) -> None:
    """A node under DiskPressure / MemoryPressure / PIDPressure: the kubelet evicts pods to reclaim
    the resource; its events on the node say which (EvictionThresholdMet, Evicted)."""
    from sleuth_agent.rca._collect import _call

    kinds = ", ".join(str(c.get("type")) for c in pressure)
    r = await _call(tools, log, "list_events", {"namespace": "default", "involved_object_name": node}, limit)
    events = [EventView.parse(e) for e in items_of(r.data, "events")] if r.ok else []
    obs.events.extend(events)
    resource = next(
        (m.group(1) or m.group(2) for e in events for m in [_RECLAIM.search(e.message)] if m),
        {"DiskPressure": "ephemeral-storage", "MemoryPressure": "memory", "PIDPressure": "pids"}.get(str(pressure[0].get("type")), ""),
    )
    text = f"Node {node} reports {kinds} ({'; '.join(str(c.get('message') or c.get('reason') or '') for c in pressure)})"
    if resource:
        text += f": the kubelet evicts pods to reclaim {resource}"
    obs.derive("node_pressure", text + ".")
    obs.variables.update({"pressure": kinds, "reclaim": resource or "the resource under pressure"})
    telling = [e for e in events if e.reason in ("EvictionThresholdMet", "Evicted", "FreeDiskSpaceFailed", "ImageGCFailed")]
    if r.ok and telling:
        obs.cites.append((r, f"events of node {node}", [f"{e.reason}: {e.message}"[:160] for e in telling[:3]]))


async def _ingress_services(
    tools: Toolbox, log: EvidenceLog, namespaces: list[str], hosts: tuple[str, ...], limit: float
) -> set[tuple[str, str]]:
    """(namespace, Service) pairs the Ingresses route the question's host names to."""
    if not tools.has_tool("list_resources"):
        return set()
    from sleuth_agent.rca._collect import _call

    listed = await asyncio.gather(
        *(_call(tools, log, "list_resources", {"kind": "ingresses", "namespace": ns}, limit) for ns in namespaces)
    )
    out: set[tuple[str, str]] = set()
    for ns, r in zip(namespaces, listed, strict=True):
        if not r.ok:
            continue
        for ing in items_of(r.data, "items"):
            for route in ing.get("routes") or []:
                if isinstance(route, dict) and route.get("service") and str(route.get("host") or "").lower() in hosts:
                    out.add((ns, str(route["service"])))
    return out
