"""Resolving a scope from the backends, per cluster (SubjectAccessReviews only):

1. ``get pods`` at cluster scope → ``cluster_wide`` (then ``namespaces`` = every namespace, a
   courtesy list); else ``get pods`` in each *candidate* namespace → ``namespaces``. The candidates
   are the namespaces whose RoleBindings name the asker (:mod:`sleuth_authz_cache.bindings`: under
   RBAC nothing else can grant them a namespace), or every namespace with
   ``authz.scope_candidates: all`` or when authz-cache may not list RoleBindings.
2. ``cluster_kinds`` (concurrently with 1's namespace reviews): for a cluster-wide user one
   ``list`` on ``*``/``*`` at cluster scope grants every kind of ``CLUSTER_KINDS``; otherwise (and for
   everyone else) one ``list`` review per kind, at cluster scope.
3. ``secret_namespaces``: for a cluster-wide user one ``get secrets`` at cluster scope grants all of
   ``namespaces``; otherwise one ``get secrets`` review per namespace of ``namespaces`` that is a
   candidate.

All reviews of one resolution share one bound, ``review_concurrency``. No caching here (see
:mod:`sleuth_authz_cache.service`). Each cluster is resolved independently and concurrently; a
cluster whose backend fails — any one review — is left out of ``clusters`` and named in ``errors``
(fail closed for that cluster: a partial answer would look complete). Nothing is raised to the caller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Literal, TypeVar

from sleuth_authz_cache.backend import Access, AuthzBackend, BackendError
from sleuth_authz_cache.bindings import Bindings
from sleuth_authz_cache.metrics import Metrics
from sleuth_common.messages import ClusterScope, ScopeReply
from sleuth_common.messages.authz import CLUSTER_KINDS

log = logging.getLogger(__name__)

__all__ = ["ScopeResolver"]


Candidates = Literal["rolebindings", "all"]


class ScopeResolver:
    def __init__(
        self, clusters: Sequence[str], backend: AuthzBackend, *, concurrency: int, metrics: Metrics,
        candidates: Candidates = "rolebindings", bindings_ttl: float = 30.0,
    ) -> None:
        self._clusters = list(clusters)
        self._backend = backend
        self._concurrency = max(1, concurrency)
        self._metrics = metrics
        self._bindings = Bindings(backend, ttl=bindings_ttl) if candidates == "rolebindings" else None

    def invalidate(self) -> None:
        """Someone's access changed: the next resolution reads the RoleBindings again."""
        if self._bindings is not None:
            self._bindings.invalidate()

    async def aclose(self) -> None:
        if self._bindings is not None:
            await self._bindings.aclose()

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
            self._metrics.crashes.labels("authz-cache", "scope").inc()
            log.exception("scope of %s on cluster %s failed unexpectedly", user, cluster,
                          extra={"cluster": cluster})
            return "internal error"

    async def _cluster(self, cluster: str, user: str, groups: tuple[str, ...]) -> ClusterScope:
        sem = asyncio.Semaphore(self._concurrency)

        async def allowed(access: Access) -> bool:
            async with sem:
                return await self._review(cluster, user, groups, access)

        # gather: the two run together; a failure of either is raised (and the other's retrieved).
        cluster_wide, candidates = await asyncio.gather(allowed(_PODS), self._candidates(cluster, user, groups))
        namespaces, kinds = await _all([self._namespaces(cluster, cluster_wide, candidates, allowed),
                                        self._kinds(cluster_wide, allowed)])
        secrets = await self._secrets(tuple(namespaces), cluster_wide, candidates, allowed)
        return ClusterScope(namespaces=tuple(namespaces), cluster_wide=cluster_wide,
                            cluster_kinds=tuple(kinds), secret_namespaces=secrets)

    async def _candidates(self, cluster: str, user: str, groups: tuple[str, ...]) -> frozenset[str] | None:
        """Namespaces that may grant the asker anything; None = every namespace must be reviewed."""
        if self._bindings is None or not self._bindings.available:
            return None
        try:
            found = await self._bindings.candidates(cluster, user, groups)
        except BackendError:
            self._metrics.binding_index.labels(cluster, "error").inc()
            raise
        self._metrics.binding_index.labels(cluster, "fallback" if found is None else "used").inc()
        return None if found is None else frozenset(found)

    async def _namespaces(self, cluster: str, cluster_wide: bool, candidates: frozenset[str] | None,
                          allowed: _Allowed) -> list[str]:
        if cluster_wide:
            try:
                names = await self._backend.namespaces(cluster)
            except BackendError as e:
                # cluster_wide already covers every namespace; the list is a courtesy.
                log.info("cluster %s: cannot list namespaces for a cluster-wide scope: %s", cluster, e)
                names = []
            return sorted(set(names))
        if candidates is None:
            names = sorted(set(await self._backend.namespaces(cluster)))
        else:
            names = sorted(candidates)
        return _kept(names, await _all([allowed(Access("get", "pods", "", ns)) for ns in names]))

    @staticmethod
    async def _kinds(cluster_wide: bool, allowed: _Allowed) -> list[str]:
        if cluster_wide and await allowed(Access("list", "*", "*")):
            return list(CLUSTER_KINDS)
        kinds = list(CLUSTER_KINDS.items())
        oks = await _all([allowed(Access("list", plural, group)) for plural, group in kinds])
        return _kept([plural for plural, _ in kinds], oks)

    @staticmethod
    async def _secrets(namespaces: tuple[str, ...], cluster_wide: bool, candidates: frozenset[str] | None,
                       allowed: _Allowed) -> tuple[str, ...]:
        if not namespaces:
            return ()
        if cluster_wide and await allowed(Access("get", "secrets")):
            return namespaces
        check = namespaces if candidates is None else tuple(ns for ns in namespaces if ns in candidates)
        return tuple(_kept(check, await _all([allowed(Access("get", "secrets", "", ns)) for ns in check])))

    async def _review(self, cluster: str, user: str, groups: tuple[str, ...], access: Access) -> bool:
        try:
            ok = await self._backend.access(cluster, user, groups, access)
        except BackendError:
            self._metrics.reviews.labels(cluster, "error").inc()
            raise
        self._metrics.reviews.labels(cluster, "allowed" if ok else "denied").inc()
        return ok


_PODS = Access("get", "pods")
_Allowed = Callable[[Access], Awaitable[bool]]
T = TypeVar("T")


def _kept(items: Iterable[str], oks: Iterable[bool]) -> list[str]:
    return [item for item, ok in zip(items, oks, strict=True) if ok]


async def _all(aws: Sequence[Awaitable[T]]) -> list[T]:
    """Await all concurrently; the first failure cancels the rest and is raised as itself
    (a :class:`BackendError` rather than an exception group)."""
    async def run(aw: Awaitable[T]) -> T:
        return await aw

    try:
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(run(aw)) for aw in aws]
    except BaseExceptionGroup as eg:
        first = _first_backend_error(eg)
        if first is None:
            raise
        raise first from None
    return [t.result() for t in tasks]


def _first_backend_error(eg: BaseExceptionGroup) -> BackendError | None:
    for exc in eg.exceptions:
        if isinstance(exc, BackendError):
            return exc
        if isinstance(exc, BaseExceptionGroup) and (inner := _first_backend_error(exc)) is not None:
            return inner
    return None
