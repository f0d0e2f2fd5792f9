"""authz-cache requests and replies (``sleuth.authz.*``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from pydantic import Field

from sleuth_common.messages.base import Message

__all__ = [
    "CLUSTER_KINDS",
    "AuthenticateReply",
    "AuthenticateRequest",
    "ClusterScope",
    "InvalidateRequest",
    "InventoryReply",
    "InventoryRequest",
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


CLUSTER_KINDS: Mapping[str, str] = MappingProxyType({
    "nodes": "",
    "namespaces": "",
    "persistentvolumes": "",
    "storageclasses": "storage.k8s.io",
    "ingressclasses": "networking.k8s.io",
    "priorityclasses": "scheduling.k8s.io",
    "clusterroles": "rbac.authorization.k8s.io",
    "clusterrolebindings": "rbac.authorization.k8s.io",
    "customresourcedefinitions": "apiextensions.k8s.io",
    "volumeattachments": "storage.k8s.io",
    "csidrivers": "storage.k8s.io",
})
"""The cluster-scoped kinds ``ClusterScope.cluster_kinds`` answers for: plural resource → API group."""


class ClusterScope(Message):
    """One cluster's part of a scope.

    ``namespaces``: where the user may ``get pods``; ``cluster_wide``: they may at cluster scope.
    ``cluster_kinds``: the kinds of :data:`CLUSTER_KINDS` (plural, lower case) they may ``list`` at
    cluster scope — a cluster-scoped object is shown only when its kind is here.
    ``secret_namespaces``: those of ``namespaces`` where they may ``get secrets``.
    Both default to empty (fail closed) for replies of older senders.
    """

    kind: Literal["authz.cluster_scope"] = "authz.cluster_scope"
    schema_version: int = 1
    namespaces: tuple[str, ...] = ()
    cluster_wide: bool = False
    cluster_kinds: tuple[str, ...] = ()
    secret_namespaces: tuple[str, ...] = ()


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
    assertion: str = Field(default="", repr=False)
    """A signed assertion of ``user``/``groups`` for the agent (issuer ``sleuth-authz``, audience
    ``sleuth-agent``), fresh on every reply: the gateway puts it on the job it publishes for
    this person (``InvestigationJob.identity``). Empty when authz-cache has no signing key."""


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


class InventoryRequest(Message):
    """Names of the objects in every namespace of ``cluster``, for the scope filter's scan of kept
    text for other namespaces' object names (DESIGN §2, step 3)."""

    kind: Literal["authz.inventory.request"] = "authz.inventory.request"
    schema_version: int = 1
    cluster: str


class InventoryReply(Message):
    """``names``: namespace → sorted names of its pods, services, the workloads that own its pods
    (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs …) and, where authz-cache
    lists them, ConfigMaps and Secrets. Names too generic to be told apart in text are left out.
    ``truncated``: the reply was capped to fit one bus message, the least distinctive names dropped
    first. ``error`` set when the cluster could not be read (then ``names`` is empty)."""

    kind: Literal["authz.inventory.reply"] = "authz.inventory.reply"
    schema_version: int = 1
    cluster: str
    names: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    error: str = ""
    cached: bool = False
    truncated: bool = False
