"""Blast radius: which other workloads in the asker's scope depend on the root-cause object —
pods on the same node, other users of the claim, ConfigMap or Secret, workloads selected by the
same NetworkPolicy, callers of the Service, everything a namespace's quota or LimitRange governs.
The graph holds only objects the scope filter let through, so nothing here names anything the
asker cannot read."""

from __future__ import annotations

from dataclasses import dataclass

from sleuth_agent.rca.engine.graph import Graph, Ref, Rel

__all__ = ["Blast", "blast_radius"]

_HOW = {
    "Node": "run on the same node",
    "PersistentVolumeClaim": "mount the same claim",
    "ConfigMap": "use the same ConfigMap",
    "Secret": "use the same Secret",
    "NetworkPolicy": "are selected by the same NetworkPolicy",
    "Service": "call the same Service",
    "ResourceQuota": "share the namespace quota",
    "LimitRange": "get the same LimitRange defaults",
}


@dataclass(frozen=True)
class Blast:
    workloads: tuple[Ref, ...]
    how: str


def blast_radius(graph: Graph, root: Ref, affected: Ref, limit: int = 8) -> Blast | None:
    pods: list[Ref] = []
    if root.kind == "Node":
        pods = graph.into(root, Rel.RUNS_ON, "Pod")
    elif root.kind in ("PersistentVolumeClaim", "ConfigMap", "Secret"):
        pods = [*graph.into(root, Rel.MOUNTS, "Pod"), *graph.into(root, Rel.REFS, "Pod")]
    elif root.kind == "NetworkPolicy":
        pods = graph.out(root, Rel.SELECTS, "Pod")
    elif root.kind == "Service":
        callers = [s for s in graph.into(root, Rel.CALLS)]
        pods = [p for c in callers for p in graph.pods_of(c)]
    elif root.kind in ("ResourceQuota", "LimitRange"):
        pods = [p for p in graph.find("Pod", root.namespace)]
    if not pods:
        return None
    mine = {affected, *graph.owner_chain(affected)}
    others = [w for w in graph.workloads_of(pods) if w not in mine and w != root]
    if not others:
        return None
    return Blast(tuple(others[:limit]), _HOW.get(root.kind, "depend on it"))
