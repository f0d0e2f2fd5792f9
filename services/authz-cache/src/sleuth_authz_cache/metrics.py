"""Prometheus metrics of one authz-cache instance (its own registry, served on ``/metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from sleuth_common.bus import handler_crashes

__all__ = ["Metrics"]


class Metrics:
    """The counters and histograms; one instance (and registry) per app, so tests stay independent."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.scope_requests = Counter(
            "sleuth_authz_scope_requests",
            "Scope requests by outcome: hit (served from cache), miss (resolved, no cluster error), "
            "error (resolved with at least one cluster left out)",
            ["outcome"],
            registry=r,
        )
        self.reviews = Counter(
            "sleuth_authz_reviews",
            "SubjectAccessReviews by cluster and outcome (allowed, denied, error)",
            ["cluster", "outcome"],
            registry=r,
        )
        self.token_reviews = Counter(
            "sleuth_authz_token_reviews",
            "TokenReviews by cluster and outcome (authenticated, unauthenticated, error); cache hits are not counted",
            ["cluster", "outcome"],
            registry=r,
        )
        self.cache_errors = Counter(
            "sleuth_authz_cache_errors",
            "Redis operations that failed (the request was answered without the cache)",
            ["op"],
            registry=r,
        )
        self.resolve_requests = Counter(
            "sleuth_authz_resolve_requests",
            "IP/name resolution requests by outcome: hit (cached index), miss (index built), error",
            ["outcome"],
            registry=r,
        )
        self.inventory_requests = Counter(
            "sleuth_authz_inventory_requests",
            "Name inventory requests by outcome: hit (cached index), miss (index built), error",
            ["outcome"],
            registry=r,
        )
        self.resolve_seconds = Histogram(
            "sleuth_authz_resolve_seconds",
            "Seconds to resolve one scope from the backends (cache misses only)",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.binding_index = Counter(
            "sleuth_authz_binding_index",
            "Scope resolutions by how their candidate namespaces were found: used (the RoleBinding index), "
            "fallback (every namespace: authz-cache may not list rolebindings), error (the index could not be built)",
            ["cluster", "outcome"],
            registry=r,
        )
        self.crashes = handler_crashes(r, "authz-cache", "scope")
