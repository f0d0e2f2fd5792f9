"""The bundled demo snapshot (scenarios/demo) is well-formed and self-consistent.

Everything downstream (simcluster, kube-mcp, the investigator, the leak tests) trusts these files,
so a broken object or a pod without its logs should fail here, with a message naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")


def _objects(snapshot: Path) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted((snapshot / "cluster").glob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is None:
                continue
            items = doc["items"] if doc.get("kind") == "List" else [doc]
            out.extend((path.name, item) for item in items)
    return out


@pytest.fixture(scope="module")
def objects(demo_snapshot: Path) -> list[tuple[str, dict[str, Any]]]:
    return _objects(demo_snapshot)


@pytest.fixture(scope="module")
def snapshot_meta(demo_snapshot: Path) -> dict[str, Any]:
    return yaml.safe_load((demo_snapshot / "snapshot.yaml").read_text())


def _by_kind(objects, kind):
    return [o for _, o in objects if o["kind"] == kind]


def test_snapshot_yaml_names_the_cluster_and_users(snapshot_meta):
    assert snapshot_meta["name"] == "demo"
    assert snapshot_meta["cluster"] == {"name": "demo", "aliases": ["dev"]}
    assert snapshot_meta["now"] == "2026-11-30T09:00:00Z"
    assert snapshot_meta["description"]
    users = snapshot_meta["users"]
    assert users["alice"] == {"groups": ["team-a"], "token": "demo-alice-token"}
    assert users["bob"] == {"groups": ["team-b"], "token": "demo-bob-token"}
    assert users["carol"] == {"groups": ["platform-admins"], "token": "demo-carol-token"}
    assert users["sleuth-authz"]["groups"] == ["sleuth:authz"]
    assert users["sleuth-reader"]["groups"] == ["sleuth:readers"]


def test_every_object_has_kind_and_name(objects):
    assert len(objects) > 80
    seen: set[tuple[str, str, str]] = set()
    for fname, obj in objects:
        assert obj.get("apiVersion"), fname
        assert obj.get("kind"), fname
        meta = obj.get("metadata") or {}
        assert meta.get("name"), f"{fname}: {obj['kind']} without a name"
        assert meta.get("uid") and meta.get("creationTimestamp"), f"{fname}: {meta['name']}"
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        assert key not in seen, f"{fname}: duplicate {key}"
        seen.add(key)


def test_namespaces_nodes_and_storage(objects):
    names = {o["metadata"]["name"] for o in _by_kind(objects, "Namespace")}
    assert names == {"team-a", "team-b", "kube-system", "monitoring", "sleuth", "default"}
    nodes = _by_kind(objects, "Node")
    assert 2 <= len(nodes) <= 3
    for n in nodes:
        ready = [c for c in n["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"
    assert [o["metadata"]["name"] for o in _by_kind(objects, "StorageClass")] == ["standard"]


def test_namespaced_objects_live_in_known_namespaces(objects):
    known = {o["metadata"]["name"] for o in _by_kind(objects, "Namespace")}
    for fname, obj in objects:
        ns = obj["metadata"].get("namespace")
        if ns is not None:
            assert ns in known, f"{fname}: {obj['kind']}/{obj['metadata']['name']} in unknown namespace {ns}"


def test_every_user_has_a_binding(objects, snapshot_meta):
    bound_groups = set()
    for b in _by_kind(objects, "RoleBinding") + _by_kind(objects, "ClusterRoleBinding"):
        for s in b.get("subjects", []):
            if s["kind"] == "Group":
                bound_groups.add(s["name"])
    roles = {r["metadata"]["name"] for r in _by_kind(objects, "ClusterRole")}
    for b in _by_kind(objects, "RoleBinding") + _by_kind(objects, "ClusterRoleBinding"):
        assert b["roleRef"]["name"] in roles, b["metadata"]["name"]
    for user, spec in snapshot_meta["users"].items():
        assert set(spec["groups"]) & bound_groups, f"user {user} has no binding"


def test_read_roles_never_grant_secrets(objects):
    for r in _by_kind(objects, "ClusterRole"):
        if r["metadata"]["name"] in ("view", "sleuth-reader"):
            for rule in r["rules"]:
                assert "secrets" not in rule.get("resources", [])
                if "" in rule.get("apiGroups", []):
                    assert "*" not in rule["resources"]
                assert set(rule["verbs"]) <= {"get", "list", "watch"}


def _ran(status: dict[str, Any]) -> tuple[bool, bool]:
    """(has a current log, has a previous log) for one containerStatus."""
    state = status.get("state", {})
    last = status.get("lastState", {})
    current = "running" in state or "terminated" in state or "terminated" in last
    previous = "terminated" in last and status.get("restartCount", 0) > 0
    return current, previous


def test_pods_that_ran_have_logs(objects, demo_snapshot):
    logs = demo_snapshot / "logs"
    for fname, pod in ((f, o) for f, o in objects if o["kind"] == "Pod"):
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        for cs in pod["status"].get("containerStatuses", []):
            current, previous = _ran(cs)
            base = logs / ns / name / cs["name"]
            if current:
                assert base.with_suffix(".log").is_file(), f"{fname}: missing log {base}.log"
            else:
                assert not base.with_suffix(".log").exists(), f"{base}.log for a container that never ran"
            if previous:
                assert Path(f"{base}.previous.log").is_file(), f"missing {base}.previous.log"
    for f in logs.rglob("*.log"):
        lines = f.read_text().splitlines()
        assert lines, f
        stamps = []
        for line in lines:
            assert RFC3339.match(line), f"{f}: {line!r}"
            stamps.append(line.split(" ", 1)[0])
        assert stamps == sorted(stamps), f"{f}: timestamps out of order"


def test_owner_references_resolve(objects):
    index = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for _, o in objects}
    for fname, obj in objects:
        for ref in obj["metadata"].get("ownerReferences", []):
            owner = index.get((ref["kind"], obj["metadata"].get("namespace", ""), ref["name"]))
            assert owner is not None, (
                f"{fname}: {obj['metadata']['name']} owner {ref['kind']}/{ref['name']} missing"
            )
            assert owner["metadata"]["uid"] == ref["uid"]


def test_events_point_at_existing_objects(objects):
    index = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for _, o in objects}
    events = _by_kind(objects, "Event")
    assert events
    for ev in events:
        io = ev["involvedObject"]
        assert (io["kind"], io.get("namespace", ""), io["name"]) in index, ev["metadata"]["name"]
        assert ev["type"] in ("Normal", "Warning")
        assert ev["count"] >= 1 and ev["firstTimestamp"] <= ev["lastTimestamp"] <= "2026-11-30T09:00:00Z"


@pytest.mark.parametrize(
    ("ns", "pod_prefix", "expect"),
    [
        ("team-a", "checkout-api-", ("lastState", "OOMKilled", 137)),
        ("team-a", "payments-worker-", ("lastState", "Error", 1)),
        ("team-b", "inventory-db-0", ("state", "ImagePullBackOff", None)),
        ("team-b", "billing-api-", ("state", "CreateContainerConfigError", None)),
    ],
)
def test_the_demo_failures_are_there(objects, ns, pod_prefix, expect):
    where, reason, code = expect
    pods = [
        o
        for o in _by_kind(objects, "Pod")
        if o["metadata"]["namespace"] == ns and o["metadata"]["name"].startswith(pod_prefix)
    ]
    assert pods
    for pod in pods:
        cs = pod["status"]["containerStatuses"][0]
        block = cs[where]
        state = block.get("terminated") or block.get("waiting")
        assert state["reason"] == reason
        if code is not None:
            assert state["exitCode"] == code


def test_search_indexer_is_unschedulable(objects):
    pod = next(o for o in _by_kind(objects, "Pod") if o["metadata"]["name"].startswith("search-indexer-"))
    assert pod["status"]["phase"] == "Pending"
    assert pod["spec"]["containers"][0]["resources"]["requests"]["memory"] == "64Gi"
    msgs = [e["message"] for e in _by_kind(objects, "Event") if e["reason"] == "FailedScheduling"]
    assert "0/3 nodes are available: 3 Insufficient memory." in msgs
