"""``sleuth.authz.resolve``: which namespace owns an IP (or holds an object name) on a cluster;
and ``sleuth.authz.inventory``: every namespace's object names (see :mod:`.inventory`).

The index is built from the cluster with authz-cache's own read identity: pods'
``status.podIP(s)`` (not host-network pods: their IP is the node's), services'
``spec.clusterIP(s)``, endpoints' addresses. An IP claimed by two namespaces is left out
(unresolvable, so the filter fails closed on it). The same lists give the name inventory. One index
per cluster is kept for ``authz.resolve_cache_ttl`` seconds in memory, and concurrent misses share
one build; a failed build is never kept.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sleuth_authz_cache.backend import BackendError
from sleuth_authz_cache.inventory import add_names, capped_reply, pod_names
from sleuth_common.messages import ResolveReply, ResolveRequest
from sleuth_common.messages.authz import InventoryReply, InventoryRequest

log = logging.getLogger(__name__)

__all__ = ["IpIndex", "Resolver", "build_index"]


class ListsObjects(Protocol):
    async def list_objects(self, cluster: str, resource: str) -> list[dict[str, Any]]: ...


@dataclass
class IpIndex:
    ips: dict[str, str] = field(default_factory=dict)
    names: dict[str, set[str]] = field(default_factory=dict)  # pod/service name -> namespaces
    inventory: dict[str, set[str]] = field(default_factory=dict)  # namespace -> object names
    built: float = 0.0
    inventory_reply: InventoryReply | None = None  # the capped reply, made once per index


def _add(index: IpIndex, conflicts: set[str], ip: Any, ns: str) -> None:
    if not isinstance(ip, str) or not ip or ip == "None":
        return
    current = index.ips.get(ip)
    if current is None and ip not in conflicts:
        index.ips[ip] = ns
    elif current is not None and current != ns:
        del index.ips[ip]
        conflicts.add(ip)


def build_index(pods: Iterable[dict[str, Any]], services: Iterable[dict[str, Any]]) -> IpIndex:
    """IP → namespace from Pod objects (never a hostNetwork pod: its IP is its node's) and from
    Services' cluster IPs (allocated from the service range, never a node's). Endpoints are not
    read: anyone who may write a selector-less Service's Endpoints could otherwise claim any IP
    (a node's) for their namespace, and with it everything that IP names."""
    index = IpIndex(built=time.monotonic())
    conflicts: set[str] = set()

    def meta(obj: dict[str, Any]) -> tuple[str, str]:
        m = obj.get("metadata") or {}
        return str(m.get("namespace") or ""), str(m.get("name") or "")

    for pod in pods:
        ns, name = meta(pod)
        if not ns:
            continue
        index.names.setdefault(name, set()).add(ns)
        add_names(index.inventory, ns, pod_names(pod))
        if (pod.get("spec") or {}).get("hostNetwork"):
            continue
        status = pod.get("status") or {}
        _add(index, conflicts, status.get("podIP"), ns)
        for entry in status.get("podIPs") or []:
            if isinstance(entry, dict):
                _add(index, conflicts, entry.get("ip"), ns)
    for svc in services:
        ns, name = meta(svc)
        if not ns:
            continue
        index.names.setdefault(name, set()).add(ns)
        add_names(index.inventory, ns, (name,))
        spec = svc.get("spec") or {}
        _add(index, conflicts, spec.get("clusterIP"), ns)
        for ip in spec.get("clusterIPs") or []:
            _add(index, conflicts, ip, ns)
    return index


class Resolver:
    def __init__(self, backend: Any, *, ttl: float, inventory_max_bytes: int = 900_000) -> None:
        self._backend = backend
        self._ttl = ttl
        self._inventory_max_bytes = inventory_max_bytes
        self._indexes: dict[str, IpIndex] = {}
        self._building: dict[str, asyncio.Task[IpIndex]] = {}

    async def _index(self, cluster: str) -> tuple[IpIndex, bool]:
        cached = self._indexes.get(cluster)
        if cached is not None and time.monotonic() - cached.built < self._ttl:
            return cached, True
        task = self._building.get(cluster)
        if task is None:
            task = asyncio.create_task(self._build(cluster), name=f"authz-ip-index-{cluster}")
            self._building[cluster] = task
            task.add_done_callback(functools.partial(self._built, cluster))
        index = await asyncio.shield(task)
        return index, False

    def _built(self, cluster: str, task: asyncio.Task[IpIndex]) -> None:
        if self._building.get(cluster) is task:
            del self._building[cluster]

    async def _build(self, cluster: str) -> IpIndex:
        lister = getattr(self._backend, "list_objects", None)
        if lister is None:
            raise BackendError("this authz backend cannot resolve IPs")
        pods, services = await asyncio.gather(lister(cluster, "pods"), lister(cluster, "services"))
        index = build_index(pods, services)
        if self._ttl > 0:
            self._indexes[cluster] = index
        return index

    async def resolve(self, req: ResolveRequest, clusters: Sequence[str]) -> ResolveReply:
        if req.cluster not in clusters:
            return ResolveReply(cluster=req.cluster, error="cluster not configured")
        try:
            index, cached = await self._index(req.cluster)
        except BackendError as e:
            log.warning("IP index for %s failed: %s", req.cluster, e, extra={"cluster": req.cluster})
            return ResolveReply(cluster=req.cluster, error=str(e))
        ips = {ip: index.ips[ip] for ip in req.ips if ip in index.ips}
        names = {n: tuple(sorted(index.names[n])) for n in req.names if n in index.names}
        return ResolveReply(cluster=req.cluster, ips=ips, names=names, cached=cached)

    async def inventory(self, req: InventoryRequest, clusters: Sequence[str]) -> InventoryReply:
        if req.cluster not in clusters:
            return InventoryReply(cluster=req.cluster, error="cluster not configured")
        try:
            index, cached = await self._index(req.cluster)
        except BackendError as e:
            log.warning("name inventory for %s failed: %s", req.cluster, e, extra={"cluster": req.cluster})
            return InventoryReply(cluster=req.cluster, error=str(e))
        if index.inventory_reply is None:
            index.inventory_reply = capped_reply(req.cluster, index.inventory, self._inventory_max_bytes)
            if index.inventory_reply.truncated:
                log.warning("name inventory for %s capped at %d bytes: least distinctive names left out",
                            req.cluster, self._inventory_max_bytes, extra={"cluster": req.cluster})
        return index.inventory_reply.model_copy(update={"cached": cached})

    async def aclose(self) -> None:
        for task in list(self._building.values()):
            task.cancel()
        await asyncio.gather(*self._building.values(), return_exceptions=True)
