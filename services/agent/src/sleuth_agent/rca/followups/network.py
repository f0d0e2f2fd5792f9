"""Network follow-up: classify the failing connections a workload reports (``engine.network``)
and resolve each target to the in-cluster object it names — a Service by DNS name or ClusterIP,
a pod by IP — among the objects the asker could read. Returns typed ``NetTarget`` facts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sleuth_agent.rca._records import PodView
from sleuth_agent.rca.engine.graph import selector_of
from sleuth_agent.rca.engine.network import NetFailure, NetKind, classify_all, resolve

__all__ = ["NetTarget", "network_targets"]


@dataclass(frozen=True)
class NetTarget:
    failure: NetFailure
    kind: str  # Service | Pod
    namespace: str
    name: str
    ready_endpoints: int | None = None  # a Service's ready endpoints, when known
    backends: tuple[tuple[str, str], ...] = ()  # (kind, name) of the workloads a Service selects
    backends_ready: bool | None = None  # every selected pod ready (None: no pod selected)

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def network_targets(
    lines: Iterable[str],
    namespace: str,
    services: Mapping[str, list[Mapping[str, Any]]],
    pods: Mapping[str, list[PodView]],
) -> list[NetTarget]:
    """One ``NetTarget`` per distinct (failure kind, target) the lines report, newest last."""
    ips = {p.ip: (ns, p.name) for ns, items in pods.items() for p in items if p.ip}
    seen: dict[tuple[NetKind, str], NetTarget] = {}
    for failure in classify_all(lines):
        if failure.kind == NetKind.DNS:
            continue
        hit = resolve(failure, namespace, services, ips)
        if hit is None:
            continue
        kind, ns, name = hit
        if kind == "Service":
            svc = next((s for s in services.get(ns, []) if str(s.get("name")) == name), {})
            eps = svc.get("endpoints") if isinstance(svc.get("endpoints"), Mapping) else None
            sel = selector_of(svc.get("selector"))
            chosen = [p for p in pods.get(ns, []) if sel is not None and sel.matches(dict(p.labels))]
            target = NetTarget(
                failure, kind, ns, name,
                ready_endpoints=len(eps.get("ready") or []) if eps is not None else None,
                backends=tuple(sorted({p.workload for p in chosen})),
                backends_ready=all(p.healthy for p in chosen) if chosen else None,
            )
        else:
            pod = next((p for p in pods.get(ns, []) if p.name == name), None)
            target = NetTarget(
                failure, kind, ns, name,
                backends=(pod.workload,) if pod else (),
                backends_ready=pod.healthy if pod else None,
            )
        seen[(failure.kind, target.ref)] = target
    return list(seen.values())
