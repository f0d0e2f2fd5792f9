"""The values the scope filter works with: a caller's scope on one cluster, per-tool rules,
and the outcomes of the two checks (arguments before a call, results after it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CLUSTER_ADMIN_META_KEY",
    "FilterOutcome",
    "Refusal",
    "Scope",
    "ToolRule",
    "ToolRules",
]

CLUSTER_ADMIN_META_KEY = "sleuth/cluster_admin_only"
"""``_meta`` key an MCP server sets on a tool that only cluster-wide callers may use."""


@dataclass(frozen=True)
class Scope:
    """What one caller may read on one cluster: the namespaces where they may ``get pods``,
    and ``cluster_wide`` when a cluster-scope check passed (then nothing is filtered)."""

    namespaces: frozenset[str] = frozenset()
    cluster_wide: bool = False

    def allows(self, namespace: str) -> bool:
        return self.cluster_wide or namespace in self.namespaces

    @property
    def empty(self) -> bool:
        return not self.cluster_wide and not self.namespaces

    @classmethod
    def of(cls, namespaces: Iterable[str] = (), cluster_wide: bool = False) -> Scope:
        return cls(frozenset(namespaces), cluster_wide)

    @classmethod
    def from_cluster_scope(cls, cluster_scope: Any | None) -> Scope:
        """From a ``sleuth_common.messages.ClusterScope`` (``None`` = nothing on that cluster)."""
        if cluster_scope is None:
            return cls()
        return cls(frozenset(cluster_scope.namespaces), bool(cluster_scope.cluster_wide))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Scope:
        """From the CLI's ``SCOPE.json`` (``{"namespaces": [...], "cluster_wide": false}``);
        its ``ips`` map is read with ``ips_from_json``."""
        return cls(frozenset(str(n) for n in data.get("namespaces") or ()), bool(data.get("cluster_wide")))

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
    """IPs a record's ownership depended on that were missing from ``ips`` (the caller may resolve
    them and filter again; still ``withheld`` until then)."""
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
