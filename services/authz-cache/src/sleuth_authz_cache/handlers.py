"""Bus edges: ``sleuth.authz.scope`` / ``.authenticate`` / ``.resolve`` / ``.inventory`` (queue
group ``authz``) and ``.invalidate``."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from faststream.nats import NatsRouter

from sleuth_authz_cache.service import AuthzService, ScopeOutcome
from sleuth_common.messages import (
    AuthenticateReply,
    AuthenticateRequest,
    InvalidateRequest,
    ResolveReply,
    ResolveRequest,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.messages.authz import InventoryReply, InventoryRequest
from sleuth_common.subjects import Subjects

log = logging.getLogger(__name__)

__all__ = ["audit_event", "build_router"]


def audit_event(user: str, result: ScopeOutcome) -> dict[str, Any]:
    """``sleuth.audit.scope_resolved``: counts, never namespace names, so any ops subscriber may read it."""
    reply = result.reply
    return {
        "kind": "audit.scope_resolved",
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "user": user,
        "clusters": {
            name: {"namespaces": len(cs.namespaces), "cluster_wide": cs.cluster_wide}
            for name, cs in sorted(reply.clusters.items())
        },
        "cached": reply.cached,
        "errors": sorted(reply.errors),
        "duration_ms": result.duration_ms,
    }


def build_router(service: AuthzService, subjects: Subjects, *, max_workers: int = 1) -> NatsRouter:
    router = NatsRouter()
    audit = router.publisher(subjects.audit("scope_resolved"), include_in_schema=False)
    workers = max(1, max_workers)

    @router.subscriber(subjects.authz_scope, queue=subjects.authz_queue, max_workers=workers)
    async def scope(req: ScopeRequest) -> ScopeReply:
        result = await service.scope(req.user, req.groups)
        try:
            await audit.publish(audit_event(req.user, result))
        except Exception:  # process edge: an audit outage must not stop answers; logged
            log.exception("could not publish the scope_resolved audit event")
        return result.reply

    @router.subscriber(subjects.authz_authenticate, queue=subjects.authz_queue, max_workers=workers)
    async def authenticate(req: AuthenticateRequest) -> AuthenticateReply:
        return await service.authenticate(req.token)

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
