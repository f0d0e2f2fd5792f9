"""``sleuth.authz.resolve`` against real nats-server, Valkey and SimCluster serving scenarios/demo:
pod IPs, service cluster IPs and object names resolve to their namespaces; node IPs do not."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from faststream.nats import NatsBroker

from sleuth_authz_cache.app import build
from sleuth_authz_cache.resolve import build_index
from sleuth_authz_cache.settings import Settings
from sleuth_common.messages import ResolveReply, ResolveRequest
from sleuth_common.subjects import Subjects

TOKEN_ENV = "SLEUTH_TEST_AUTHZ_TOKEN_RESOLVE"


def test_index_takes_ips_from_pods_and_service_ips_only() -> None:
    """Never from Endpoints: a selector-less Service's Endpoints (writable by a tenant) could
    name a node's IP and so claim the Node, and everything that IP names, for the tenant."""
    pods = [
        {"metadata": {"namespace": "team-a", "name": "api"}, "status": {"podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}]}},
        {"metadata": {"namespace": "kube-system", "name": "proxy"}, "spec": {"hostNetwork": True},
         "status": {"podIP": "10.0.0.11"}},
        {"metadata": {"namespace": "team-a", "name": "x"}, "status": {"podIP": "10.9.9.9"}},
        {"metadata": {"namespace": "team-b", "name": "y"}, "status": {"podIP": "10.9.9.9"}},
    ]
    services = [{"metadata": {"namespace": "team-b", "name": "db"}, "spec": {"clusterIP": "None"}},
                {"metadata": {"namespace": "team-b", "name": "web"}, "spec": {"clusterIPs": ["10.96.0.5"]}}]
    index = build_index(pods, services)
    assert index.ips == {"10.1.0.1": "team-a", "10.96.0.5": "team-b"}
    assert "10.0.0.11" not in index.ips  # a hostNetwork pod's IP is its node's
    assert index.names["web"] == {"team-b"} and "None" not in index.ips


@pytest.fixture
def sim(demo_snapshot: Path, tmp_path: Path) -> Iterator[object]:
    from sleuth_simcluster import SimCluster

    cluster = SimCluster(demo_snapshot, tmp_path / "sim", host="127.0.0.1", port=0)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


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


async def _ask(client: NatsBroker, req: ResolveRequest) -> ResolveReply:
    msg = await client.request(req, Subjects("sleuth").authz_resolve, timeout=5)
    return ResolveReply.model_validate_json(msg.body)


@pytest.mark.connected
async def test_resolves_demo_ips_and_names(bus: NatsBroker) -> None:
    req = ResolveRequest(
        cluster="demo",
        ips=("10.244.1.17", "10.96.112.40", "10.244.2.51", "10.0.0.11", "203.0.113.9"),
        names=("billing-api-84f7c9d6b5-r9t2w",),
    )
    reply = await _ask(bus, req)
    assert reply.error == ""
    assert reply.ips == {"10.244.1.17": "team-a", "10.96.112.40": "team-a", "10.244.2.51": "team-b"}
    assert reply.names == {"billing-api-84f7c9d6b5-r9t2w": ("team-b",)}
    again = await _ask(bus, req)
    assert again.cached and again.ips == reply.ips
    unknown = await _ask(bus, ResolveRequest(cluster="nope", ips=("10.244.1.17",)))
    assert unknown.ips == {} and unknown.error
