"""Resolving a scope from the backends: per cluster, one cluster-scope review, else one per namespace.

No caching here (see :mod:`sleuth_authz_cache.service`). Each cluster is resolved independently and
concurrently; a cluster whose backend fails is left out of ``clusters`` and named in ``errors``
(fail closed for that cluster). Nothing is raised to the caller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from sleuth_authz_cache.backend import AuthzBackend, BackendError
from sleuth_authz_cache.metrics import Metrics
from sleuth_common.messages import ClusterScope, ScopeReply

log = logging.getLogger(__name__)

__all__ = ["ScopeResolver"]


class ScopeResolver:
    def __init__(
        self, clusters: Sequence[str], backend: AuthzBackend, *, concurrency: int, metrics: Metrics
    ) -> None:
        self._clusters = list(clusters)
        self._backend = backend
        self._concurrency = max(1, concurrency)
        self._metrics = metrics

    async def resolve(self, user: str, groups: tuple[str, ...]) -> ScopeReply:
        results = await asyncio.gather(*(self._cluster_or_error(c, user, groups) for c in self._clusters))
        scopes: dict[str, ClusterScope] = {}
        errors: dict[str, str] = {}
        for name, result in zip(self._clusters, results, strict=True):
            if isinstance(result, ClusterScope):
                scopes[name] = result
            else:
                errors[name] = result
        return ScopeReply(user=user, groups=groups, clusters=scopes, errors=errors)

    async def _cluster_or_error(self, cluster: str, user: str, groups: tuple[str, ...]) -> ClusterScope | str:
        try:
            return await self._cluster(cluster, user, groups)
        except BackendError as e:
            log.warning("scope of %s on cluster %s left out: %s", user, cluster, e,
                        extra={"cluster": cluster})
            return str(e) or "backend error"
        except Exception:  # a bug in a backend must not widen or hang anyone's scope
            log.exception("scope of %s on cluster %s failed unexpectedly", user, cluster,
                          extra={"cluster": cluster})
            return "internal error"

    async def _cluster(self, cluster: str, user: str, groups: tuple[str, ...]) -> ClusterScope:
        if await self._review(cluster, user, groups, None):
            try:
                names = await self._backend.namespaces(cluster)
            except BackendError as e:
                # cluster_wide already covers every namespace; the list is a courtesy.
                log.info("cluster %s: cannot list namespaces for a cluster-wide scope: %s", cluster, e)
                names = []
            return ClusterScope(namespaces=tuple(sorted(set(names))), cluster_wide=True)

        names = await self._backend.namespaces(cluster)
        sem = asyncio.Semaphore(self._concurrency)

        async def one(ns: str) -> bool:
            async with sem:
                return await self._review(cluster, user, groups, ns)

        # One failed review fails the cluster (the task group cancels the rest): a partial list
        # would look complete to the user.
        try:
            async with asyncio.TaskGroup() as tg:
                tasks = [(ns, tg.create_task(one(ns))) for ns in names]
        except BaseExceptionGroup as eg:
            first = _first_backend_error(eg)
            if first is None:
                raise
            raise first from None
        return ClusterScope(namespaces=tuple(sorted({ns for ns, t in tasks if t.result()})))

    async def _review(self, cluster: str, user: str, groups: tuple[str, ...], namespace: str | None) -> bool:
        try:
            ok = await self._backend.review(cluster, user, groups, namespace)
        except BackendError:
            self._metrics.reviews.labels(cluster, "error").inc()
            raise
        self._metrics.reviews.labels(cluster, "allowed" if ok else "denied").inc()
        return ok


def _first_backend_error(eg: BaseExceptionGroup) -> BackendError | None:
    for exc in eg.exceptions:
        if isinstance(exc, BackendError):
            return exc
        if isinstance(exc, BaseExceptionGroup) and (inner := _first_backend_error(exc)) is not None:
            return inner
    return None
