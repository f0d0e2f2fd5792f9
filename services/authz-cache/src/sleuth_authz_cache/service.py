"""The domain of authz-cache: cached scope lookups, authentication, invalidation, IP resolution
and the name inventory.

Concurrent misses for the same (user, groups) inside one process share one backend resolution
(an in-process map of in-flight tasks). Replicas do not coordinate: with N replicas a burst of
misses for one key may cause up to N resolutions, each cached with the same result — cheaper
and simpler than a distributed lock, and still bounded.

A reply with any cluster error is never cached, so a cluster that recovers is seen on the next
request. An invalidation that arrives while a resolution for that user is in flight keeps that
resolution out of the cache (its result may predate the change being refreshed for).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sleuth_authz_cache.backend import AuthzBackend, BackendError, TokenIdentity
from sleuth_authz_cache.cache import ScopeCache, normalize_groups
from sleuth_authz_cache.metrics import Metrics
from sleuth_authz_cache.resolve import Resolver
from sleuth_authz_cache.scope import Candidates, ScopeResolver
from sleuth_common.identity import IdentityError, IdentitySigner
from sleuth_common.messages import AuthenticateReply, ResolveReply, ResolveRequest, ScopeReply
from sleuth_common.messages.authz import InventoryReply, InventoryRequest

log = logging.getLogger(__name__)

__all__ = ["AUTHENTICATED_GROUP", "AuthzService", "ScopeOutcome"]

AUTHENTICATED_GROUP = "system:authenticated"
"""Kubernetes puts every authenticated user in this group; added if a TokenReview left it out."""


@dataclass(frozen=True)
class ScopeOutcome:
    reply: ScopeReply
    outcome: Literal["hit", "miss", "error"]
    duration_ms: float


class AuthzService:
    def __init__(
        self,
        clusters: Sequence[str],
        backend: AuthzBackend,
        cache: ScopeCache,
        metrics: Metrics,
        *,
        review_concurrency: int,
        resolve_ttl: float = 10.0,
        scope_candidates: Candidates = "rolebindings",
        rolebinding_index_ttl: float = 30.0,
        inventory_max_bytes: int = 900_000,
        signer: IdentitySigner | None = None,
        job_audience: str = "sleuth-agent",
    ) -> None:
        self._signer = signer
        self._job_audience = job_audience
        self._clusters = list(clusters)
        self._ips = Resolver(backend, ttl=resolve_ttl, inventory_max_bytes=inventory_max_bytes)
        self._backend = backend
        self._cache = cache
        self._metrics = metrics
        self._resolver = ScopeResolver(clusters, backend, concurrency=review_concurrency, metrics=metrics,
                                       candidates=scope_candidates, bindings_ttl=rolebinding_index_ttl)
        self._inflight: dict[str, asyncio.Task[ScopeReply]] = {}
        self._epochs: dict[str, int] = {}
        self._running: set[asyncio.Task[ScopeReply]] = set()

    # -- scope --------------------------------------------------------------------------------

    async def scope(self, user: str, groups: Sequence[str]) -> ScopeOutcome:
        start = time.perf_counter()
        norm = normalize_groups(tuple(groups))
        if not user and not norm:
            # Nobody to ask about: an empty scope (Kubernetes refuses a review naming neither).
            # A group alone is a question of its own: what membership in it grants (channels).
            self._metrics.scope_requests.labels("miss").inc()
            return ScopeOutcome(ScopeReply(user=user, groups=norm), "miss", _ms(start))
        key = self._cache.scope_key(user, norm)
        cached = await self._cache.get_scope(key)
        if cached is not None and not cached.errors:
            self._metrics.scope_requests.labels("hit").inc()
            reply = cached.model_copy(update={"cached": True})
            return ScopeOutcome(reply, "hit", _ms(start))

        task = self._inflight.get(key)
        if task is None:
            task = asyncio.create_task(self._resolve_and_store(key, user, norm), name=f"authz-resolve-{user}")
            self._inflight[key] = task
            self._running.add(task)
            task.add_done_callback(functools.partial(self._forget, key))
        # shield: a requester that gives up must not cancel the resolution the others wait for.
        reply = await asyncio.shield(task)
        outcome: Literal["miss", "error"] = "error" if reply.errors else "miss"
        self._metrics.scope_requests.labels(outcome).inc()
        return ScopeOutcome(reply, outcome, _ms(start))

    async def _resolve_and_store(self, key: str, user: str, groups: tuple[str, ...]) -> ScopeReply:
        epoch = self._epochs.get(user, 0)
        with self._metrics.resolve_seconds.time():
            reply = await self._resolver.resolve(user, groups)
        if not reply.errors and self._epochs.get(user, 0) == epoch:
            await self._cache.put_scope(key, user, reply)
        return reply

    def _forget(self, key: str, task: asyncio.Task[ScopeReply]) -> None:
        self._running.discard(task)
        if self._inflight.get(key) is task:
            del self._inflight[key]

    async def invalidate(self, user: str) -> int:
        """Drop every cached scope of ``user``; in-flight resolutions for them are not cached."""
        self._epochs[user] = self._epochs.get(user, 0) + 1
        self._resolver.invalidate()  # their RoleBindings may be what changed
        prefix = self._cache.scope_key(user, ()).rsplit(":", 1)[0] + ":"
        for key in [k for k in self._inflight if k.startswith(prefix)]:
            self._inflight.pop(key, None)  # new requests start a fresh resolution
        return await self._cache.invalidate(user)

    # -- resolve ------------------------------------------------------------------------------

    async def resolve(self, req: ResolveRequest) -> ResolveReply:
        """IPs / names → owning namespaces on one cluster (an index cached ``resolve_ttl`` s)."""
        reply = await self._ips.resolve(req, self._clusters)
        self._metrics.resolve_requests.labels("error" if reply.error else ("hit" if reply.cached else "miss")).inc()
        return reply

    async def inventory(self, req: InventoryRequest) -> InventoryReply:
        """Object names per namespace of one cluster, from the same cached lists as ``resolve``."""
        reply = await self._ips.inventory(req, self._clusters)
        self._metrics.inventory_requests.labels(
            "error" if reply.error else ("hit" if reply.cached else "miss")).inc()
        return reply

    # -- authenticate -------------------------------------------------------------------------

    @property
    def signs_identities(self) -> bool:
        return self._signer is not None

    def _authenticated(self, user: str, groups: Sequence[str]) -> AuthenticateReply:
        """An authenticated reply with a fresh signed assertion of the identity for the agent."""
        assertion = ""
        if self._signer is not None:
            try:
                assertion = self._signer.mint(user, groups, audience=self._job_audience)
            except IdentityError as e:  # a name no assertion can carry (control characters ...)
                log.warning("cannot sign an identity assertion: %s", e)
        return AuthenticateReply(authenticated=True, user=user, groups=tuple(groups), assertion=assertion)

    async def authenticate(self, token: str) -> AuthenticateReply:
        if not token:
            return AuthenticateReply(authenticated=False, error="invalid token")
        cached = await self._cache.get_identity(token)
        if cached is not None:
            return self._authenticated(cached.user, cached.groups)
        if not self._clusters:
            return AuthenticateReply(
                authenticated=False, unavailable=True, error="authorization is unavailable: no clusters configured"
            )

        failures: list[str] = []
        for cluster in self._clusters:
            try:
                identity = await self._backend.token_review(cluster, token)
            except BackendError as e:
                self._metrics.token_reviews.labels(cluster, "error").inc()
                log.warning("token review on cluster %s failed: %s", cluster, e, extra={"cluster": cluster})
                failures.append(f"{cluster}: {e}")
                continue
            if identity.authenticated:
                self._metrics.token_reviews.labels(cluster, "authenticated").inc()
                identity = _with_authenticated_group(identity)
                await self._cache.put_identity(token, identity)
                return self._authenticated(identity.user, identity.groups)
            self._metrics.token_reviews.labels(cluster, "unauthenticated").inc()

        if failures:
            # The token may belong to a cluster that did not answer: we cannot call it invalid.
            return AuthenticateReply(
                authenticated=False, unavailable=True, error="authorization is unavailable: " + "; ".join(failures)
            )
        return AuthenticateReply(authenticated=False, error="invalid token")

    # -- lifecycle ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self._ips.aclose()
        await self._resolver.aclose()
        tasks = list(self._running)
        self._inflight.clear()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._backend.aclose()


def _with_authenticated_group(identity: TokenIdentity) -> TokenIdentity:
    if AUTHENTICATED_GROUP in identity.groups:
        return identity
    return identity._replace(groups=(*identity.groups, AUTHENTICATED_GROUP))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
