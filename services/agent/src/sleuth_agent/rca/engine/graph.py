"""The causal object graph of one investigation (DESIGN §3): the objects that were read, and the
edges between them, built from what the tools returned — never from guesses.

Edges (``Rel``) point from the object that acts to the object it acts on:

- ``owns``       Deployment → ReplicaSet → Pod, CronJob → Job → Pod, StatefulSet/DaemonSet → Pod
- ``runs-on``    Pod → Node
- ``mounts``     Pod → PersistentVolumeClaim / ConfigMap / Secret (volumes)
- ``refs``       Pod → ConfigMap / Secret (env, envFrom)
- ``selects``    Service / NetworkPolicy / PodDisruptionBudget → Pod (label selectors)
- ``routes-to``  Ingress → Service
- ``calls``      a workload → the Service (or pod) its logs or config name
- ``limits``     ResourceQuota / LimitRange → Namespace
- ``targets``    HorizontalPodAutoscaler → its scale target

Symptoms attach to nodes through the findings; each family (``rca/families``) says how its symptom
propagates along these edges to the object where the fix belongs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sleuth_common.k8s import LabelSelector, SelectorError, as_label_selector

__all__ = ["Graph", "Ref", "Rel"]

CLUSTER_SCOPED = frozenset({"Node", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding", "Namespace"})


@dataclass(frozen=True, order=True)
class Ref:
    """One object: ``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        if not self.namespace or self.kind in CLUSTER_SCOPED:
            return f"{self.kind}/{self.name}"
        return f"{self.kind}/{self.namespace}/{self.name}"

    @classmethod
    def of(cls, kind: str, namespace: str, name: str) -> Ref:
        return cls(kind, "" if kind in CLUSTER_SCOPED else namespace, name)

    @classmethod
    def parse(cls, text: str) -> Ref:
        parts = text.split("/")
        if len(parts) == 3:
            return cls(parts[0], parts[1], parts[2])
        if len(parts) == 2:
            return cls(parts[0], "", parts[1])
        raise ValueError(f"not a Kind/namespace/name reference: {text!r}")


class Rel(StrEnum):
    OWNS = "owns"
    RUNS_ON = "runs-on"
    MOUNTS = "mounts"
    REFS = "refs"
    SELECTS = "selects"
    ROUTES_TO = "routes-to"
    CALLS = "calls"
    LIMITS = "limits"
    TARGETS = "targets"


@dataclass
class Graph:
    """Objects with their attributes (``exists`` is False for an object something refers to that
    the API server says is not there) and typed edges between them."""

    nodes: dict[Ref, dict[str, Any]] = field(default_factory=dict)
    edges: set[tuple[Ref, Rel, Ref]] = field(default_factory=set)

    def add(self, ref: Ref, **attrs: Any) -> Ref:
        node = self.nodes.setdefault(ref, {})
        node.update({k: v for k, v in attrs.items() if v is not None})
        return ref

    def link(self, src: Ref, rel: Rel, dst: Ref) -> None:
        self.add(src)
        self.add(dst)
        if src != dst:
            self.edges.add((src, rel, dst))

    def attrs(self, ref: Ref) -> dict[str, Any]:
        return self.nodes.get(ref, {})

    def out(self, ref: Ref, rel: Rel | None = None, kind: str | None = None) -> list[Ref]:
        return sorted(d for s, r, d in self.edges if s == ref and (rel is None or r == rel) and (kind is None or d.kind == kind))

    def into(self, ref: Ref, rel: Rel | None = None, kind: str | None = None) -> list[Ref]:
        return sorted(s for s, r, d in self.edges if d == ref and (rel is None or r == rel) and (kind is None or s.kind == kind))

    def owner(self, ref: Ref) -> Ref | None:
        owners = self.into(ref, Rel.OWNS)
        return owners[0] if owners else None

    def owner_chain(self, ref: Ref) -> list[Ref]:
        """``ref`` and its owners, innermost first (Pod, ReplicaSet, Deployment)."""
        chain = [ref]
        while (up := self.owner(chain[-1])) is not None and up not in chain:
            chain.append(up)
        return chain

    def top_owner(self, ref: Ref) -> Ref:
        return self.owner_chain(ref)[-1]

    def pods_of(self, ref: Ref) -> list[Ref]:
        """The pods under ``ref`` along ``owns`` edges (``ref`` itself when it is a pod)."""
        if ref.kind == "Pod":
            return [ref]
        out: list[Ref] = []
        for child in self.out(ref, Rel.OWNS):
            out.extend(self.pods_of(child))
        return out

    def workloads_of(self, pods: Iterable[Ref]) -> list[Ref]:
        return sorted({self.top_owner(p) for p in pods})

    def find(self, kind: str, namespace: str = "") -> Iterator[Ref]:
        for ref in self.nodes:
            if ref.kind == kind and (not namespace or ref.namespace == namespace):
                yield ref


def selector_of(raw: Any) -> LabelSelector | None:
    """A label selector from kubectl's string form, a ``matchLabels``/``matchExpressions`` mapping
    or a plain label mapping (a Service's ``selector``); ``None`` (selects nothing) when there is
    none or it does not parse. kube-mcp writes an empty selector as ``*`` (selects everything)."""
    if raw is None or raw == "":
        return None
    if raw == "*":
        return LabelSelector.parse({})
    try:
        return as_label_selector(raw)
    except SelectorError:
        return None
