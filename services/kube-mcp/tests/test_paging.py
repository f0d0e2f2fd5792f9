"""List tools read page by page (``limit``/``continue``) and stop at what they return, against the
real simcluster over HTTPS, reading as the asker: the first ``max_items`` by name, the rest counted
when the API server counts them, an expired continue token restarts the list once, and nothing of
another tenant comes out."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth_common.identity import ASSERTION_HEADER, IdentitySigner, generate_keypair
from sleuth_kube_mcp import shaping
from sleuth_kube_mcp.kube import Caller, KubeApiError, KubeClient, load_access

pytestmark = pytest.mark.connected

AUD = "kube-mcp/demo"
SMALL = {"max_items": 3, "page_size": 2, "max_scan": 6}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[IdentitySigner, Path]:
    private, public = generate_keypair()
    d = tmp_path_factory.mktemp("keys")
    (d / "agent.pub").write_bytes(public)
    return IdentitySigner.from_pem(private), d / "agent.pub"


@pytest.fixture(scope="module")
def servers(kube_mcp: Any, keys: tuple[IdentitySigner, Path]) -> tuple[Any, Any]:
    """(small, whole): kube-mcp as in production (the reader identity, impersonating the asker),
    with tiny caps and pages, and with the defaults."""
    return (kube_mcp("sleuth-reader", verify_key=str(keys[1]), **SMALL),
            kube_mcp("sleuth-reader", verify_key=str(keys[1])))


def _as(keys: tuple[IdentitySigner, Path], sim: Any, user: str) -> dict[str, str]:
    groups = tuple(sim.snapshot.users[user].groups)
    return {ASSERTION_HEADER: keys[0].mint(user, groups, audience=AUD)}


def _api_responses(base_url: str) -> float:
    text = httpx.get(f"{base_url}/metrics").text
    return sum(float(v) for v in re.findall(r'^sleuth_kube_mcp_api_responses_total\{code="\d+"\} (\S+)$', text, re.M))


async def test_a_list_stops_at_its_cap_and_counts_the_rest(servers, keys, sim, mcp_call) -> None:
    small, whole = servers
    alice = _as(keys, sim, "alice")
    err, everything = await mcp_call(whole.url, "list_pods", {"namespace": "team-a"}, headers=alice)
    assert not err and everything["count"] == len(everything["pods"]) > 3 and "complete" not in everything
    before = _api_responses(small.base_url)
    err, data = await mcp_call(small.url, "list_pods", {"namespace": "team-a"}, headers=alice)
    assert not err
    assert [p["name"] for p in data["pods"]] == [p["name"] for p in everything["pods"][:3]]
    assert data["pods"] == everything["pods"][:3]
    assert data["complete"] is False
    assert data["count"] == everything["count"] and data["omitted"] == everything["count"] - 3
    assert f"showing 3 of {everything['count']}" in data["note"]
    # two pages (2 + 1) and not one more: the rest of the namespace was never read
    assert _api_responses(small.base_url) - before == 2


async def test_a_filtered_list_says_more_exist_without_a_count(servers, keys, sim, mcp_call) -> None:
    small, whole = servers
    alice = _as(keys, sim, "alice")
    args = {"namespace": "team-a", "field_selector": "metadata.namespace=team-a"}
    _, everything = await mcp_call(whole.url, "list_pods", args, headers=alice)
    err, data = await mcp_call(small.url, "list_pods", args, headers=alice)
    assert not err and len(everything["pods"]) > 3
    assert data["pods"] == everything["pods"][:3]
    assert data["complete"] is False and "omitted" not in data and data["count"] == 3
    assert "more exist" in data["note"]


async def test_a_whole_list_is_marked_complete(servers, keys, sim, mcp_call) -> None:
    small, _ = servers
    err, data = await mcp_call(small.url, "list_pvcs", {"namespace": "team-a"}, headers=_as(keys, sim, "alice"))
    assert not err and len(data["pvcs"]) <= 3
    assert "complete" not in data and "omitted" not in data and data["count"] == len(data["pvcs"])


async def test_events_are_the_newest_of_those_read(servers, keys, sim, mcp_call) -> None:
    small, _ = servers
    err, data = await mcp_call(small.url, "list_events", {"namespace": "team-a"}, headers=_as(keys, sim, "alice"))
    assert not err
    # what the API server holds, in its order (by name): the first six are read, the newest three shown
    client = KubeClient(load_access(str(sim.kubeconfig("sleuth-reader")), "", ""))
    try:
        raw = await client.list_items("/api/v1/namespaces/team-a/events", None, _caller(sim, "alice"), limit=1000)
    finally:
        await client.aclose()
    assert len(raw.items) > SMALL["max_scan"]
    first_six = [shaping.event_record(e) for e in raw.items[: SMALL["max_scan"]]]
    assert data["events"] == shaping.sort_events(first_six)[:3]
    assert data["complete"] is False and "first 6 events read" in data["note"]


def _caller(sim: Any, user: str) -> Caller:
    return Caller(user=user, groups=tuple(sim.snapshot.users[user].groups))


async def test_paging_never_reaches_another_tenant(servers, keys, sim, mcp_call) -> None:
    small, whole = servers
    _, theirs = await mcp_call(whole.url, "list_pods", {"namespace": "team-b"}, headers=_as(keys, sim, "carol"))
    foreign = {p["name"] for p in theirs["pods"]}
    assert foreign
    alice = _as(keys, sim, "alice")
    for tool, args in [("list_pods", {"namespace": "team-a"}), ("list_events", {"namespace": "team-a"}),
                       ("list_workloads", {"namespace": "team-a"}), ("list_services", {"namespace": "team-a"}),
                       ("list_pods", {"namespace": "team-b"}), ("list_nodes", {}), ("list_storage", {})]:
        err, data = await mcp_call(small.url, tool, args, headers=alice)
        text = json.dumps(data)
        assert not any(name in text for name in foreign), (tool, args)
        if args.get("namespace") == "team-b" or tool in ("list_nodes", "list_storage"):
            assert err or not data.get("items"), (tool, data)  # refused by the cluster, as alice
        else:
            assert not err and all(r.get("namespace", "team-a") == "team-a" for r in data[_key(tool)])


def _key(tool: str) -> str:
    return {"list_pods": "pods", "list_events": "events", "list_workloads": "workloads", "list_services": "services"}[tool]


class _ExpireTokens(httpx.AsyncBaseTransport):
    """Forwards to the real simcluster, but the first ``n`` continue tokens are turned into tokens of
    an older list revision (what a client holds once etcd compacted past it): simcluster answers
    those with its real 410 Expired."""

    def __init__(self, inner: httpx.AsyncBaseTransport, n: int) -> None:
        self.inner, self.n, self.codes = inner, n, []  # type: ignore[var-annotated]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        token = request.url.params.get("continue")
        if token and self.n > 0:
            self.n -= 1
            doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            doc["rv"] -= 1
            old = base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")
            request = httpx.Request(request.method, request.url.copy_set_param("continue", old),
                                    headers=request.headers, extensions=request.extensions)
        response = await self.inner.handle_async_request(request)
        self.codes.append(response.status_code)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("expiries", [1, 2])
async def test_an_expired_continue_token_restarts_the_list_once(sim, expiries: int) -> None:
    access = load_access(str(sim.kubeconfig("sleuth-reader")), "", "")
    alice = _caller(sim, "alice")
    plain = KubeClient(access, page_size=2)
    expected = await plain.list_items("/api/v1/namespaces/team-a/pods", None, alice, limit=5)
    await plain.aclose()
    transport = _ExpireTokens(httpx.AsyncHTTPTransport(verify=access.ssl_context), expiries)
    client = KubeClient(access, page_size=2, transport=transport)
    try:
        if expiries == 1:
            got = await client.list_items("/api/v1/namespaces/team-a/pods", None, alice, limit=5)
            assert got.restarted and got.items == expected.items and got.more == expected.more
            assert transport.codes == [200, 410, 200, 200, 200]
        else:
            with pytest.raises(KubeApiError) as exc:
                await client.list_items("/api/v1/namespaces/team-a/pods", None, alice, limit=5)
            assert exc.value.code == 410 and "expired twice" in exc.value.message
            assert transport.codes == [200, 410, 200, 410]
    finally:
        await client.aclose()
