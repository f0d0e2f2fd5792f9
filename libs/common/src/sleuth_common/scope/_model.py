"""The values the scope filter works with: a caller's scope on one cluster, per-tool rules,
and the outcomes of the two checks (arguments before a call, results after it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sleuth_common.scope._names import ForeignNames

__all__ = [
    "CLUSTER_ADMIN_META_KEY",
    "CLUSTER_SCOPED_KINDS",
    "FilterOutcome",
    "Refusal",
    "Scope",
    "ToolRule",
    "ToolRules",
    "cluster_resource",
    "resource_name",
]

CLUSTER_ADMIN_META_KEY = "sleuth/cluster_admin_only"
"""``_meta`` key an MCP server sets on a tool that only cluster-wide callers may use."""


# Cluster-scoped kinds and the plural resource name RBAC knows them by (``Scope.cluster_kinds``).
CLUSTER_SCOPED_KINDS: Mapping[str, str] = {
    "Namespace": "namespaces", "Project": "namespaces", "Node": "nodes",
    "PersistentVolume": "persistentvolumes", "StorageClass": "storageclasses",
    "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
    "CustomResourceDefinition": "customresourcedefinitions", "IngressClass": "ingressclasses",
    "PriorityClass": "priorityclasses", "RuntimeClass": "runtimeclasses", "CSIDriver": "csidrivers",
    "CSINode": "csinodes", "VolumeAttachment": "volumeattachments", "APIService": "apiservices",
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
    "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
    "CertificateSigningRequest": "certificatesigningrequests", "ComponentStatus": "componentstatuses",
    "FlowSchema": "flowschemas", "PriorityLevelConfiguration": "prioritylevelconfigurations",
    "PodSecurityPolicy": "podsecuritypolicies", "GatewayClass": "gatewayclasses",
    "IPAddress": "ipaddresses", "ServiceCIDR": "servicecidrs", "ResourceSlice": "resourceslices",
    "DeviceClass": "deviceclasses", "ClusterTrustBundle": "clustertrustbundles",
    "VolumeSnapshotClass": "volumesnapshotclasses", "VolumeSnapshotContent": "volumesnapshotcontents",
    "ClusterIssuer": "clusterissuers", "ClusterPolicy": "clusterpolicies",
    "ClusterSecretStore": "clustersecretstores", "StorageVersionMigration": "storageversionmigrations",
}


def _plural(kind: str) -> str:
    k = kind.lower()
    if k.endswith(("s", "x", "ch", "sh")):
        return k + "es"
    if k.endswith("y") and k[-2:-1] not in ("a", "e", "i", "o", "u"):
        return k[:-1] + "ies"
    return k + "s"


_KIND_LOOKUP: dict[str, str] = {}
for _kind, _res in CLUSTER_SCOPED_KINDS.items():
    _KIND_LOOKUP[_kind] = _KIND_LOOKUP[_kind.lower()] = _KIND_LOOKUP[_res] = _res
_KIND_LOOKUP.update({"pv": "persistentvolumes", "sc": "storageclasses", "crd": "customresourcedefinitions",
                     "crds": "customresourcedefinitions", "pc": "priorityclasses", "csr": "certificatesigningrequests"})


# The API groups each known cluster-scoped resource is served from: a ``kind: Node`` from
# ``longhorn.io`` is a namespaced custom resource that shares a name, not a Node.
_GROUPS: dict[str, frozenset[str]] = {
    res: frozenset(groups.split()) if groups else frozenset({""})
    for res, groups in {
        "namespaces": "", "nodes": "", "persistentvolumes": "", "componentstatuses": "",
        "storageclasses": "storage.k8s.io", "csidrivers": "storage.k8s.io", "csinodes": "storage.k8s.io",
        "volumeattachments": "storage.k8s.io",
        "clusterroles": "rbac.authorization.k8s.io", "clusterrolebindings": "rbac.authorization.k8s.io",
        "customresourcedefinitions": "apiextensions.k8s.io", "ingressclasses": "networking.k8s.io",
        "ipaddresses": "networking.k8s.io", "servicecidrs": "networking.k8s.io",
        "priorityclasses": "scheduling.k8s.io", "runtimeclasses": "node.k8s.io",
        "apiservices": "apiregistration.k8s.io",
        "mutatingwebhookconfigurations": "admissionregistration.k8s.io",
        "validatingwebhookconfigurations": "admissionregistration.k8s.io",
        "validatingadmissionpolicies": "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings": "admissionregistration.k8s.io",
        "mutatingadmissionpolicies": "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings": "admissionregistration.k8s.io",
        "certificatesigningrequests": "certificates.k8s.io", "clustertrustbundles": "certificates.k8s.io",
        "flowschemas": "flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations": "flowcontrol.apiserver.k8s.io",
        "podsecuritypolicies": "policy extensions", "gatewayclasses": "gateway.networking.k8s.io",
        "resourceslices": "resource.k8s.io", "deviceclasses": "resource.k8s.io",
        "volumesnapshotclasses": "snapshot.storage.k8s.io", "volumesnapshotcontents": "snapshot.storage.k8s.io",
        "clusterissuers": "cert-manager.io", "clusterpolicies": "kyverno.io",
        "clustersecretstores": "external-secrets.io", "storageversionmigrations": "storagemigration.k8s.io",
    }.items()
}


def served_as(resource: str, api_version: object) -> bool:
    """Whether an object of ``resource`` with this ``apiVersion`` is the known cluster-scoped
    kind (no ``apiVersion``, or a resource of unknown group: taken at its word)."""
    groups = _GROUPS.get(resource)
    if groups is None or type(api_version) is not str or not api_version:
        return True
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return group in groups or (resource == "namespaces" and group == "project.openshift.io")


def cluster_resource(kind: str) -> str | None:
    """The plural resource name of a cluster-scoped ``kind`` (``Node``, ``node``, ``nodes`` →
    ``nodes``; any ``Cluster…`` kind counts), or None for a namespaced or unknown kind."""
    got = _KIND_LOOKUP.get(kind)
    if got is None and kind.startswith("Cluster") and kind[7:8].isupper():
        return _plural(kind)
    return got


def resource_name(kind: str) -> str:
    """The plural resource name for ``kind`` as given in ``Scope.cluster_kinds``: a known kind in
    any spelling, a ``Kind`` pluralised, anything else taken as a plural already."""
    k = kind.strip()
    got = cluster_resource(k) or cluster_resource(k.lower())
    if got is not None:
        return got
    return _plural(k) if k[:1].isupper() else k.lower()


@dataclass(frozen=True)
class Scope:
    """What one caller may read on one cluster: the namespaces where they may ``get pods``,
    and ``cluster_wide`` when a cluster-scope check passed (then nothing is filtered, only
    redacted). ``cluster_kinds``: cluster-scoped resources the caller may list cluster-wide
    (plural, lower case: ``nodes``, ``storageclasses``, ``persistentvolumes``, ``namespaces`` …).
    ``secret_namespaces``: where the caller may ``get secrets``. ``foreign_names``: the index of
    object names in other namespaces that kept text is scanned for (``ForeignNames``)."""

    namespaces: frozenset[str] = frozenset()
    cluster_wide: bool = False
    cluster_kinds: frozenset[str] = frozenset()
    secret_namespaces: frozenset[str] = frozenset()
    foreign_names: ForeignNames | None = field(default=None, compare=False, hash=False, repr=False)

    def allows(self, namespace: str) -> bool:
        return self.cluster_wide or namespace in self.namespaces

    def may_list(self, resource: str) -> bool:
        """May the caller list this cluster-scoped resource (plural name) cluster-wide?"""
        return self.cluster_wide or resource in self.cluster_kinds

    def may_read_secrets(self, namespace: str) -> bool:
        return self.cluster_wide or namespace in self.secret_namespaces

    @property
    def empty(self) -> bool:
        return not self.cluster_wide and not self.namespaces

    @classmethod
    def of(
        cls,
        namespaces: Iterable[str] = (),
        cluster_wide: bool = False,
        *,
        cluster_kinds: Iterable[str] = (),
        secret_namespaces: Iterable[str] = (),
        inventory: Mapping[str, Iterable[str]] | None = None,
    ) -> Scope:
        """A scope from plain values; ``inventory`` (``{namespace: [object names]}``, every
        namespace of the cluster) builds ``foreign_names``."""
        allowed = frozenset(namespaces)
        names = ForeignNames.build(inventory, allowed) if inventory else None
        return cls(allowed, cluster_wide, _resources(cluster_kinds), frozenset(secret_namespaces), names)

    @classmethod
    def from_cluster_scope(cls, cluster_scope: Any | None) -> Scope:
        """From a ``sleuth_common.messages.ClusterScope`` (``None`` = nothing on that cluster).
        Reads ``cluster_kinds``, ``secret_namespaces`` and ``inventory`` when the message has them."""
        if cluster_scope is None:
            return cls()
        inventory = getattr(cluster_scope, "inventory", None)
        return cls.of(
            cluster_scope.namespaces,
            bool(cluster_scope.cluster_wide),
            cluster_kinds=getattr(cluster_scope, "cluster_kinds", None) or (),
            secret_namespaces=getattr(cluster_scope, "secret_namespaces", None) or (),
            inventory=inventory if isinstance(inventory, Mapping) else None,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Scope:
        """From the CLI's ``SCOPE.json``: ``{"namespaces": [...], "cluster_wide": false,
        "cluster_kinds": [...], "secret_namespaces": [...], "inventory": {ns: [names]}}`` (all but
        ``namespaces`` optional); its ``ips`` map is read with ``ips_from_json``."""
        inventory = data.get("inventory") or None
        if inventory is not None and not (
            isinstance(inventory, Mapping) and all(isinstance(v, list) for v in inventory.values())
        ):
            raise ValueError('"inventory" must be an object mapping namespaces to lists of names')
        for key in ("cluster_kinds", "secret_namespaces"):
            value = data.get(key)
            if value is not None and not (isinstance(value, list) and all(isinstance(x, str) for x in value)):
                raise ValueError(f'"{key}" must be a list of strings')
        return cls.of(
            (str(n) for n in data.get("namespaces") or ()),
            bool(data.get("cluster_wide")),
            cluster_kinds=data.get("cluster_kinds") or (),
            secret_namespaces=data.get("secret_namespaces") or (),
            inventory={str(k): [str(x) for x in v] for k, v in inventory.items()} if inventory else None,
        )

    @staticmethod
    def ips_from_json(data: Mapping[str, Any]) -> dict[str, str]:
        """``SCOPE.json``'s ``ips`` (IP → owning namespace); an IP not listed is unresolvable."""
        ips = data.get("ips") or {}
        if not isinstance(ips, Mapping):
            raise ValueError('"ips" must be an object mapping IP addresses to namespaces')
        return {str(k): str(v) for k, v in ips.items() if v}

    def describe(self) -> str:
        """The caller's own namespaces, for messages to the caller (never anyone else's)."""
        if self.cluster_wide:
            return "the whole cluster"
        return ", ".join(sorted(self.namespaces)) or "no namespaces"


