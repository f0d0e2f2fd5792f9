"""Cluster-scoped objects and Secrets (DESIGN §2): a Node, PV, StorageClass, ClusterRole … is shown
only to a caller who may list that kind cluster-wide; a Namespace only when it is the caller's;
a Secret only where the caller may ``get secrets``, and its data values never. An IP attributes a
record only through ``ips`` (pod IPs), so a node's IP never makes a Node anyone's."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from sleuth_common.messages import ClusterScope
from sleuth_common.redact import REDACTED
from sleuth_common.scope import Scope, filter_result

ALICE = Scope.of(["team-a"])
NODE_READER = Scope.of(["team-a"], cluster_kinds=["nodes"])
STORAGE_READER = Scope.of(["team-a"], cluster_kinds=["persistentvolumes", "storageclasses"])
SECRET_READER = Scope.of(["team-a"], secret_namespaces=["team-a"])
ADMIN = Scope.of([], cluster_wide=True)
META = {"uid": "0f1e", "resourceVersion": "42", "creationTimestamp": "2026-01-01T00:00:00Z"}


def _node(name: str, ip: str = "10.0.0.5", kind: bool = True) -> dict[str, Any]:
    node: dict[str, Any] = {
        "metadata": {"name": name, **META},
        "spec": {"podCIDR": "10.244.1.0/24", "providerID": f"aws:///{name}"},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}], "nodeInfo": {"kubeletVersion": "v1.30.1"}},
    }
    if kind:
        node = {"apiVersion": "v1", "kind": "Node", **node}
    return node


def _ns(name: str, kind: bool = True) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}, **META},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"},
    }
    return {"apiVersion": "v1", "kind": "Namespace", **obj} if kind else obj


def _pv(name: str, claim_ns: str | None, kind: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "10Gi"}, "persistentVolumeReclaimPolicy": "Delete"}
    if claim_ns:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": claim_ns, "name": f"data-{name}"}
    obj: dict[str, Any] = {"metadata": {"name": name, **META}, "spec": spec}
    return {"apiVersion": "v1", "kind": "PersistentVolume", **obj} if kind else obj


def _secret(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"namespace": ns, "name": name, **META},
            "data": {"password": "aHVudGVyMmh1bnRlcjI=", "username": "YWRtaW4="},
            "stringData": {"token": "s3cr3t-token-value"}}


@dataclass(frozen=True)
class Case:
    name: str
    doc: Any
    scope: Scope
    outcome: str
    shown: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    pinned: bool = False
    ips: dict[str, str] = field(default_factory=dict)


CASES = [
    # B: cluster-scoped kinds
    Case("a Node is withheld from a namespace user", [_node("node-7")], ALICE, "withheld", hidden=("node-7",)),
    Case("… also from a pinned call", [_node("node-7")], ALICE, "withheld", hidden=("node-7",), pinned=True),
    Case("… shown to a caller who may list nodes", [_node("node-7")], NODE_READER, "kept", shown=("node-7",)),
    Case("a NodeList's kind-less items are Nodes", {"kind": "NodeList", "items": [_node("node-7", kind=False)]},
         ALICE, "withheld", hidden=("node-7",), pinned=True),
    Case("a Table of nodes (PartialObjectMetadata rows) is withheld",
         {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "columnDefinitions": [{"name": "Name", "type": "string"}],
          "rows": [{"cells": ["node-7"], "object": {"kind": "PartialObjectMetadata", "metadata": {"name": "node-7", **META}}}]},
         ALICE, "withheld", hidden=("node-7",), pinned=True),
    Case("Namespaces listed 'in team-a' show only team-a",
         {"kind": "NamespaceList", "items": [_ns("team-a"), _ns("team-b"), _ns("kube-system")]}, ALICE, "filtered",
         shown=("team-a",), hidden=("team-b", "kube-system"), pinned=True),
    Case("kind-less Namespace objects are recognised by shape",
         [_ns("team-a", kind=False), _ns("team-b", kind=False)], ALICE, "filtered", shown=("team-a",),
         hidden=("team-b",), pinned=True),
    Case("a caller who may list namespaces sees them all",
         {"kind": "NamespaceList", "items": [_ns("team-a"), _ns("team-b")]},
         Scope.of(["team-a"], cluster_kinds=["namespaces"]), "kept", shown=("team-a", "team-b")),
    Case("an unbound PV is withheld", [_pv("pv-free", None)], ALICE, "withheld", hidden=("pv-free",)),
    Case("a PV bound to the caller's claim is still the cluster's", [_pv("pv-mine", "team-a")], ALICE, "withheld",
         hidden=("pv-mine",)),
    Case("a kind-less PV (by its claimRef) is withheld", {"items": [_pv("pv-mine", "team-a", kind=False)]}, ALICE,
         "withheld", hidden=("pv-mine",)),
    Case("PVs for a caller who may list them", [_pv("pv-mine", "team-a"), _pv("pv-free", None)], STORAGE_READER,
         "kept", shown=("pv-mine", "pv-free")),
    Case("kube-mcp list_storage records (cluster_scoped: true)",
         {"cluster_scoped": True, "count": 2, "items": [
             {"kind": "StorageClass", "name": "fast-ssd", "cluster_scoped": True, "provisioner": "ebs.csi.aws.com"},
             {"kind": "PersistentVolume", "name": "pv-0042", "cluster_scoped": True,
              "claim": {"namespace": "team-a", "name": "data"}}]},
         ALICE, "withheld", hidden=("fast-ssd", "pv-0042")),
    Case("kube-mcp list_storage for a storage reader",
         {"cluster_scoped": True, "count": 1, "items": [
             {"kind": "StorageClass", "name": "fast-ssd", "cluster_scoped": True}]},
         STORAGE_READER, "kept", shown=("fast-ssd",)),
    Case("ClusterRoles and bindings by kind",
         [{"kind": "ClusterRole", "metadata": {"name": "admin-everything"}, "rules": []},
          {"kind": "ClusterRoleBinding", "metadata": {"name": "bind-ops"},
           "subjects": [{"kind": "ServiceAccount", "namespace": "team-a", "name": "ci"}]}],
         ALICE, "withheld", hidden=("admin-everything", "bind-ops"), pinned=True),
    Case("a kube-mcp subgraph keeps the pod and drops the Node node",
         {"namespace": "team-a", "focus": "Pod/team-a/api-0",
          "nodes": [{"id": "Pod/team-a/api-0", "kind": "Pod", "name": "api-0", "namespace": "team-a"},
                    {"id": "Node/node-7", "kind": "Node", "name": "node-7", "cluster_scoped": True,
                     "kubelet_version": "v1.30"}],
          "edges": [{"from": "Pod/team-a/api-0", "to": "Node/node-7", "rel": "runs-on"}]},
         ALICE, "filtered", shown=("api-0", "runs-on"), hidden=("kubelet_version", "v1.30")),
    # C: IPs never claim a Node
    Case("a Node whose IP the resolver maps to the caller is still withheld",
         [_node("node-7", ip="10.0.0.5")], ALICE, "withheld", hidden=("node-7",), ips={"10.0.0.5": "team-a"}),
    Case("kube-mcp node records (no kind) are Nodes by shape",
         [{"name": "node-7", "ready": "True", "kubelet_version": "v1.30", "addresses": {"InternalIP": "10.0.0.5"}}],
         ALICE, "withheld", hidden=("node-7",), pinned=True, ips={"10.0.0.5": "team-a"}),
    Case("a hostNetwork pod's IP attributes the pod record only",
         [{"metadata": {"namespace": "team-a", "name": "agent-1"}, "spec": {"hostNetwork": True},
           "status": {"podIP": "10.0.0.5"}}, _node("node-7", ip="10.0.0.5")],
         ALICE, "filtered", shown=("agent-1",), hidden=("node-7", "podCIDR"), ips={"10.0.0.5": "team-a"}),
    # Secrets
    Case("a Secret without get-secrets permission is withheld", [_secret("team-a", "db-creds")], ALICE, "withheld",
         hidden=("db-creds", "aHVudGVy"), pinned=True),
    Case("a Secret with permission: names kept, values never",
         [_secret("team-a", "db-creds")], SECRET_READER, "kept",
         shown=("db-creds", '"password":"[REDACTED]"', '"username":"[REDACTED]"'),
         hidden=("aHVudGVy", "YWRtaW4", "s3cr3t-token-value")),
    Case("a foreign Secret is dropped even with permission at home",
         [_secret("team-a", "db-creds"), _secret("team-b", "pay-creds")], SECRET_READER, "filtered",
         shown=("db-creds",), hidden=("pay-creds", "team-b")),
    Case("a SecretList's kind-less items are Secrets",
         {"kind": "SecretList", "items": [{"metadata": {"namespace": "team-a", "name": "db-creds"}, "data": {"k": "djE="}}]},
         ALICE, "withheld", hidden=("db-creds", "djE=")),
    Case("records under a secrets listing are Secrets",
         {"namespace": "team-a", "secrets": [{"name": "db-creds", "type": "Opaque", "data": {"k": "djE="}}]},
         ALICE, "filtered", hidden=("db-creds", "djE=")),
    Case("a ServiceAccount's secret references are names, not Secrets",
         {"kind": "ServiceAccount", "metadata": {"namespace": "team-a", "name": "ci"}, "secrets": [{"name": "ci-token-x1"}]},
         ALICE, "kept", shown=("ci-token-x1",)),
    Case("a pinned Secret inherits the pinned namespace's permission",
         [{"kind": "Secret", "metadata": {"name": "db-creds"}, "data": {"k": "djE="}}], SECRET_READER, "kept",
         shown=("db-creds",), hidden=("djE=",), pinned=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cluster_scoped_and_secrets(case: Case) -> None:
    out = filter_result(json.dumps(case.doc), case.scope, pinned=case.pinned, ips=case.ips)
    assert out.outcome == case.outcome, out.reason
    everything = out.text + out.reason + json.dumps(out.data)
    for token in case.shown:
        assert token in out.text
    for token in case.hidden:
        assert token not in everything, token


NODES_TABLE = "NAME     STATUS   ROLES           AGE   VERSION\nnode-7   Ready    control-plane   10d   v1.30.1\n"
NS_TABLE = "NAME          STATUS   AGE\nteam-a        Active   10d\nteam-b        Active   10d\nkube-system   Active   10d\n"


@pytest.mark.parametrize(("scope", "outcome"), [(ALICE, "withheld"), (NODE_READER, "kept")])
def test_kubectl_node_tables_in_text(scope: Scope, outcome: str) -> None:
    # a pinned call whose server ignored the namespace for a cluster-scoped kind
    out = filter_result(NODES_TABLE, scope, pinned=True)
    assert out.outcome == outcome
    assert ("node-7" in out.text) == (outcome == "kept")
    out = filter_result(json.dumps({"namespace": "team-a", "stdout": NODES_TABLE}), scope, pinned=True)
    assert ("node-7" in out.text) == (outcome == "kept")


def test_kubectl_namespace_tables_keep_the_callers_rows() -> None:
    out = filter_result(NS_TABLE, ALICE, pinned=True)
    assert out.outcome == "filtered" and "team-a" in out.text and out.removed == 2
    assert "team-b" not in out.text and "kube-system" not in out.text
    everyone = filter_result(NS_TABLE, Scope.of(["team-a"], cluster_kinds=["namespaces"]), pinned=True)
    assert everyone.outcome == "kept" and "team-b" in everyone.text


def test_secret_data_is_redacted_for_cluster_wide_callers_too() -> None:
    doc = {"kind": "SecretList", "items": [_secret("team-b", "pay-creds"),
                                           {"metadata": {"namespace": "x", "name": "bare"}, "data": {"k": "djE="}}]}
    out = filter_result(json.dumps(doc), ADMIN)
    assert out.outcome == "kept" and "pay-creds" in out.text and "bare" in out.text
    for value in ("aHVudGVy", "YWRtaW4", "s3cr3t-token-value", "djE="):
        assert value not in out.text
    assert out.data["items"][0]["data"] == {"password": REDACTED, "username": REDACTED}


def test_the_reason_names_the_cause() -> None:
    out = filter_result(json.dumps([_node("node-7"), _pv("pv-1", None)]), ALICE)
    assert "2 cluster-scoped objects you may not list were withheld" in out.reason
    out = filter_result(json.dumps([_secret("team-a", "db")]), ALICE)
    assert "1 Secret you may not read was withheld" in out.reason


def test_scope_reads_cluster_kinds_and_secret_namespaces() -> None:
    msg = ClusterScope(namespaces=("team-a",))
    assert Scope.from_cluster_scope(msg) == Scope.of(["team-a"])

    class WithKinds:
        namespaces = ("team-a",)
        cluster_wide = False
        cluster_kinds = ("Node", "storageclasses", "pv")
        secret_namespaces = ("team-a",)

    scope = Scope.from_cluster_scope(WithKinds())
    assert scope.cluster_kinds == {"nodes", "storageclasses", "persistentvolumes"}
    assert scope.secret_namespaces == {"team-a"} and scope.may_list("nodes") and not scope.may_list("clusterroles")
    scope = Scope.from_json({"namespaces": ["team-a"], "cluster_kinds": ["nodes"], "secret_namespaces": ["team-a"]})
    assert scope.may_list("nodes") and scope.may_read_secrets("team-a") and not scope.may_read_secrets("team-b")
    with pytest.raises(ValueError):
        Scope.from_json({"namespaces": ["team-a"], "cluster_kinds": "nodes"})
