"""``sleuth.authz.inventory``: object names per namespace for the scope filter's foreign-name scan.

In memory over the fake backend (TestNatsBroker), and against real nats-server, Valkey and
SimCluster serving scenarios/demo (``connected``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from faststream.nats import NatsBroker, TestNatsBroker

from sleuth_authz_cache.app import build
from sleuth_authz_cache.inventory import capped_reply, distinctiveness, pod_names
from sleuth_authz_cache.settings import Settings
from sleuth_common.messages.authz import InventoryReply, InventoryRequest
from sleuth_common.subjects import Subjects

TOKEN_ENV = "SLEUTH_TEST_AUTHZ_TOKEN_INVENTORY"


def pod(ns: str, name: str, owners: list[tuple[str, str]] = (), **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": ns, "name": name, "labels": labels,
                            "ownerReferences": [{"kind": k, "name": n, "controller": True} for k, n in owners]}
    return {"metadata": meta, "status": {"podIP": "10.1.0.1"}}


def svc(ns: str, name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name}, "spec": {"clusterIP": "10.96.0.1"}}


# -- the names of a pod ----------------------------------------------------------------------------

def test_pod_names_include_the_owning_workloads() -> None:
    deploy = pod("team-b", "billing-api-84f7c9d6b5-r9t2w", [("ReplicaSet", "billing-api-84f7c9d6b5")],
                 **{"pod-template-hash": "84f7c9d6b5"})
    assert list(pod_names(deploy)) == ["billing-api-84f7c9d6b5-r9t2w", "billing-api-84f7c9d6b5", "billing-api"]
    # no pod-template-hash label: a hash-like suffix (with a digit) is still recognised …
    assert list(pod_names(pod("x", "web-5d9c7b8f6-abcde", [("ReplicaSet", "web-5d9c7b8f6")])))[-1] == "web"
    # … a word is not
    assert list(pod_names(pod("x", "ledger-backend-q2", [("ReplicaSet", "ledger-backend")]))) == [
        "ledger-backend-q2", "ledger-backend"]
    cron = pod("team-a", "reports-cron-29933640-7xkqp", [("Job", "reports-cron-29933640")])
    assert list(pod_names(cron)) == ["reports-cron-29933640-7xkqp", "reports-cron-29933640", "reports-cron"]
    assert list(pod_names(pod("team-b", "inventory-db-0", [("StatefulSet", "inventory-db")]))) == [
        "inventory-db-0", "inventory-db"]
    # a static pod's owner is its Node: not a name of the namespace
    assert list(pod_names(pod("kube-system", "etcd-node-1", [("Node", "node-1")]))) == ["etcd-node-1"]


def test_distinctiveness_ranks_long_specific_names_first() -> None:
    assert distinctiveness("billing-api-84f7c9d6b5-r9t2w") > distinctiveness("billing-api") > distinctiveness("ledger")
    assert distinctiveness("postgres", spread=3) < distinctiveness("postgres")


def test_cap_drops_the_least_distinctive_names_first() -> None:
    inventory = {
        "team-a": {"checkout-api", "checkout-api-7d9f8c6b5d-q8m7n", "api", "cart"},
        "team-b": {"ledger", "ledger-59c8d7b6f4-dz8xk", "kubernetes"},
    }
    whole = capped_reply("demo", inventory, 1_000_000)
    # too short and universal names are never in it
    assert whole.names == {"team-a": ("cart", "checkout-api", "checkout-api-7d9f8c6b5d-q8m7n"),
                           "team-b": ("ledger", "ledger-59c8d7b6f4-dz8xk")}
    assert not whole.truncated
    size = len(whole.to_bytes())
    capped = capped_reply("demo", inventory, size - 10)
    assert capped.truncated and len(capped.to_bytes()) <= size - 10
    assert capped.names["team-a"] == ("checkout-api", "checkout-api-7d9f8c6b5d-q8m7n")  # "cart" went first
    tiny = capped_reply("demo", inventory, len(InventoryReply(cluster="demo", truncated=True).to_bytes()) + 45)
    assert tiny.truncated and tiny.names == {"team-a": ("checkout-api-7d9f8c6b5d-q8m7n",)}


def test_cap_holds_for_a_big_cluster() -> None:
    inventory = {f"ns-{n:03d}": {f"svc-{n}-{i}-{'x' * (i % 40)}" for i in range(400)} for n in range(300)}
    reply = capped_reply("big", inventory, 900_000)
    body = reply.to_bytes()
    assert reply.truncated and 800_000 < len(body) <= 900_000
    kept = {name for names in reply.names.values() for name in names}
    dropped = {name for names in inventory.values() for name in names} - kept
    assert max(len(n) for n in dropped) <= min(len(n) for n in kept) + 4  # the shortest went first
    assert json.loads(body)["kind"] == "authz.inventory.reply"


# -- over the bus, in memory -----------------------------------------------------------------------

@pytest.fixture
def listed(fake_backend):
    fake_backend.clusters["demo"].objects = {
        "pods": [
            pod("team-a", "checkout-api-7d9f8c6b5d-q8m7n", [("ReplicaSet", "checkout-api-7d9f8c6b5d")],
                **{"pod-template-hash": "7d9f8c6b5d"}),
            pod("team-b", "inventory-db-0", [("StatefulSet", "inventory-db")]),
            pod("kube-system", "kube-proxy-7q2lm", [("DaemonSet", "kube-proxy")]),
        ],
        "services": [svc("team-a", "payments-db"), svc("default", "kubernetes")],
        "endpoints": [],
    }
    return fake_backend


async def _ask(broker: Any, cluster: str) -> InventoryReply:
    msg = await broker.request(InventoryRequest(cluster=cluster), Subjects("t").authz_inventory, timeout=5)
    return InventoryReply.model_validate_json(msg.body)


async def test_inventory_over_the_bus(settings_factory, listed, dead_redis_url):
    parts = build(settings_factory(dead_redis_url), backend=listed)
    try:
        async with TestNatsBroker(parts.broker) as br:
            first = await _ask(br, "demo")
            again = await _ask(br, "demo")
            unknown = await _ask(br, "nope")
            listed.clusters["prod-1"].fail = "authz identity may not list pods (403)"
            broken = await _ask(br, "prod-1")
            hits = parts.metrics.registry.get_sample_value("sleuth_authz_inventory_requests_total", {"outcome": "hit"})
    finally:
        await parts.aclose()

    assert first.error == "" and not first.cached and not first.truncated
    assert first.names == {
        "team-a": ("checkout-api", "checkout-api-7d9f8c6b5d", "checkout-api-7d9f8c6b5d-q8m7n", "payments-db"),
        "team-b": ("inventory-db", "inventory-db-0"),
        "kube-system": ("kube-proxy-7q2lm",),
    }
    assert again.cached and again.names == first.names and hits == 1
    assert listed.calls[("demo", "list_objects pods")] == 1  # one listing served both
    assert unknown.names == {} and unknown.error == "cluster not configured"
    assert broken.names == {} and "403" in broken.error and not broken.cached


async def test_inventory_shares_the_listing_with_resolve(settings_factory, listed, dead_redis_url):
    from sleuth_common.messages import ResolveReply, ResolveRequest

    parts = build(settings_factory(dead_redis_url), backend=listed)
    try:
        async with TestNatsBroker(parts.broker) as br:
            msg = await br.request(ResolveRequest(cluster="demo", names=("payments-db",)),
                                   Subjects("t").authz_resolve, timeout=5)
            resolved = ResolveReply.model_validate_json(msg.body)
            inventory = await _ask(br, "demo")
    finally:
        await parts.aclose()

    assert resolved.names == {"payments-db": ("team-a",)}
    assert inventory.cached and "payments-db" in inventory.names["team-a"]
    assert listed.calls[("demo", "list_objects services")] == 1


async def test_inventory_is_capped_to_the_configured_size(settings_factory, listed, dead_redis_url):
    listed.clusters["demo"].objects["services"] = [svc(f"ns-{n}", f"service-{n}-{i:04d}") for n in range(20)
                                                   for i in range(200)]
    settings = settings_factory(dead_redis_url)
    settings = settings.model_copy(update={"authz_cache": settings.authz_cache.model_copy(
        update={"inventory_max_bytes": 20_000})})
    parts = build(settings, backend=listed)
    try:
        async with TestNatsBroker(parts.broker) as br:
            reply = await _ask(br, "demo")
    finally:
        await parts.aclose()

    assert reply.truncated and reply.error == ""
    assert len(reply.to_bytes()) <= 20_000
    # the longest names — the pod and its workloads — are kept; short service names went first
    assert "checkout-api-7d9f8c6b5d-q8m7n" in reply.names["team-a"]


# -- against simcluster ----------------------------------------------------------------------------

@pytest.fixture
def sim(demo_snapshot: Path, tmp_path: Path) -> Iterator[object]:
    from sleuth_simcluster import SimCluster

    with SimCluster(demo_snapshot, tmp_path / "sim") as cluster:
        yield cluster


@pytest.fixture
async def bus(sim, nats_server, valkey, monkeypatch) -> AsyncIterator[NatsBroker]:
    monkeypatch.setenv(TOKEN_ENV, sim.token("sleuth-authz"))
    settings = Settings(
        nats={"url": nats_server.url}, redis={"url": valkey.url}, authz_cache={"metrics_port": 0},
        clusters=[{"name": "demo", "api_server": sim.url, "ca_file": str(sim.ca_file), "authz_token_env": TOKEN_ENV}],
    )
    parts = build(settings)
    await parts.start()  # as the service starts: subscribed and flushed, so the server routes to it
    client = NatsBroker(nats_server.url)
    await client.connect()
    try:
        yield client
    finally:
        await client.stop()
        await parts.app.stop()


@pytest.mark.connected
async def test_inventory_of_the_demo_cluster(bus: NatsBroker, sim) -> None:
    msg = await bus.request(InventoryRequest(cluster="demo"), Subjects("sleuth").authz_inventory, timeout=5)
    reply = InventoryReply.model_validate_json(msg.body)

    assert reply.error == "" and not reply.truncated
    assert set(reply.names["team-a"]) >= {
        "checkout-api", "checkout-api-7d9f8c6b5d", "checkout-api-7d9f8c6b5d-q8m7n",  # Deployment, RS, pod
        "frontend", "payments-worker", "payments-db", "reports-cron", "reports-cron-29933640"}
    assert set(reply.names["team-b"]) >= {"billing-api", "inventory-db", "inventory-db-0", "ledger", "search-indexer"}
    assert "prometheus" in reply.names["monitoring"]
    everything = {n for names in reply.names.values() for n in names}
    assert not everything & {"kubernetes", "kube-dns", "kube-proxy", "coredns", "default"}
    assert "billing-api" not in reply.names["team-a"]  # each name under its own namespace only
    # the index was built as authz-cache's own identity, with nothing but list calls
    reads = [r for r in sim.audit.records() if r.user == "sleuth-authz" and r.verb == "list"]
    assert {r.resource for r in reads} == {"pods", "services"}
