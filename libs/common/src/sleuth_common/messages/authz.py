"""authz-cache requests and replies (``sleuth.authz.*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sleuth_common.messages.base import Message

__all__ = [
    "AuthenticateReply",
    "AuthenticateRequest",
    "ClusterScope",
    "InvalidateRequest",
    "ResolveReply",
    "ResolveRequest",
    "ScopeReply",
    "ScopeRequest",
]


class ScopeRequest(Message):
    """Which namespaces may ``user`` (with ``groups``) read, per configured cluster."""

    kind: Literal["authz.scope.request"] = "authz.scope.request"
    schema_version: int = 1
    user: str
    groups: tuple[str, ...] = ()


class ClusterScope(Message):
    """One cluster's part of a scope: namespaces where the user may ``get pods``."""

    kind: Literal["authz.cluster_scope"] = "authz.cluster_scope"
    schema_version: int = 1
    namespaces: tuple[str, ...] = ()
    cluster_wide: bool = False


class ScopeReply(Message):
    """The resolved scope. A cluster whose backend failed is absent from ``clusters`` and
    named in ``errors`` (fail closed for that cluster)."""

    kind: Literal["authz.scope.reply"] = "authz.scope.reply"
    schema_version: int = 1
    user: str
    groups: tuple[str, ...] = ()
    clusters: dict[str, ClusterScope] = Field(default_factory=dict)
    errors: dict[str, str] = Field(default_factory=dict)
    cached: bool = False

    def allowed(self, cluster: str, namespace: str) -> bool:
        cs = self.clusters.get(cluster)
        return cs is not None and (cs.cluster_wide or namespace in cs.namespaces)

    @property
    def empty(self) -> bool:
        return not any(cs.cluster_wide or cs.namespaces for cs in self.clusters.values())


class AuthenticateRequest(Message):
    """Turn a bearer token into an identity (TokenReview, or a demo token)."""

    kind: Literal["authz.authenticate.request"] = "authz.authenticate.request"
    schema_version: int = 1
    token: str = Field(repr=False)


class AuthenticateReply(Message):
    kind: Literal["authz.authenticate.reply"] = "authz.authenticate.reply"
    schema_version: int = 1
    authenticated: bool
    user: str = ""
    groups: tuple[str, ...] = ()
    error: str = ""
    unavailable: bool = False
    """True when no cluster could answer the review (the token may be fine): callers answer 503,
    not 401."""


class InvalidateRequest(Message):
    """Drop the cached scope of ``user`` (the ``refresh`` command)."""

    kind: Literal["authz.invalidate"] = "authz.invalidate"
    schema_version: int = 1
    user: str


class ResolveRequest(Message):
    """Which namespaces own these IPs / object names on ``cluster`` (pod IPs, service cluster
    IPs, endpoint addresses; names of pods and services)."""

    kind: Literal["authz.resolve.request"] = "authz.resolve.request"
    schema_version: int = 1
    cluster: str
    ips: tuple[str, ...] = ()
    names: tuple[str, ...] = ()


class ResolveReply(Message):
    """``ips``: IP → owning namespace (an IP absent is unresolvable: callers fail closed).
    ``names``: name → namespaces holding a pod or service of that name. ``error`` set when the
    cluster could not be read (then both maps are empty)."""

    kind: Literal["authz.resolve.reply"] = "authz.resolve.reply"
    schema_version: int = 1
    cluster: str
    ips: dict[str, str] = Field(default_factory=dict)
    names: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    error: str = ""
    cached: bool = False