def _resources(kinds: Iterable[str]) -> frozenset[str]:
    return frozenset(resource_name(k) for k in kinds if isinstance(k, str) and k.strip())


@dataclass(frozen=True)
class Refusal:
    """A call refused before it was sent. ``message`` is written for the model / the user and
    names only what the caller supplied or may see."""

    reason: Literal[
        "namespace_out_of_scope",
        "namespace_required",
        "cluster_admin_only",
        "no_scope",
        "invalid_arguments",
        "promql_refused",
        "no_identity",
        "not_enabled",
        "too_many_namespaces",
    ]
    message: str


@dataclass(frozen=True)
class FilterOutcome:
    """What the result filter did. ``data`` is the parsed JSON after filtering (or the text, for
    an unstructured result that was allowed through); ``None`` when withheld. ``removed`` counts
    dropped records; names of what was dropped are never reported."""

    outcome: Literal["kept", "filtered", "withheld"]
    data: Any = None
    removed: int = 0
    reason: str = ""
    redacted: int = 0
    """Credential-shaped values replaced (counted, never shown)."""
    unresolved_ips: frozenset[str] = frozenset()
    """IPs a record's ownership depended on that were missing from ``ips``. Only the records that
    depend on them are withheld (the rest is returned); the caller may resolve them and filter
    again."""
    structured: bool = False
    """The input parsed as JSON or YAML (``data`` is then a parsed value, else the text)."""
    text: str = ""
    """What a model may read: the filtered, redacted result as text (JSON when structured)."""

    def as_json(self) -> dict[str, Any]:
        """The shape ``sleuth filter`` prints."""
        return {"outcome": self.outcome, "result": self.data, "removed": self.removed, "reason": self.reason}


