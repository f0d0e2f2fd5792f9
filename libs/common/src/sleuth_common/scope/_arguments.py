"""Step 1 of the scope filter: check a call's arguments before it is sent (DESIGN §2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleuth_common.scope._model import Refusal, Scope, ToolRule, ToolRules

__all__ = ["check_arguments", "default_rules", "namespaces_in_arguments", "pinned_by_arguments"]

_ALL_NAMESPACES_FLAGS = ("all_namespaces", "allNamespaces", "all-namespaces", "A")


def default_rules() -> ToolRules:
    """The rules for the tools of Sleuth's kube-mcp. Tools not named here use the default rule."""
    namespaced = ToolRule()
    return ToolRules(
        {
            "list_pods": namespaced,
            "get_pod": namespaced,
            "pod_logs": namespaced,
            "list_events": namespaced,
            "list_workloads": namespaced,
            "list_services": namespaced,
            "list_pvcs": namespaced,
            "list_quotas": namespaced,
            # A cluster-scoped kind (no namespace) is a cluster-wide read.
            "get_resource": namespaced,
            "list_nodes": ToolRule(namespaced=False, cluster_admin_only=True),
        }
    )


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple | set | frozenset):
        return [str(v).strip() for v in value if str(v).strip()]
    return [str(value)]


def namespaces_in_arguments(args: Mapping[str, Any], rule: ToolRule) -> list[str]:
    """Every namespace the arguments name, in the order given (duplicates kept)."""
    found: list[str] = []
    for key in rule.namespace_args:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            found.append(value.strip())
        elif value not in (None, ""):
            found.extend(_as_list(value))
    for key in rule.namespace_list_args:
        found.extend(_as_list(args.get(key)))
    for key in rule.ref_args:
        for ref in _as_list(args.get(key)):
            ns, sep, _name = ref.partition("/")
            # A bare name without "ns/" carries no namespace of its own.
            if sep:
                found.append(ns)
    return found


def check_arguments(
    tool_name: str, args: Mapping[str, Any] | None, scope: Scope, rules: ToolRules | None = None
) -> Refusal | None:
    """``None`` when the call may be sent, else why not. Cluster-wide callers may call anything."""
    if scope.cluster_wide:
        return None
    rule = (rules or default_rules()).rule_for(tool_name)
    args = args or {}
    if rule.cluster_admin_only:
        return Refusal(
            "cluster_admin_only",
            f"{tool_name} reads cluster-wide data and needs cluster-wide access; "
            f"you can read only these namespaces: {scope.describe()}.",
        )
    if scope.empty:
        return Refusal("no_scope", "You do not have read access to any namespace on this cluster.")
    if any(args.get(flag) is True for flag in _ALL_NAMESPACES_FLAGS):
        return Refusal(
            "namespace_required",
            f"{tool_name} across all namespaces needs cluster-wide access; pass one of your "
            f"namespaces instead: {scope.describe()}.",
        )
    named = namespaces_in_arguments(args, rule)
    outside = [ns for ns in named if ns not in scope.namespaces]
    if outside:
        # Only the namespaces the caller supplied are echoed back, never anyone else's.
        listed = ", ".join(dict.fromkeys(outside))
        return Refusal(
            "namespace_out_of_scope",
            f"You do not have access to namespace {listed}. Your namespaces: {scope.describe()}.",
        )
    if rule.namespaced and not named:
        return Refusal(
            "namespace_required",
            f"{tool_name} needs a namespace argument; you can read only these namespaces: "
            f"{scope.describe()}.",
        )
    return None


def pinned_by_arguments(
    tool_name: str, args: Mapping[str, Any] | None, scope: Scope, rules: ToolRules | None = None
) -> bool:
    """True when the arguments name at least one namespace and every one is in scope: the
    server can only have answered about the caller's own namespaces."""
    if scope.cluster_wide:
        return True
    rule = (rules or default_rules()).rule_for(tool_name)
    named = namespaces_in_arguments(args or {}, rule)
    return bool(named) and all(ns in scope.namespaces for ns in named)
