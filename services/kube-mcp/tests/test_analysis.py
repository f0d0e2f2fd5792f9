"""The composite and listing tools over the demo snapshot: analyze_logs groups a workload's log
lines into patterns, subgraph walks the topology, list_resources never shows a value."""

from __future__ import annotations

import pytest

from sleuth_kube_mcp.shaping._logpatterns import PatternTable, normalize


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "connect ECONNREFUSED 10.96.87.14:5432 after 3012ms",
            "connect ECONNREFUSED 10.96.3.2:5432 after 12ms",
        ),
        ("request 5f0c2a1e-8b1d-4c55-9a55-0b6c1d3e2f10 failed", "request 0b1c2a1e-8b1d-4c55-9a55-0b6c1d3e2f99 failed"),
        ("checksum deadbeef42 mismatch at 0x7ffd", "checksum 42cafebabe mismatch at 0x1"),
    ],
)
def test_lines_differing_in_variable_parts_share_a_pattern(a: str, b: str) -> None:
    assert normalize(a) == normalize(b)


def test_pattern_table_counts_pods_and_offsets() -> None:
    from datetime import UTC, datetime

    t = PatternTable()
    t.add("p1", "2026-11-30T08:50:00.123456789Z ERROR db timeout after 30s")
    t.add("p2", "2026-11-30T08:55:00Z ERROR db timeout after 31s", previous=True)
    t.add("p2", "2026-11-30T08:55:01Z INFO all good")
    (row,) = t.rows(datetime(2026, 11, 30, 8, 52, tzinfo=UTC))
    assert row["count"] == 2 and row["pods"] == ["p1", "p2"]
    assert row["first_seen"] == "2026-11-30T08:50:00Z" and row["last_seen"] == "2026-11-30T08:55:00Z"
    assert row["first_seen_offset_seconds"] == -119.9


async def test_analyze_logs_groups_the_crash_loop(kube_mcp, mcp_call) -> None:
    err, data = await mcp_call(
        kube_mcp("carol").url,
        "analyze_logs",
        {"namespace": "team-a", "workload": "payments-worker", "kind": "Deployment",
         "reference_time": "2026-11-30T08:50:00Z"},
    )
    assert not err, data
    assert data["pods_read"] and "correlation, not cause" in data["note"]
    refused = [p for p in data["patterns"] if "ECONNREFUSED" in p["example"]]
    assert refused and refused[0]["count"] >= 1 and refused[0]["in_previous_instance"]
    assert "first_seen_offset_seconds" in refused[0]


async def test_analyze_logs_lists_skipped_pods(kube_mcp, mcp_call) -> None:
    err, data = await mcp_call(
        kube_mcp("carol").url, "analyze_logs", {"namespace": "team-b", "workload": "search-indexer"}
    )
    assert not err, data
    assert data["pods_skipped"] and all(s["reason"] for s in data["pods_skipped"])


async def test_subgraph_links_service_pods_and_config(kube_mcp, mcp_call) -> None:
    err, data = await mcp_call(
        kube_mcp("carol").url,
        "subgraph",
        {"namespace": "team-b", "kind": "Deployment", "name": "billing-api", "hops": 3},
    )
    assert not err, data
    ids = {n["id"]: n for n in data["nodes"]}
    assert data["focus"] == "Deployment/team-b/billing-api"
    assert any(n["kind"] == "Pod" for n in ids.values())
    assert ids.get("ConfigMap/team-b/billing-config", {}).get("missing") is True
    assert all(n.get("namespace") == "team-b" or n.get("cluster_scoped") for n in ids.values())


async def test_list_resources_names_keys_never_values(kube_mcp, mcp_call) -> None:
    err, data = await mcp_call(kube_mcp("carol").url, "list_resources", {"kind": "secret", "namespace": "team-a"})
    assert not err, data
    assert data["kind"] == "Secret"
    for item in data["items"]:
        assert item["namespace"] == "team-a" and isinstance(item.get("keys", []), list)
        assert set(item) <= {"namespace", "kind", "name", "type", "keys", "created"}


async def test_list_storage_is_marked_cluster_scoped(kube_mcp, mcp_call) -> None:
    err, data = await mcp_call(kube_mcp("carol").url, "list_storage", {"kinds": ["sc"]})
    assert not err, data
    assert data["items"] and all(i["cluster_scoped"] and i["kind"] == "StorageClass" for i in data["items"])


def test_subgraph_selectors_follow_the_api_empty_and_absent_semantics() -> None:
    """{} selects every pod (NetworkPolicy podSelector, policy/v1 PDB selector); an absent or empty
    Service selector, or a null PDB selector, selects none; set-based expressions are honoured."""
    from sleuth_kube_mcp.analysis import _build

    def named(name: str, **fields: object) -> dict[str, object]:
        return {"metadata": {"name": name}, **fields}

    pods = [{"metadata": {"name": "web-1", "labels": {"app": "web", "tier": "front"}}},
            {"metadata": {"name": "db-1", "labels": {"app": "db"}}}]
    objs = {
        "pods": pods,
        "services": [named("web", spec={"selector": {"app": "web"}}), named("external", spec={}),
                     named("empty", spec={"selector": {}})],
        "pdbs": [named("all", spec={"selector": {}}), named("none", spec={"selector": None}),
                 named("front", spec={"selector": {"matchExpressions": [
                     {"key": "tier", "operator": "In", "values": ["front"]}]}})],
        "networkpolicies": [named("deny-all", spec={"podSelector": {}}),
                            named("not-web", spec={"podSelector": {"matchExpressions": [
                                {"key": "app", "operator": "NotIn", "values": ["web"]}]}})],
    }
    g = _build("ns", objs)
    edges = {(a.split("/")[-1], b.split("/")[-1], rel) for a, b, rel in g.edges if rel in ("selects", "protects",
                                                                                            "applies-to")}
    assert edges == {
        ("web", "web-1", "selects"),
        ("all", "web-1", "protects"), ("all", "db-1", "protects"), ("front", "web-1", "protects"),
        ("deny-all", "web-1", "applies-to"), ("deny-all", "db-1", "applies-to"), ("not-web", "db-1", "applies-to"),
    }
