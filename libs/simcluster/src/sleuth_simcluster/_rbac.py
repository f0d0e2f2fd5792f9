"""RBAC authorization over Role/ClusterRole/RoleBinding/ClusterRoleBinding objects.

A pure module: plain dicts in, `Decision`s out. It follows kube-apiserver's RBAC authorizer
(`plugin/pkg/auth/authorizer/rbac`): ClusterRoleBindings grant everywhere, RoleBindings (of a Role
or a ClusterRole) only in their own namespace and never for non-resource URLs; a rule's resource
`pods` does not cover `pods/log`, `*` and `*/log` do (`pods/*` is not a wildcard in Kubernetes
either); `system:masters` may do everything. The bootstrap roles a real cluster always has
(`cluster-admin`, `view`, `system:discovery`, `system:basic-user`, `system:public-info-viewer`)
are built in unless the snapshot defines its own of the same name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"


@dataclass(frozen=True)
class Attributes:
    """What a request wants: a resource request, or a non-resource `path` when `resource` is empty."""

    user: str
    groups: tuple[str, ...]
    verb: str
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""

    @property
    def is_resource_request(self) -> bool:
        return bool(self.resource)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def rule_allows(attrs: Attributes, rule: Obj) -> bool:
    """`RuleAllows`: does one PolicyRule cover the request?"""
    verbs = rule.get("verbs") or ()
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.is_resource_request:
        return any(u == "*" or u == attrs.path or (u.endswith("*") and attrs.path.startswith(u[:-1]))
                   for u in rule.get("nonResourceURLs") or ())
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and attrs.api_group not in groups:
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not any(
        r == "*" or r == combined
        or (attrs.subresource and r == f"*/{attrs.subresource}")
        for r in rule.get("resources") or ()
    ):
        return False
    names = rule.get("resourceNames") or ()
    return not names or attrs.name in names


_READ = ["get", "list", "watch"]
_BOOTSTRAP_ROLES: dict[str, list[Obj]] = {
    "cluster-admin": [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ],
    "view": [
        {"apiGroups": [""], "verbs": _READ, "resources": [
            "configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
            "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
            "services/status", "bindings", "events", "limitranges", "namespaces/status", "pods/log",
            "pods/status", "replicationcontrollers/status", "resourcequotas", "resourcequotas/status",
            "namespaces"]},
        {"apiGroups": ["apps"], "verbs": _READ, "resources": [
            "controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
            "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
            "statefulsets/scale", "statefulsets/status"]},
        {"apiGroups": ["autoscaling"], "verbs": _READ,
         "resources": ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]},
        {"apiGroups": ["batch"], "verbs": _READ,
         "resources": ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]},
        {"apiGroups": ["policy"], "verbs": _READ,
         "resources": ["poddisruptionbudgets", "poddisruptionbudgets/status"]},
        {"apiGroups": ["networking.k8s.io"], "verbs": _READ,
         "resources": ["ingresses", "ingresses/status", "networkpolicies"]},
        {"apiGroups": ["events.k8s.io"], "verbs": _READ, "resources": ["events"]},
    ],
    "system:discovery": [{"verbs": ["get"], "nonResourceURLs": [
        "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
        "/readyz", "/version", "/version/"]}],
    "system:basic-user": [{"apiGroups": ["authorization.k8s.io"], "verbs": ["create"],
                           "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                          {"apiGroups": ["authentication.k8s.io"], "verbs": ["create"],
                           "resources": ["selfsubjectreviews"]}],
    "system:public-info-viewer": [{"verbs": ["get"], "nonResourceURLs": [
        "/healthz", "/livez", "/readyz", "/version", "/version/"]}],
}
_BOOTSTRAP_BINDINGS: list[tuple[str, list[str]]] = [
    ("cluster-admin", [MASTERS]),
    ("system:discovery", [AUTHENTICATED]),
    ("system:basic-user", [AUTHENTICATED]),
    ("system:public-info-viewer", [AUTHENTICATED, UNAUTHENTICATED]),
]


def _meta(obj: Obj, key: str) -> str:
    return str((obj.get("metadata") or {}).get(key) or "")


@dataclass(frozen=True)
class _Grant:
    """One subject of one binding: where it applies and the rules it grants."""

    binding_kind: str  # "ClusterRoleBinding" | "RoleBinding"
    binding: str  # name, or name/namespace for RoleBindings (as RBAC's reasons print it)
    namespace: str  # "" for ClusterRoleBindings
    role_kind: str
    role: str
    subject: str  # `Group "team-a"`
    rules: tuple[Obj, ...]

    def describe(self) -> str:
        return f'{self.binding_kind} "{self.binding}" of {self.role_kind} "{self.role}" to {self.subject}'


class Authorizer:
    """Answers `authorize(Attributes)`; index built once from the RBAC objects."""

    def __init__(self, roles: Iterable[Obj] = (), cluster_roles: Iterable[Obj] = (),
                 role_bindings: Iterable[Obj] = (), cluster_role_bindings: Iterable[Obj] = ()) -> None:
        croles = {name: list(rules) for name, rules in _BOOTSTRAP_ROLES.items()}
        croles.update({_meta(r, "name"): list(r.get("rules") or ()) for r in cluster_roles})
        nroles = {(_meta(r, "namespace"), _meta(r, "name")): list(r.get("rules") or ()) for r in roles}
        crbs: list[Obj] = [
            {"metadata": {"name": name}, "roleRef": {"kind": "ClusterRole", "name": name},
             "subjects": [{"kind": "Group", "name": g} for g in groups]}
            for name, groups in _BOOTSTRAP_BINDINGS
        ]
        crbs += list(cluster_role_bindings)
        # subject key ("User"|"Group", name) -> grants, ClusterRoleBindings first as RBAC visits them
        self._grants: dict[tuple[str, str], list[_Grant]] = defaultdict(list)
        for binding_kind, bindings in (("ClusterRoleBinding", crbs), ("RoleBinding", list(role_bindings))):
            for b in bindings:
                ns = _meta(b, "namespace") if binding_kind == "RoleBinding" else ""
                ref = b.get("roleRef") or {}
                role_kind, role = str(ref.get("kind") or ""), str(ref.get("name") or "")
                if role_kind == "ClusterRole":
                    rules = croles.get(role)
                elif role_kind == "Role" and ns:
                    rules = nroles.get((ns, role))
                else:
                    rules = None
                if rules is None:
                    continue
                label = f"{_meta(b, 'name')}/{ns}" if ns else _meta(b, "name")
                for s in b.get("subjects") or ():
                    key, described = self._subject(s, ns)
                    if key is not None:
                        self._grants[key].append(
                            _Grant(binding_kind, label, ns, role_kind, role, described, tuple(rules)))

    @staticmethod
    def _subject(s: Obj, binding_ns: str) -> tuple[tuple[str, str] | None, str]:
        kind, name = str(s.get("kind") or ""), str(s.get("name") or "")
        if kind in ("User", "Group"):
            return (kind, name), f'{kind} "{name}"'
        if kind == "ServiceAccount":
            ns = str(s.get("namespace") or binding_ns)
            if not ns:
                return None, ""
            return ("User", f"system:serviceaccount:{ns}:{name}"), f'ServiceAccount "{ns}/{name}"'
        return None, ""

    @classmethod
    def from_objects(cls, objects: Iterable[Obj]) -> Authorizer:
        by_kind: dict[str, list[Obj]] = defaultdict(list)
        for obj in objects:
            by_kind[str(obj.get("kind"))].append(obj)
        return cls(by_kind["Role"], by_kind["ClusterRole"], by_kind["RoleBinding"], by_kind["ClusterRoleBinding"])

    def _applicable(self, user: str, groups: Iterable[str], namespace: str) -> Iterable[_Grant]:
        keys = [("User", user)] + [("Group", g) for g in dict.fromkeys(groups)]
        for scope_cluster in (True, False):
            for key in keys:
                for grant in self._grants.get(key, ()):
                    if scope_cluster and not grant.namespace:
                        yield grant
                    elif not scope_cluster and grant.namespace and grant.namespace == namespace:
                        yield grant

    def authorize(self, attrs: Attributes) -> Decision:
        if MASTERS in attrs.groups:
            return Decision(True, "")
        namespace = attrs.namespace if attrs.is_resource_request else ""
        for grant in self._applicable(attrs.user, attrs.groups, namespace):
            for rule in grant.rules:
                if rule_allows(attrs, rule):
                    return Decision(True, f"RBAC: allowed by {grant.describe()}")
        return Decision(False, "")

    def rules_for(self, user: str, groups: Iterable[str], namespace: str) -> tuple[list[Obj], list[Obj]]:
        """(resourceRules, nonResourceRules) as a SelfSubjectRulesReview lists them."""
        groups = tuple(groups)
        if MASTERS in groups:
            return ([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                    [{"verbs": ["*"], "nonResourceURLs": ["*"]}])
        resource_rules: list[Obj] = []
        non_resource: list[Obj] = []
        for grant in self._applicable(user, groups, namespace):
            for rule in grant.rules:
                if rule.get("nonResourceURLs"):
                    if not grant.namespace:
                        non_resource.append({"verbs": list(rule.get("verbs") or ()),
                                             "nonResourceURLs": list(rule["nonResourceURLs"])})
                else:
                    out = {k: list(rule.get(k) or ()) for k in ("verbs", "apiGroups", "resources", "resourceNames")}
                    resource_rules.append({k: v for k, v in out.items() if v or k != "resourceNames"})
        return resource_rules, non_resource
