"""Wiring: settings → Redis, backend, service, router, FastStream app."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from faststream import FastStream
from faststream.nats import NatsBroker
from redis.asyncio import Redis

from sleuth_authz_cache.backend import AuthzBackend
from sleuth_authz_cache.cache import ScopeCache
from sleuth_authz_cache.handlers import build_router
from sleuth_authz_cache.kubernetes import KubernetesBackend
from sleuth_authz_cache.metrics import Metrics
from sleuth_authz_cache.service import AuthzService
from sleuth_authz_cache.settings import Settings
from sleuth_common.audit import AuditLog
from sleuth_common.connect import nats_broker, redis_client
from sleuth_common.health import Dependencies, until_up
from sleuth_common.identity import signer_from_settings
from sleuth_common.subjects import Subjects

__all__ = ["AuthzCache", "build", "create_app"]


@dataclass(frozen=True)
class AuthzCache:
    """Everything one authz-cache instance is made of (the app, and what the health server reads)."""

    settings: Settings
    app: FastStream
    broker: NatsBroker
    service: AuthzService
    metrics: Metrics
    redis: Redis
    deps: Dependencies = field(repr=False)
    audit: AuditLog | None = field(default=None, repr=False)

    async def start(self) -> None:
        """Connect to NATS, waiting as long as it takes, then answer on the bus. Redis is watched,
        not waited for: until it answers, scopes are resolved without the cache."""
        self.deps.watch_redis()
        self.deps.nc = await until_up(self.broker.connect, self.deps.nats_retry)
        if self.audit is not None:
            await self.audit.ensure_stream(self.deps.nc, self.settings.jetstream.replicas)
        await self.app.start()
        await self.deps.nc.flush()  # started means the server has our subscriptions and routes requests to us
        self.deps.set_up = True

    async def aclose(self) -> None:
        """Cancel in-flight resolutions, close backend and Redis connections (idempotent)."""
        if self.audit is not None:
            await self.audit.aclose()
        await self.deps.aclose()
        await self.service.aclose()
        await self.redis.aclose()


AUTHZ_ISSUER = "sleuth-authz"


def build(settings: Settings, *, backend: AuthzBackend | None = None) -> AuthzCache:
    """Build without connecting anything. ``backend`` replaces the Kubernetes backend (tests)."""
    metrics = Metrics()
    redis = redis_client(settings.redis)
    cache = ScopeCache(
        redis,
        prefix=settings.prefix,
        ttl=settings.authz.cache_ttl,
        token_ttl=settings.authz_cache.token_cache_ttl,
        metrics=metrics,
        secret=settings.authz_cache.cache_secret(),
    )
    if backend is None:
        backend = KubernetesBackend(settings.clusters, timeout=settings.authz.backend_timeout)
    service = AuthzService(
        [c.name for c in settings.clusters],
        backend,
        cache,
        metrics,
        review_concurrency=settings.authz.review_concurrency,
        resolve_ttl=settings.authz.resolve_cache_ttl,
        scope_candidates=settings.authz.scope_candidates,
        rolebinding_index_ttl=settings.authz.rolebinding_index_ttl,
        inventory_max_bytes=settings.authz_cache.inventory_max_bytes,
        # Signs each authenticated identity for the agent (a job names whom it acts for).
        signer=signer_from_settings(settings.identity, issuer=AUTHZ_ISSUER, ttl=settings.identity.job_ttl),
        job_audience=settings.identity.job_audience,
    )
    deps = Dependencies(settings.nats, settings.redis, redis)
    broker = nats_broker(
        settings.nats,
        name="sleuth-authz-cache",
        max_reconnect_attempts=-1,
        reconnect_time_wait=settings.nats.retry_interval,
        error_cb=deps.nats_retry.nats_error_cb(),
        log_level=logging.DEBUG,  # per-message Received/Processed lines: too chatty for INFO
    )
    # Audit events go out through the broker (JetStream, stream AUDIT), which tests run in memory.
    audit = AuditLog(Subjects(settings.prefix), "authz-cache", settings.audit, metrics.registry)
    audit.bind_broker(broker)
    broker.include_router(
        build_router(service, Subjects(settings.prefix), max_workers=settings.authz_cache.max_concurrent_requests,
                     audit=audit, crashes=metrics.crashes)
    )
    parts = AuthzCache(settings, FastStream(broker), broker, service, metrics, redis, deps, audit)
    parts.app.on_shutdown(audit.aclose)  # while the broker is still connected
    parts.app.after_shutdown(parts.aclose)
    return parts


def create_app(settings: Settings, *, backend: AuthzBackend | None = None) -> FastStream:
    """The FastStream app answering ``sleuth.authz.*`` (DESIGN sections 1 and 2)."""
    return build(settings, backend=backend).app