@dataclass(frozen=True)
class ToolRule:
    """How one tool carries namespaces in its arguments.

    ``namespace_args`` hold one namespace each, ``namespace_list_args`` a list (or a comma-separated
    string), ``ref_args`` ``ns/name`` references. ``namespaced`` tools need at least one namespace
    argument unless the caller is cluster-wide. ``cluster_admin_only`` tools are refused (and not
    listed) for everyone else.
    """

    namespace_args: tuple[str, ...] = ("namespace",)
    namespace_list_args: tuple[str, ...] = ("namespaces",)
    ref_args: tuple[str, ...] = ()
    namespaced: bool = True
    cluster_admin_only: bool = False
    promql_args: tuple[str, ...] = ()
    """Arguments holding a PromQL query: rewritten so every selector is pinned to the caller's
    namespaces (a foreign ``namespace="x"`` refuses the call)."""
    fan_out: bool = True
    """When a scoped caller leaves the namespace argument out, call once per namespace of the
    caller and merge (instead of refusing). Servers narrow "no namespace" unpredictably (to the
    kubeconfig's namespace, or to all of them), so an omitted namespace is never sent as such."""
    namespace_required: bool = False
    """The tool's schema requires the namespace argument (then the schema check refuses first)."""

    @classmethod
    def from_tool(
        cls,
        input_schema: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        description: str | None = None,
    ) -> ToolRule:
        """Infer a rule from a listed tool: namespaced when its schema has a namespace argument,
        cluster-admin-only when its ``_meta`` says so."""
        props = (input_schema or {}).get("properties") or {}
        required = set((input_schema or {}).get("required") or ())
        ns_args = tuple(k for k in props if k == "namespace")
        list_args = tuple(k for k in props if k == "namespaces")
        promql = tuple(k for k in props if k in ("query", "promql", "expr") and _mentions_promql(props[k], description))
        admin = bool((meta or {}).get(CLUSTER_ADMIN_META_KEY))
        return cls(
            namespace_args=ns_args or ("namespace",),
            namespace_list_args=list_args or ("namespaces",),
            namespaced=bool(ns_args or list_args),
            cluster_admin_only=admin,
            promql_args=promql,
            namespace_required=bool(required & {*ns_args, *list_args}),
        )

    def merged(self, **changes: Any) -> ToolRule:
        return dataclasses.replace(self, **changes)


def _mentions_promql(prop: Any, description: str | None) -> bool:
    text = f"{prop.get('description', '') if isinstance(prop, Mapping) else ''} {description or ''}".lower()
    return "promql" in text or "prometheus" in text


_DEFAULT_RULE = ToolRule()


@dataclass
class ToolRules:
    """The rules table, keyed by tool name. Unknown tools get the default rule (any argument
    named ``namespace`` / ``namespaces``, namespaced). Rules learned from a server's tool listing
    are merged under explicit entries."""

    rules: dict[str, ToolRule] = field(default_factory=dict)
    default: ToolRule = _DEFAULT_RULE

    def rule_for(self, tool_name: str) -> ToolRule:
        return self.rules.get(tool_name, self.default)

    def learn(self, tool_name: str, rule: ToolRule, *, override: bool = False) -> None:
        """Record a rule inferred from a listing. An explicit entry keeps its argument layout,
        but a server's cluster-admin flag always wins (it can only make the rule stricter)."""
        current = self.rules.get(tool_name)
        if current is None or override:
            self.rules[tool_name] = rule
        elif rule.cluster_admin_only and not current.cluster_admin_only:
            self.rules[tool_name] = dataclasses.replace(current, cluster_admin_only=True)
