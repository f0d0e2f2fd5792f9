"""Sleuth's own identities, added to a snapshot that does not define them (DESIGN §4).

A snapshot only needs its tenants. What Sleuth itself needs to run against it — the way the Helm
chart installs it on a real cluster — is added here, each piece only when the snapshot has none of
that name (a snapshot's own definition always wins):

- user ``sleuth-reader`` (group ``sleuth:readers``): kube-mcp's identity. ClusterRole
  ``sleuth-reader`` (read-only, no Secrets) and ClusterRole ``sleuth-impersonator`` (``impersonate``
  on users, groups and serviceaccounts), so kube-mcp reads *as the asker* and the API server
  authorizes every read with the asker's RBAC. The impersonator binding names both the group and the
  user, so it also applies to snapshots that define the reader's groups differently.
- user ``sleuth-authz`` (group ``sleuth:authz``): authz-cache's identity. ClusterRole ``sleuth-authz``:
  ``create`` SubjectAccessReviews and TokenReviews, ``list`` namespaces, and ``list`` pods, services
  and endpoints (the IP index and the name inventory).

Nothing here is granted to any tenant: a snapshot that binds ``impersonate`` to a tenant does so
itself (``cluster-admin``, with its ``*`` verbs, can impersonate — as on a real cluster).
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Any

from ._store import Store

Obj = dict[str, Any]

READER = "sleuth-reader"
READER_GROUP = "sleuth:readers"
AUTHZ = "sleuth-authz"
AUTHZ_GROUP = "sleuth:authz"
IMPERSONATOR = "sleuth-impersonator"

_RBAC = "rbac.authorization.k8s.io"
_ROLES = (_RBAC, "clusterroles")
_BINDINGS = (_RBAC, "clusterrolebindings")
_READ = ["get", "list", "watch"]
_LABELS = {"app.kubernetes.io/name": "sleuth", "app.kubernetes.io/managed-by": "simcluster"}

ROLES: dict[str, list[Obj]] = {
    READER: [
        {"apiGroups": [""], "verbs": _READ, "resources": [
            "pods", "pods/log", "pods/status", "services", "endpoints", "configmaps", "events",
            "persistentvolumeclaims", "persistentvolumes", "nodes", "nodes/status", "namespaces",
            "resourcequotas", "limitranges", "serviceaccounts", "replicationcontrollers"]},
        {"apiGroups": ["apps", "batch", "policy", "autoscaling", "networking.k8s.io", "storage.k8s.io",
                       "rbac.authorization.k8s.io", "events.k8s.io", "discovery.k8s.io", "metrics.k8s.io",
                       "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io"],
         "resources": ["*"], "verbs": _READ},
    ],
    IMPERSONATOR: [
        {"apiGroups": [""], "resources": ["users", "groups", "serviceaccounts"], "verbs": ["impersonate"]},
    ],
    AUTHZ: [
        {"apiGroups": [""], "resources": ["namespaces", "pods", "services", "endpoints"], "verbs": ["list"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    ],
}
BINDINGS: dict[str, tuple[str, list[Obj]]] = {
    READER: (READER, [{"kind": "Group", "apiGroup": _RBAC, "name": READER_GROUP}]),
    IMPERSONATOR: (IMPERSONATOR, [{"kind": "Group", "apiGroup": _RBAC, "name": READER_GROUP},
                                  {"kind": "User", "apiGroup": _RBAC, "name": READER}]),
    AUTHZ: (AUTHZ, [{"kind": "Group", "apiGroup": _RBAC, "name": AUTHZ_GROUP}]),
}
USERS: dict[str, Obj] = {READER: {"groups": [READER_GROUP]}, AUTHZ: {"groups": [AUTHZ_GROUP]}}


def add_sleuth_identities(store: Store, users: Collection[str]) -> dict[str, Obj]:
    """Add the missing RBAC objects to ``store`` (before it is sealed); answers the user specs
    (``snapshot.yaml`` form, tokens made up) of Sleuth's identities missing from ``users``."""
    for name, rules in ROLES.items():
        if store.get(_ROLES, "", name) is None:
            store.add({"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole",
                       "metadata": {"name": name, "labels": dict(_LABELS)}, "rules": copy.deepcopy(rules)},
                      origin="(simcluster: Sleuth's identities)")
    for name, (role, subjects) in BINDINGS.items():
        if store.get(_BINDINGS, "", name) is None:
            store.add({"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRoleBinding",
                       "metadata": {"name": name, "labels": dict(_LABELS)},
                       "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
                       "subjects": copy.deepcopy(subjects)},
                      origin="(simcluster: Sleuth's identities)")
    return {name: dict(spec) for name, spec in USERS.items() if name not in users}
