"""The RBAC authorizer, table-driven over a small set of roles and bindings."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sleuth_simcluster import Attributes, Authorizer
from sleuth_simcluster._rbac import rule_allows

ROLES = [
    {"kind": "Role", "metadata": {"name": "pod-reader", "namespace": "a"},
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]},
    {"kind": "Role", "metadata": {"name": "one-cm", "namespace": "a"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app"], "verbs": ["get"]}]},
]
CLUSTER_ROLES = [
    {"kind": "ClusterRole", "metadata": {"name": "tenant"},
     "rules": [{"apiGroups": ["", "apps"], "resources": ["pods", "pods/log", "deployments"], "verbs": ["get", "list"]}]},
    {"kind": "ClusterRole", "metadata": {"name": "logs-anywhere"},
     "rules": [{"apiGroups": [""], "resources": ["*/log"], "verbs": ["get"]}]},
    {"kind": "ClusterRole", "metadata": {"name": "pods-star"},
     "rules": [{"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]}]},
    {"kind": "ClusterRole", "metadata": {"name": "everything-read"},
     "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]},
    {"kind": "ClusterRole", "metadata": {"name": "sar"},
     "rules": [{"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}]},
    {"kind": "ClusterRole", "metadata": {"name": "metrics"},
     "rules": [{"nonResourceURLs": ["/metrics", "/logs/*"], "verbs": ["get"]}]},
]
RB = "RoleBinding"
CRB = "ClusterRoleBinding"


def _binding(kind: str, name: str, role_kind: str, role: str, subjects: list[dict], ns: str = "") -> dict:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"kind": kind, "metadata": meta, "roleRef": {"kind": role_kind, "name": role}, "subjects": subjects}


BINDINGS = [
    _binding(RB, "readers", "Role", "pod-reader", [{"kind": "User", "name": "dave"}], "a"),
    _binding(RB, "cm", "Role", "one-cm", [{"kind": "User", "name": "dave"}], "a"),
    _binding(RB, "team-a", "ClusterRole", "tenant", [{"kind": "Group", "name": "team-a"}], "a"),
    _binding(RB, "ci", "ClusterRole", "tenant",
             [{"kind": "ServiceAccount", "name": "ci"}, {"kind": "Group", "name": "system:serviceaccounts:b"}], "b"),
    _binding(RB, "metrics-in-ns", "ClusterRole", "metrics", [{"kind": "User", "name": "nsuser"}], "a"),
    _binding(RB, "dangling", "Role", "does-not-exist", [{"kind": "User", "name": "eve"}], "a"),
    _binding(CRB, "logs", "ClusterRole", "logs-anywhere", [{"kind": "User", "name": "logger"}]),
    _binding(CRB, "star", "ClusterRole", "pods-star", [{"kind": "User", "name": "star"}]),
    _binding(CRB, "all-sa", "ClusterRole", "everything-read", [{"kind": "Group", "name": "system:serviceaccounts"}]),
    _binding(CRB, "sar", "ClusterRole", "sar", [{"kind": "User", "name": "authz"}]),
    _binding(CRB, "metrics", "ClusterRole", "metrics", [{"kind": "Group", "name": "system:authenticated"}]),
    _binding(CRB, "admins", "ClusterRole", "cluster-admin", [{"kind": "Group", "name": "platform"}]),
    _binding(CRB, "sa-admin", "ClusterRole", "cluster-admin",
             [{"kind": "ServiceAccount", "name": "robot", "namespace": "ops"}]),
]

AUTHZ = Authorizer.from_objects(ROLES + CLUSTER_ROLES + BINDINGS)
AUTH = ("system:authenticated",)


@dataclass(frozen=True)
class Case:
    name: str
    attrs: Attributes
    allowed: bool
    reason: str = ""


def res(user: str, verb: str, resource: str, ns: str = "", group: str = "", sub: str = "", name: str = "",
        groups: tuple[str, ...] = AUTH) -> Attributes:
    return Attributes(user, groups, verb, ns, group, resource, sub, name)


def path(user: str, p: str, verb: str = "get", groups: tuple[str, ...] = AUTH) -> Attributes:
    return Attributes(user, groups, verb, path=p)


CASES = [
    Case("role grants pods in its namespace", res("dave", "list", "pods", "a"), True,
         'RBAC: allowed by RoleBinding "readers/a" of Role "pod-reader" to User "dave"'),
    Case("role does not reach another namespace", res("dave", "list", "pods", "b"), False),
    Case("role does not reach the cluster scope", res("dave", "list", "pods"), False),
    Case("pods does not cover pods/log", res("dave", "get", "pods", "a", sub="log", name="x"), False),
    Case("verb not granted", res("dave", "watch", "pods", "a"), False),
    Case("resourceNames allow the named object", res("dave", "get", "configmaps", "a", name="app"), True),
    Case("resourceNames refuse other names", res("dave", "get", "configmaps", "a", name="db"), False),
    Case("resourceNames refuse list", res("dave", "list", "configmaps", "a"), False),
    Case("group subject via RoleBinding of ClusterRole", res("al", "get", "pods", "a", sub="log", name="p",
                                                            groups=("team-a", *AUTH)), True,
         'RBAC: allowed by RoleBinding "team-a/a" of ClusterRole "tenant" to Group "team-a"'),
    Case("ClusterRole via RoleBinding is namespace-bound", res("al", "get", "pods", "b", groups=("team-a",)), False),
    Case("apiGroup must match", res("al", "list", "deployments", "a", group="extensions", groups=("team-a",)), False),
    Case("apps group matches", res("al", "list", "deployments", "a", group="apps", groups=("team-a",)), True),
    Case("*/log covers pods/log", res("logger", "get", "pods", "z", sub="log", name="p"), True),
    Case("*/log does not cover pods", res("logger", "get", "pods", "z", name="p"), False),
    Case("pods/* is not a wildcard (as in Kubernetes)", res("star", "get", "pods", "z", sub="log", name="p"), False),
    Case("* resources cover subresources", res("system:serviceaccount:x:y", "get", "pods", "z", sub="log",
                                              groups=("system:serviceaccounts", *AUTH)), True),
    Case("* resources still need the verb", res("system:serviceaccount:x:y", "delete", "pods", "z",
                                               groups=("system:serviceaccounts", *AUTH)), False),
    Case("ServiceAccount subject defaults to the binding namespace",
         res("system:serviceaccount:b:ci", "list", "pods", "b"), True),
    Case("ServiceAccount of another namespace", res("system:serviceaccount:a:ci", "list", "pods", "b"), False),
    Case("system:serviceaccounts:<ns> group", res("system:serviceaccount:b:other", "list", "pods", "b",
                                                 groups=("system:serviceaccounts:b",)), True),
    Case("ServiceAccount subject of a ClusterRoleBinding", res("system:serviceaccount:ops:robot", "delete",
                                                              "nodes", name="n1"), True),
    Case("system:masters may do anything", res("root", "delete", "secrets", "kube-system",
                                              groups=("system:masters",)), True),
    Case("cluster-admin bootstrap role", res("c", "list", "nodes", groups=("platform", *AUTH)), True,
         'RBAC: allowed by ClusterRoleBinding "admins" of ClusterRole "cluster-admin" to Group "platform"'),
    Case("nobody else may list nodes", res("al", "list", "nodes", groups=("team-a", *AUTH)), False),
    Case("create subjectaccessreviews", res("authz", "create", "subjectaccessreviews",
                                           group="authorization.k8s.io"), True),
    Case("selfsubjectaccessreviews for every authenticated user",
         res("nobody", "create", "selfsubjectaccessreviews", group="authorization.k8s.io"), True),
    Case("subjectaccessreviews need a grant", res("nobody", "create", "subjectaccessreviews",
                                                 group="authorization.k8s.io"), False),
    Case("discovery for authenticated users", path("nobody", "/apis/apps/v1"), True,
         'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" '
         'to Group "system:authenticated"'),
    Case("discovery needs authentication", path("anon", "/api", groups=("system:unauthenticated",)), False),
    Case("health for unauthenticated users", path("anon", "/healthz", groups=("system:unauthenticated",)), True),
    Case("non-resource exact URL", path("u", "/metrics"), True),
    Case("non-resource prefix URL", path("u", "/logs/kubelet.log"), True),
    Case("non-resource other URL", path("u", "/debug/pprof"), False),
    Case("non-resource verb", path("u", "/metrics", verb="post"), False),
    Case("RoleBindings never grant non-resource URLs", path("nsuser", "/metrics", groups=()), False),
    Case("binding to a missing role grants nothing", res("eve", "get", "pods", "a"), False),
    Case("unknown user", res("mallory", "get", "pods", "a"), False),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_authorize(case: Case) -> None:
    decision = AUTHZ.authorize(case.attrs)
    assert decision.allowed is case.allowed
    if case.reason:
        assert decision.reason == case.reason
    if not case.allowed:
        assert decision.reason == ""


def test_snapshot_roles_replace_bootstrap_roles_of_the_same_name() -> None:
    mine = {"kind": "ClusterRole", "metadata": {"name": "view"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    binding = _binding(CRB, "v", "ClusterRole", "view", [{"kind": "User", "name": "u"}])
    authz = Authorizer.from_objects([mine, binding])
    assert authz.authorize(res("u", "get", "configmaps", "x", name="c")).allowed
    assert not authz.authorize(res("u", "get", "pods", "x", name="p")).allowed


def test_bootstrap_view_role_includes_pod_logs_but_not_secrets() -> None:
    binding = _binding(RB, "v", "ClusterRole", "view", [{"kind": "User", "name": "u"}], "x")
    authz = Authorizer.from_objects([binding])
    assert authz.authorize(res("u", "get", "pods", "x", sub="log", name="p")).allowed
    assert not authz.authorize(res("u", "get", "secrets", "x", name="s")).allowed


def test_rules_for_lists_cluster_and_namespace_rules() -> None:
    resource_rules, non_resource = AUTHZ.rules_for("dave", AUTH, "a")
    flat = {(r, v) for rule in resource_rules for r in rule["resources"] for v in rule["verbs"]}
    assert ("pods", "list") in flat and ("configmaps", "get") in flat
    assert any("/metrics" in r["nonResourceURLs"] for r in non_resource)
    assert AUTHZ.rules_for("dave", AUTH, "b")[0] == [
        r for r in AUTHZ.rules_for("nobody", AUTH, "b")[0]]  # nothing of dave's in b


def test_rule_allows_wildcard_verbs_and_groups() -> None:
    rule = {"apiGroups": ["*"], "resources": ["deployments"], "verbs": ["*"]}
    assert rule_allows(res("u", "patch", "deployments", "x", group="apps"), rule)
    assert not rule_allows(res("u", "patch", "statefulsets", "x", group="apps"), rule)
