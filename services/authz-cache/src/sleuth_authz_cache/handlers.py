"""Bus edges: ``sleuth.authz.scope`` / ``.authenticate`` / ``.resolve`` / ``.inventory`` (queue
group ``authz``) and ``.invalidate``."""

from __future__ import annotations

import logging

from faststream.nats import NatsRouter
from prometheus_client import Counter

from sleuth_authz_cache.service import AuthzService, ScopeOutcome
from sleuth_common.audit import AuditLog
from sleuth_common.bus import error_replies
from sleuth_common.messages import (
    AuthenticateReply,
    AuthenticateRequest,
    InvalidateRequest,
    ResolveReply,
    ResolveRequest,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.messages.audit import ClusterCount, ScopeResolved, TokenReviewed
from sleuth_common.messages.authz import InventoryReply, InventoryRequest
from sleuth_common.subjects import Subjects

log = logging.getLogger(__name__)

__all__ = ["audit_event", "build_router", "token_event"]


def audit_event(user: str, groups: tuple[str, ...], result: ScopeOutcome) -> ScopeResolved:
    """``audit.scope_resolved``: counts per cluster, never namespace names, so an auditor may read it."""
    reply = result.reply
    clusters = tuple(ClusterCount(name=n, namespaces=len(cs.namespaces), cluster_wide=cs.cluster_wide)
                     for n, cs in sorted(reply.clusters.items()))
    clusters += tuple(ClusterCount(name=n, error=True) for n in sorted(reply.errors) if n not in reply.clusters)
    return ScopeResolved(
        user=user, groups=groups, entry="bus", cached=reply.cached, duration_ms=result.duration_ms,
        decision="error" if reply.errors else "allowed", reason="cluster_unavailable" if reply.errors else "",
        clusters=clusters,
        counts={"clusters": len(reply.clusters), "namespaces": sum(len(c.namespaces) for c in reply.clusters.values()),
                "errors": len(reply.errors)},
    )


def token_event(reply: AuthenticateReply) -> TokenReviewed:
    """``audit.token_reviewed``: who a token turned out to be, or why it was refused; never the token."""
    if reply.authenticated:
        return TokenReviewed(user=reply.user, groups=reply.groups, entry="bus", decision="allowed",
                             counts={"groups": len(reply.groups)})
    return TokenReviewed(entry="bus", decision="error" if reply.unavailable else "refused",
                         reason="unavailable" if reply.unavailable else "invalid_token")


def build_router(service: AuthzService, subjects: Subjects, *, max_workers: int = 1,
                 audit: AuditLog | None = None, crashes: Counter | None = None) -> NatsRouter:
    # Every failure is answered: a malformed request with a permanent error reply, a crash with a
    # temporary one (logged with a reference, counted in ``crashes``).
    router = NatsRouter(middlewares=[error_replies(crashes, "authz-cache")])
    workers = max(1, max_workers)

    @router.subscriber(subjects.authz_scope, queue=subjects.authz_queue, max_workers=workers)
    async def scope(req: ScopeRequest) -> ScopeReply:
        result = await service.scope(req.user, req.groups)
        if audit is not None:
            await audit.emit(audit_event(req.user, req.groups, result))
        return result.reply

    @router.subscriber(subjects.authz_authenticate, queue=subjects.authz_queue, max_workers=workers)
    async def authenticate(req: AuthenticateRequest) -> AuthenticateReply:
        reply = await service.authenticate(req.token)
        if audit is not None:
            await audit.emit(token_event(reply))
        return reply

    @router.subscriber(subjects.authz_resolve, queue=subjects.authz_queue, max_workers=workers)
    async def resolve(req: ResolveRequest) -> ResolveReply:
        return await service.resolve(req)

    @router.subscriber(subjects.authz_inventory, queue=subjects.authz_queue, max_workers=workers)
    async def inventory(req: InventoryRequest) -> InventoryReply:
        return await service.inventory(req)

    # Not a queue group: every replica drops its own in-flight state and the shared cache.
    @router.subscriber(subjects.authz_invalidate)
    async def invalidate(req: InvalidateRequest) -> None:
        dropped = await service.invalidate(req.user)
        log.info("invalidated %d cached scope(s) of %s", dropped, req.user)

    return router
