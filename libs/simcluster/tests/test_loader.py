"""Loading snapshots: file formats, lists, logs, snapshot.yaml and the cluster-info dump layout."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sleuth_simcluster import SnapshotError, load_snapshot

PODS = ("", "pods")


def test_fixture_snapshot(fixture_snapshot: Path) -> None:
    snap = load_snapshot(fixture_snapshot)
    assert (snap.name, snap.cluster_name, snap.aliases) == ("fixture", "fixture", ("fx",))
    assert snap.now == datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    assert snap.users["alice"].groups == ("shop-devs",)
    assert snap.user_by_token("fx-bob-token").name == "bob"
    assert snap.user_by_token("nope") is None
    assert snap.store.skipped == []
    # PodList JSON without per-item kinds, multi-document YAML, a kind: List, nested folders
    assert {p["metadata"]["name"] for p in snap.store.list(PODS, "shop")} >= {"web-6d4cf56db6-abcde", "worker-0"}
    assert snap.store.get(("apps", "deployments"), "shop", "api")["apiVersion"] == "apps/v1"
    # unquoted YAML timestamps stay RFC 3339 strings
    assert snap.store.get(("", "namespaces"), "", "shop")["metadata"]["creationTimestamp"] == "2026-10-01T00:00:00Z"
    # an events.k8s.io Event is stored as a core Event, an autoscaling/v1 HPA as v2
    ev = snap.store.get(("", "events"), "pay", "ledger-5f7b9c8d4-crash.backoff")
    assert ev["involvedObject"]["name"] == "ledger-5f7b9c8d4-crash" and ev["count"] == 5
    hpa = snap.store.get(("autoscaling", "horizontalpodautoscalers"), "shop", "web")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80


def test_events_get_the_uid_of_the_object_they_name(fixture_snapshot: Path) -> None:
    snap = load_snapshot(fixture_snapshot)
    ev = snap.store.get(("", "events"), "shop", "api-7d9f8b6c5d-xyz12.backoff")
    assert ev["involvedObject"]["uid"] == "11111111-0000-0000-0000-000000000002"
    worker = snap.store.get(PODS, "shop", "worker-0")
    assert snap.store.get(("", "events"), "shop", "worker-0.scheduling")["involvedObject"]["uid"] == \
        worker["metadata"]["uid"]


def test_logs(fixture_snapshot: Path) -> None:
    logs = load_snapshot(fixture_snapshot).logs
    assert "OutOfMemoryError" in logs.text("shop", "api-7d9f8b6c5d-xyz12", "api", previous=True)
    assert "OutOfMemoryError" not in logs.text("shop", "api-7d9f8b6c5d-xyz12", "api", previous=False)
    assert logs.text("shop", "worker-0", "worker", previous=False) is None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_minimal_snapshot_defaults(tmp_path: Path) -> None:
    _write(tmp_path / "cluster" / "x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n")
    _write(tmp_path / "cluster" / "weird.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    snap = load_snapshot(tmp_path)
    assert snap.name == tmp_path.name
    cm = snap.store.get(("", "configmaps"), "default", "c")
    assert cm["metadata"]["namespace"] == "default" and cm["metadata"]["uid"]
    assert snap.store.get(("", "namespaces"), "", "default") is not None
    assert any("Widget is not served" in s for s in snap.store.skipped)
    # without users, one cluster admin with a random token; Sleuth's own identities are always there
    assert list(snap.users) == ["admin", "sleuth-reader", "sleuth-authz"]
    assert snap.users["admin"].groups == ("system:masters",)


def test_later_files_replace_earlier_objects(tmp_path: Path) -> None:
    _write(tmp_path / "cluster" / "a.json", json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"v": "1"}}))
    _write(tmp_path / "cluster" / "b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n"
                                             "data: {v: '2'}\n")
    snap = load_snapshot(tmp_path)
    assert [c["data"]["v"] for c in snap.store.list(("", "configmaps"), "n")] == ["2"]


def test_bad_yaml_names_the_file(tmp_path: Path) -> None:
    _write(tmp_path / "cluster" / "broken.yaml", "kind: [unclosed\n")
    with pytest.raises(SnapshotError, match=r"broken\.yaml"):
        load_snapshot(tmp_path)


def test_missing_directory() -> None:
    with pytest.raises(SnapshotError):
        load_snapshot("/nonexistent/snapshot")


def test_cluster_info_dump_layout(tmp_path: Path) -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns1"}, "spec": {"containers": [{"name": "c1"}, {"name": "c2"}]},
           "status": {"phase": "Running"}}
    _write(tmp_path / "nodes.json", json.dumps({"kind": "NodeList", "apiVersion": "v1",
                                                "items": [{"metadata": {"name": "n1"}}]}))
    _write(tmp_path / "ns1" / "pods.json", json.dumps({"kind": "PodList", "apiVersion": "v1", "items": [pod]}))
    _write(tmp_path / "ns1" / "events.json", json.dumps({"kind": "EventList", "apiVersion": "v1", "items": []}))
    _write(tmp_path / "ns1" / "p" / "logs.txt",
           "==== START logs for container c1 of pod ns1/p ====\nhello\nworld\n"
           "==== END logs for container c1 of pod ns1/p ====\n"
           "==== START logs for container c2 of pod ns1/p ====\nsecond\n"
           "==== END logs for container c2 of pod ns1/p ====\n")
    snap = load_snapshot(tmp_path)
    assert snap.store.get(("", "nodes"), "", "n1") is not None
    assert snap.store.get(PODS, "ns1", "p") is not None
    assert snap.logs.text("ns1", "p", "c1", False) == "hello\nworld\n"
    assert snap.logs.text("ns1", "p", "c2", False) == "second\n"
