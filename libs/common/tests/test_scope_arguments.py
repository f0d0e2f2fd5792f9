"""Arguments are checked before a call is sent: a refused call never reaches the server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from sleuth_common.scope import (
    Scope,
    ToolRule,
    ToolRules,
    check_arguments,
    default_rules,
    pinned_by_arguments,
)

ALICE = Scope.of(["team-a"])
CAROL = Scope.of([], cluster_wide=True)


@dataclass(frozen=True)
class Case:
    name: str
    tool: str
    args: dict[str, Any]
    refusal: str | None  # reason, or None when allowed


CASES = [
    Case("own namespace", "list_pods", {"namespace": "team-a"}, None),
    Case("foreign namespace", "list_pods", {"namespace": "team-b"}, "namespace_out_of_scope"),
    Case("no namespace", "list_pods", {}, "namespace_required"),
    Case("empty namespace", "list_events", {"namespace": ""}, "namespace_required"),
    Case(
        "namespaces list mixed", "list_pods", {"namespaces": ["team-a", "team-b"]}, "namespace_out_of_scope"
    ),
    Case("namespaces csv", "list_pods", {"namespaces": "team-a,team-a"}, None),
    Case("wildcard", "list_pods", {"namespace": "*"}, "namespace_out_of_scope"),
    Case(
        "all namespaces flag",
        "list_pods",
        {"namespace": "team-a", "all_namespaces": True},
        "namespace_required",
    ),
    Case("cluster admin tool", "list_nodes", {}, "cluster_admin_only"),
    Case("get_resource cluster-scoped", "get_resource", {"kind": "Node", "name": "n1"}, "namespace_required"),
    Case("get_resource own", "get_resource", {"kind": "ConfigMap", "name": "x", "namespace": "team-a"}, None),
    Case("unknown tool with namespace", "frobnicate", {"namespace": "team-b"}, "namespace_out_of_scope"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_arguments_for_a_namespaced_caller(case: Case) -> None:
    refusal = check_arguments(case.tool, case.args, ALICE, default_rules())
    assert (refusal.reason if refusal else None) == case.refusal


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cluster_wide_caller_may_call_anything(case: Case) -> None:
    assert check_arguments(case.tool, case.args, CAROL, default_rules()) is None


def test_refusal_lists_only_the_callers_own_namespaces() -> None:
    scope = Scope.of(["team-a", "shop"])
    refusal = check_arguments("list_pods", {}, scope)
    assert refusal is not None
    assert "shop" in refusal.message and "team-a" in refusal.message
    refusal = check_arguments("list_pods", {"namespace": "team-b"}, scope)
    assert refusal is not None
    # the requested name is echoed (the caller typed it) but no other namespace appears
    assert "team-b" in refusal.message


def test_ns_name_reference_arguments() -> None:
    rules = ToolRules({"trace": ToolRule(namespace_args=(), ref_args=("target",))})
    assert check_arguments("trace", {"target": "team-a/api"}, ALICE, rules) is None
    refusal = check_arguments("trace", {"target": "team-b/api"}, ALICE, rules)
    assert refusal is not None and refusal.reason == "namespace_out_of_scope"
    assert check_arguments("trace", {"target": "api"}, ALICE, rules).reason == "namespace_required"


def test_empty_scope_is_refused() -> None:
    refusal = check_arguments("list_pods", {"namespace": "team-a"}, Scope())
    assert refusal is not None and refusal.reason == "no_scope"


def test_rules_learned_from_a_listing() -> None:
    rule = ToolRule.from_tool(
        {"properties": {"namespace": {"type": "string"}}}, {"sleuth/cluster_admin_only": False}
    )
    assert rule.namespaced and not rule.cluster_admin_only
    admin = ToolRule.from_tool({"properties": {}}, {"sleuth/cluster_admin_only": True})
    assert admin.cluster_admin_only and not admin.namespaced
    rules = default_rules()
    rules.learn("list_pods", admin)  # a server can only make an explicit rule stricter
    assert rules.rule_for("list_pods").cluster_admin_only
    assert rules.rule_for("list_pods").namespaced


def test_pinned_by_arguments() -> None:
    assert pinned_by_arguments("pod_logs", {"namespace": "team-a", "name": "p"}, ALICE)
    assert not pinned_by_arguments("pod_logs", {"name": "p"}, ALICE)
    assert not pinned_by_arguments("pod_logs", {"namespace": "team-b"}, ALICE)
    assert pinned_by_arguments("anything", {}, CAROL)
