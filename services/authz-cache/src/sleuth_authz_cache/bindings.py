"""Candidate namespaces of a scope, from the cluster's RoleBindings.

Under RBAC a person may act in namespace ``N`` only through a ClusterRoleBinding — which grants the
same at cluster scope, and :class:`~sleuth_authz_cache.scope.ScopeResolver` asks that first — or
through a RoleBinding *in* ``N`` whose subjects name them: their user name, one of their groups, or,
for a service account's user name (``system:serviceaccount:<ns>:<name>``), that service account. So
the namespaces whose RoleBindings name the asker are every namespace RBAC can grant them anything
in, and a resolution reviews only those (one SubjectAccessReview each) instead of every namespace of
the cluster.

The index never *widens* a scope: every candidate is still confirmed by a review.

- A stale index that misses a new RoleBinding leaves that namespace out until the next build
  (``ttl`` seconds at most; an invalidation of any user makes the next resolution rebuild it).
- A stale index that still lists a removed RoleBinding costs one review, which says no.
- An authorizer other than RBAC (a webhook, ABAC) may grant access that no RoleBinding shows; such a
  cluster sets ``authz.scope_candidates: all`` (one review per namespace, the slow authoritative way).

The index is per cluster, built with authz-cache's own identity (``list`` on
``rbac.authorization.k8s.io/rolebindings``, paged); concurrent builds share one. An identity that may
not list RoleBindings (403) makes the resolver fall back to one review per namespace — logged once
per ``ttl`` — so an old ClusterRole keeps working, slowly.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sleuth_authz_cache.backend import BackendError, Forbidden

log = logging.getLogger(__name__)

__all__ = ["BindingIndex", "Bindings", "subject_keys"]

_SA_PREFIX = "system:serviceaccount:"


class ListsRoleBindings(Protocol):
    async def role_bindings(self, cluster: str) -> list[dict[str, Any]]: ...


@dataclass
class BindingIndex:
    """Subject key (see :func:`subject_keys`) → namespaces whose RoleBindings name that subject."""

    namespaces: dict[str, set[str]] = field(default_factory=dict)
    bindings: int = 0

    def candidates(self, user: str, groups: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for key in subject_keys(user, groups):
            out |= self.namespaces.get(key, set())
        return out

    def add(self, binding: dict[str, Any]) -> None:
        meta = binding.get("metadata") or {}
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        if not isinstance(ns, str) or not ns:
            return
        self.bindings += 1
        for subject in binding.get("subjects") or []:
            if isinstance(subject, dict) and (key := _binding_subject_key(subject, ns)) is not None:
                self.namespaces.setdefault(key, set()).add(ns)


def subject_keys(user: str, groups: Iterable[str]) -> list[str]:
    """The index keys a person matches: their user, each group, their service account if any."""
    keys = [f"user:{user}"] if user else []
    keys += [f"group:{g}" for g in groups if g]
    if user.startswith(_SA_PREFIX):
        ns, sep, name = user[len(_SA_PREFIX):].partition(":")
        if sep and ns and name and ":" not in name:
            keys.append(f"sa:{ns}/{name}")
    return keys


def _binding_subject_key(subject: dict[str, Any], binding_ns: str) -> str | None:
    """As Kubernetes' RBAC matches a subject (``appliesToUser``): a ServiceAccount without a namespace
    is the binding's own namespace's; kinds RBAC does not know match nobody."""
    kind, name = subject.get("kind"), subject.get("name")
    if not isinstance(name, str) or not name:
        return None
    if kind == "User":
        return f"user:{name}"
    if kind == "Group":
        return f"group:{name}"
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return f"sa:{ns}/{name}" if isinstance(ns, str) and ns else None
    return None


@dataclass
class _Built:
    index: BindingIndex | None  # None: the identity may not list RoleBindings
    started: float


class Bindings:
    """One :class:`BindingIndex` per cluster, rebuilt after ``ttl`` seconds or an invalidation."""

    def __init__(self, backend: Any, *, ttl: float) -> None:
        self._backend = backend
        self._ttl = ttl
        self._built: dict[str, _Built] = {}
        self._building: dict[str, tuple[float, asyncio.Task[_Built]]] = {}
        self._stale_before = 0.0

    @property
    def available(self) -> bool:
        return callable(getattr(self._backend, "role_bindings", None))

    def invalidate(self) -> None:
        """Every index built (or being built) until now is stale: the next resolution rebuilds."""
        self._stale_before = time.monotonic()

    def _fresh(self, started: float) -> bool:
        return started > self._stale_before and time.monotonic() - started < self._ttl

    async def candidates(self, cluster: str, user: str, groups: Iterable[str]) -> set[str] | None:
        """The namespaces that may grant ``user`` anything on ``cluster``; None when unknown (the
        identity may not list RoleBindings: review every namespace). Other failures raise
        :class:`BackendError` (the cluster is left out of the scope)."""
        built = self._built.get(cluster)
        if built is None or not self._fresh(built.started):
            built = await self._build_shared(cluster)
        return None if built.index is None else built.index.candidates(user, groups)

    async def _build_shared(self, cluster: str) -> _Built:
        running = self._building.get(cluster)
        if running is None or not self._fresh(running[0]):
            started = time.monotonic()
            task = asyncio.create_task(self._build(cluster, started), name=f"authz-bindings-{cluster}")
            running = (started, task)
            self._building[cluster] = running
            task.add_done_callback(functools.partial(self._done, cluster))
        # shield: one resolution giving up must not cancel the build the others wait for.
        return await asyncio.shield(running[1])

    def _done(self, cluster: str, task: asyncio.Task[_Built]) -> None:
        running = self._building.get(cluster)
        if running is not None and running[1] is task:
            del self._building[cluster]
        if not task.cancelled() and task.exception() is None:
            built = task.result()
            current = self._built.get(cluster)
            if current is None or current.started < built.started:
                self._built[cluster] = built

    async def _build(self, cluster: str, started: float) -> _Built:
        try:
            items = await self._backend.role_bindings(cluster)
        except Forbidden as e:
            log.warning("cluster %s: authz-cache may not list rolebindings (%s): every namespace is reviewed "
                        "for each scope (slow on big clusters); grant it `list` on "
                        "rbac.authorization.k8s.io/rolebindings", cluster, e, extra={"cluster": cluster})
            return _Built(None, started)
        except BackendError:
            raise
        index = BindingIndex()
        for item in items:
            if isinstance(item, dict):
                index.add(item)
        log.info("cluster %s: RoleBinding index built from %d bindings in %.0f ms", cluster, index.bindings,
                 (time.monotonic() - started) * 1000, extra={"cluster": cluster})
        return _Built(index, started)

    async def aclose(self) -> None:
        tasks = [t for _, t in self._building.values()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
