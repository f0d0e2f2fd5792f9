"""IP → namespace resolution for the result filter (``sleuth.authz.resolve``, DESIGN §1-2).

A resolver is ``async (cluster, ips) -> {ip: namespace}``; an IP left out is unresolvable and
the filter fails closed on it. ``bus_resolver`` asks authz-cache over NATS. ``use_resolver``
sets the resolver for every ``ScopedMcpClient`` created without one in the current context
(the agent sets it once per job, whichever investigator builds the tools).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from sleuth_common.bus import BusError, request
from sleuth_common.messages.authz import InventoryReply, InventoryRequest, ResolveReply, ResolveRequest
from sleuth_common.subjects import Subjects

__all__ = [
    "InventoryProvider",
    "IpResolver",
    "bus_inventory",
    "bus_resolver",
    "current_inventory",
    "current_resolver",
    "use_inventory",
    "use_resolver",
]

log = logging.getLogger(__name__)

IpResolver = Callable[[str, Sequence[str]], Awaitable[Mapping[str, str]]]

_RESOLVER: contextvars.ContextVar[IpResolver | None] = contextvars.ContextVar("sleuth_ip_resolver", default=None)


def current_resolver() -> IpResolver | None:
    return _RESOLVER.get()


@contextlib.contextmanager
def use_resolver(resolver: IpResolver | None) -> Iterator[None]:
    token = _RESOLVER.set(resolver)
    try:
        yield
    finally:
        _RESOLVER.reset(token)


def bus_resolver(nc: Any, prefix: str = "sleuth", *, timeout: float = 2.0) -> IpResolver:
    """A resolver asking authz-cache (``<prefix>.authz.resolve``) through the nats-py client
    ``nc``. Any failure resolves nothing (the filter then withholds: fail closed)."""
    subject = Subjects(prefix).authz_resolve

    async def resolve(cluster: str, ips: Sequence[str]) -> Mapping[str, str]:
        if not ips:
            return {}
        req = ResolveRequest(cluster=cluster, ips=tuple(sorted(set(ips))))
        try:
            reply = await request(nc, subject, req, ResolveReply, wait=timeout, service="authz-cache")
        except BusError as exc:  # unresolvable, never an exception into a tool call
            log.warning("IP resolution on %s failed: %s", cluster, exc.reason)
            return {}
        return dict(reply.ips)

    return resolve


# -- the names index (``sleuth.authz.inventory``) ------------------------------------------------
INVENTORY_REUSE = 10.0
"""Seconds one process reuses a cluster's inventory (authz-cache caches it too)."""

InventoryProvider = Callable[[str], Awaitable[Mapping[str, Sequence[str]]]]
"""``async (cluster) -> {namespace: [object names]}``: what the filter's foreign-name scan
indexes (DESIGN §2 step 3). An empty map means no index: foreign *namespace* names are still
caught in kept text, foreign object names are not."""

_INVENTORY: contextvars.ContextVar[InventoryProvider | None] = contextvars.ContextVar(
    "sleuth_inventory", default=None
)


def current_inventory() -> InventoryProvider | None:
    return _INVENTORY.get()


@contextlib.contextmanager
def use_inventory(provider: InventoryProvider | None) -> Iterator[None]:
    token = _INVENTORY.set(provider)
    try:
        yield
    finally:
        _INVENTORY.reset(token)


def bus_inventory(nc: Any, prefix: str = "sleuth", *, timeout: float = 2.0) -> InventoryProvider:
    """An inventory provider asking authz-cache (``<prefix>.authz.inventory``), which caches it;
    any failure is an empty inventory (logged)."""
    subject = Subjects(prefix).authz_inventory
    recent: dict[str, tuple[float, Mapping[str, Sequence[str]]]] = {}

    async def inventory(cluster: str) -> Mapping[str, Sequence[str]]:
        hit = recent.get(cluster)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]  # the same object: indexes built from it are reused
        req = InventoryRequest(cluster=cluster)
        try:
            reply = await request(nc, subject, req, InventoryReply, wait=timeout, service="authz-cache")
        except BusError as exc:  # no index, never an exception into a tool call
            log.warning("names inventory of %s unavailable: %s", cluster, exc.reason)
            return {}
        if reply.error:
            log.warning("names inventory of %s unavailable: %s", cluster, reply.error)
            return {}
        names = dict(reply.names)
        recent[cluster] = (time.monotonic() + INVENTORY_REUSE, names)
        return names

    return inventory
