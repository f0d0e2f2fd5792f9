"""The large-snapshot generator (``sleuth.benches.big_snapshot``, for timing ``sleuth report``)
writes a snapshot simcluster loads, with the shape it promises; at 50 pods, so it stays fast."""

from __future__ import annotations

from pathlib import Path

from sleuth.benches.big_snapshot import main
from sleuth_simcluster import load_snapshot


def test_the_generated_snapshot_loads_with_the_promised_shape(tmp_path: Path) -> None:
    snap = load_snapshot(main(tmp_path / "big", pods=50, namespaces=5))
    pods = snap.store.list(("", "pods"))
    assert len(pods) == 50
    assert {p["metadata"]["namespace"] for p in pods} == {f"ns-{i:03d}" for i in range(5)}
    owners = {p["metadata"]["ownerReferences"][0]["kind"] for p in pods}
    assert owners == {"ReplicaSet", "StatefulSet"}
    replica_sets = {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in snap.store.list(("apps", "replicasets"))}
    for p in pods:
        ref = p["metadata"]["ownerReferences"][0]
        if ref["kind"] == "ReplicaSet":
            assert (p["metadata"]["namespace"], ref["name"]) in replica_sets
    assert snap.store.list(("batch", "cronjobs")) and snap.store.list(("policy", "poddisruptionbudgets"))
    assert snap.users["tenant"].groups == ("tenant-a",) and snap.users["admin"].groups == ("platform-admins",)
    bindings = snap.store.list(("rbac.authorization.k8s.io", "rolebindings"))
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["ns-000", "ns-001", "ns-002"]


def test_the_same_seed_writes_the_same_snapshot(tmp_path: Path) -> None:
    a, b = main(tmp_path / "a", pods=50, namespaces=5), main(tmp_path / "b", pods=50, namespaces=5)
    for f in sorted((a / "cluster").iterdir()):
        assert f.read_text() == (b / "cluster" / f.name).read_text(), f.name
