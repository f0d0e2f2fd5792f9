"""Fixtures of the authz-cache tests: an in-memory AuthzBackend (unit tests only) and settings."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

import pytest

from sleuth.embedded import free_port
from sleuth_authz_cache.backend import Access, BackendError, TokenIdentity
from sleuth_authz_cache.settings import Settings


@dataclass
class FakeCluster:
    namespaces: list[str]
    cluster_admins: set[str] = field(default_factory=set)  # user or group names
    cluster_readers: set[str] = field(default_factory=set)  # may get pods at cluster scope, nothing more
    readers: dict[str, set[str]] = field(default_factory=dict)  # namespace -> users/groups
    secret_readers: dict[str, set[str]] = field(default_factory=dict)  # namespace ("" = cluster) -> users/groups
    kind_readers: dict[str, set[str]] = field(default_factory=dict)  # cluster-scoped kind -> users/groups
    tokens: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    fail: str | None = None  # reason raised as BackendError on every call
    fail_namespace_list: bool = False
    fail_review: str | None = None  # a review key (as FakeBackend.calls names it) that raises BackendError
    objects: dict[str, list[dict]] = field(default_factory=dict)  # resource (pods, services, endpoints) -> objects


class FakeBackend:
    """RBAC as sets, with call counts and an optional delay so concurrent callers overlap."""

    def __init__(self, clusters: dict[str, FakeCluster], delay: float = 0.0) -> None:
        self.clusters = clusters
        self.delay = delay
        self.calls: Counter[tuple[str, str]] = Counter()  # (cluster, "review"|"review_cluster"|...)
        self.closed = False
        self._active = 0
        self._active_ns = 0
        self.max_active_reviews = 0
        self.max_active_namespace_reviews = 0

    def _cluster(self, name: str) -> FakeCluster:
        c = self.clusters[name]
        if c.fail:
            raise BackendError(c.fail)
        return c

    async def access(self, cluster: str, user: str, groups: tuple[str, ...], access: Access) -> bool:
        pods = (access.verb, access.resource, access.group) == ("get", "pods", "")
        if pods:
            what = "review_cluster" if access.namespace is None else "review_namespace"
        else:
            what = f"{access.verb} {access.group}/{access.resource}" + ("" if access.namespace is None else " ns")
        self.calls[(cluster, what)] += 1
        self._active += 1
        self.max_active_reviews = max(self.max_active_reviews, self._active)
        if pods and access.namespace is not None:
            self._active_ns += 1
            self.max_active_namespace_reviews = max(self.max_active_namespace_reviews, self._active_ns)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self._active -= 1
            if pods and access.namespace is not None:
                self._active_ns -= 1
        c = self._cluster(cluster)
        if c.fail_review == what:
            raise BackendError(f"HTTP 500: {what} failed")
        who = {user, *groups}
        if who & c.cluster_admins:
            return True
        if pods:
            if access.namespace is None:
                return bool(who & c.cluster_readers)
            return bool(who & c.readers.get(access.namespace, set()))
        if (access.verb, access.resource) == ("get", "secrets"):
            return bool(who & c.secret_readers.get(access.namespace or "", set()))
        if access.verb == "list" and access.namespace is None:
            return bool(who & c.kind_readers.get(access.resource, set()))
        return False

    async def namespaces(self, cluster: str) -> list[str]:
        self.calls[(cluster, "namespaces")] += 1
        await asyncio.sleep(self.delay)
        c = self._cluster(cluster)
        if c.fail_namespace_list:
            raise BackendError("authz identity may not list namespaces (403)")
        return list(c.namespaces)

    async def list_objects(self, cluster: str, resource: str) -> list[dict]:
        self.calls[(cluster, f"list_objects {resource}")] += 1
        await asyncio.sleep(self.delay)
        return list(self._cluster(cluster).objects.get(resource, []))

    async def token_review(self, cluster: str, token: str) -> TokenIdentity:
        self.calls[(cluster, "token_review")] += 1
        c = self._cluster(cluster)
        if token in c.tokens:
            user, groups = c.tokens[token]
            return TokenIdentity(True, user, groups)
        return TokenIdentity(False)

    async def aclose(self) -> None:
        self.closed = True

    def resolutions(self, cluster: str) -> int:
        """Scope resolutions started on ``cluster`` (each begins with one cluster-scope review)."""
        return self.calls[(cluster, "review_cluster")]


def demo_cluster() -> FakeCluster:
    return FakeCluster(
        namespaces=["kube-system", "monitoring", "sleuth", "team-a", "team-b"],
        cluster_admins={"platform-admins"},
        readers={"team-a": {"team-a"}, "team-b": {"team-b"}},
        secret_readers={"team-a": {"team-a"}},
        kind_readers={"storageclasses": {"team-a", "team-b"}},
        tokens={
            "demo-alice-token": ("alice", ("team-a", "system:authenticated")),
            "demo-bob-token": ("bob", ("team-b",)),
        },
    )


@pytest.fixture
def fake_backend() -> FakeBackend:
    return FakeBackend({"demo": demo_cluster(), "prod-1": demo_cluster()}, delay=0.01)


@pytest.fixture
def dead_redis_url() -> str:
    """A Redis URL nobody listens on: the cache is unavailable, answers must still come."""
    return f"redis://127.0.0.1:{free_port()}/0"


def make_settings(redis_url: str, *, clusters: tuple[str, ...] = ("demo", "prod-1"), cache_ttl: float = 60.0,
                  **authz: object) -> Settings:
    return Settings(
        prefix="t",
        redis={"url": redis_url, "timeout": 0.5},
        clusters=[{"name": c} for c in clusters],
        authz={"cache_ttl": cache_ttl, **authz},
        authz_cache={"metrics_port": 0},
    )


@pytest.fixture
def settings_factory():
    return make_settings
