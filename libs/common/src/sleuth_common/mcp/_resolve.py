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
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from sleuth_common.messages.authz import ResolveReply, ResolveRequest
from sleuth_common.subjects import Subjects

__all__ = ["IpResolver", "bus_resolver", "current_resolver", "use_resolver"]

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
            msg = await nc.request(subject, req.to_bytes(), timeout=timeout)
            reply = ResolveReply.model_validate_json(msg.data)
        except Exception as exc:  # the bus edge: unresolvable, never an exception into a tool call
            log.warning("IP resolution on %s failed: %s", cluster, type(exc).__name__)
            return {}
        return dict(reply.ips)

    return resolve
