"""Step 1 of the scope filter: check a call's arguments before it is sent (DESIGN §2)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from sleuth_common.scope._model import Refusal, Scope, ToolRule, ToolRules
from sleuth_common.scope._promql import pin_promql

__all__ = [
    "PreparedCall",
    "check_arguments",
    "default_rules",
    "namespaces_in_arguments",
    "pinned_by_arguments",
    "prepare_call",
    "validate_schema",
]

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
            # kubernetes-mcp-server (toolset core): cluster-wide reads of nodes are for
            # cluster admins; namespaces_list and pods_list are filtered record by record.
            "nodes_log": ToolRule(namespaced=False, cluster_admin_only=True),
            "nodes_stats_summary": ToolRule(namespaced=False, cluster_admin_only=True),
            "nodes_top": ToolRule(namespaced=False, cluster_admin_only=True),
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


# -- the full argument step: schema, rules, PromQL, fan-out ------------------------------------


@dataclass(frozen=True)
class PreparedCall:
    """What to send for one call. ``refusal`` set = send nothing. ``fan_out`` = send once per
    namespace listed, with ``args`` plus ``{namespace_arg: ns}``, and merge. ``pinned`` = the
    arguments limit the call to the caller's namespaces (unstructured text may then pass)."""

    args: dict[str, Any]
    refusal: Refusal | None = None
    fan_out: tuple[str, ...] = ()
    namespace_arg: str = ""
    pinned: bool = False
    rewritten: tuple[str, ...] = ()
    """Arguments that were rewritten (PromQL pinned), by name."""


def validate_schema(tool_name: str, args: Mapping[str, Any], schema: Mapping[str, Any] | None) -> Refusal | None:
    """Refuse arguments that do not match the tool's JSON schema, saying what to change."""
    if not schema or not isinstance(schema, Mapping):
        return None
    try:
        validator = _validator(schema)
    except jsonschema.SchemaError:
        return None  # a server's broken schema is its problem; the server validates too
    errors = sorted(validator.iter_errors(dict(args)), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    props = schema.get("properties") or {}
    problems = []
    for err in errors[:5]:
        where = ".".join(str(p) for p in err.absolute_path)
        if err.validator == "required" and isinstance(err.validator_value, list):
            missing = [r for r in err.validator_value if r not in args]
            problems.append("missing required argument" + ("s " if len(missing) > 1 else " ") + ", ".join(missing))
        elif err.validator == "additionalProperties":
            problems.append(f"unknown argument ({err.message.split('(')[-1].rstrip(')')})")
        else:
            problems.append(f"{where or 'arguments'}: {err.message[:200]}")
    accepted = ", ".join(
        f"{k}{'*' if k in (schema.get('required') or ()) else ''}" for k in list(props)[:20]
    )
    return Refusal(
        "invalid_arguments",
        f"{tool_name} was not called: " + "; ".join(problems)
        + (f". It accepts: {accepted} (* = required)." if accepted else "."),
    )


@functools.lru_cache(maxsize=512)
def _cached_validator(schema_json: str) -> Any:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _validator(schema: Mapping[str, Any]) -> Any:
    return _cached_validator(json.dumps(schema, sort_keys=True, default=str))


def prepare_call(
    tool_name: str,
    args: Mapping[str, Any] | None,
    scope: Scope,
    rules: ToolRules | None = None,
    *,
    schema: Mapping[str, Any] | None = None,
    max_fan_out: int = 20,
) -> PreparedCall:
    """Everything that happens to a call's arguments before it is sent (DESIGN §2 step 1):
    JSON-schema check, namespace rules, cluster-admin-only, PromQL pinning, and the fan-out over
    the caller's namespaces when a namespace argument was left out."""
    args = dict(args or {})
    rule = (rules or default_rules()).rule_for(tool_name)
    refusal = None if _fans_out(rule, args, scope) else check_arguments(tool_name, args, scope, rules)
    if refusal is not None:
        return PreparedCall(args, refusal)
    rewritten: list[str] = []
    promql_pinned = False
    for key in rule.promql_args:
        query = args.get(key)
        if not isinstance(query, str) or not query.strip():
            continue
        pinned_q = pin_promql(query, scope)
        if pinned_q.outcome == "refused":
            return PreparedCall(args, Refusal("promql_refused", f"{tool_name}: {pinned_q.reason}"))
        if pinned_q.outcome == "rewritten":
            args[key] = pinned_q.query
            rewritten.append(key)
        promql_pinned = not scope.cluster_wide
    if not scope.cluster_wide:
        # "all namespaces" switches a server defaults to true are switched off explicitly.
        props = (schema or {}).get("properties") or {}
        for flag in _ALL_NAMESPACES_FLAGS:
            if flag in props and flag not in args:
                args[flag] = False
    if _fans_out(rule, args, scope):
        names = sorted(scope.namespaces)
        if len(names) > max_fan_out:
            return PreparedCall(
                args,
                Refusal(
                    "too_many_namespaces",
                    f"{tool_name} without a namespace would be asked once for each of your "
                    f"{len(names)} namespaces; pass one namespace argument ({scope.describe()}).",
                ),
            )
        key = rule.namespace_args[0]
        refusal = validate_schema(tool_name, {**args, key: names[0]}, schema)
        if refusal is not None:
            return PreparedCall(args, refusal)
        return PreparedCall(args, None, tuple(names), key, True, tuple(rewritten))
    refusal = validate_schema(tool_name, args, schema)
    if refusal is not None:
        return PreparedCall(args, refusal)
    pinned = pinned_by_arguments(tool_name, args, scope, rules) or promql_pinned
    return PreparedCall(args, None, (), "", pinned, tuple(rewritten))


def _fans_out(rule: ToolRule, args: Mapping[str, Any], scope: Scope) -> bool:
    return (
        not scope.cluster_wide
        and not scope.empty
        and rule.namespaced
        and rule.fan_out
        and not rule.cluster_admin_only
        and bool(rule.namespace_args)
        and not namespaces_in_arguments(args, rule)
        and not any(args.get(flag) is True for flag in _ALL_NAMESPACES_FLAGS)
    )
