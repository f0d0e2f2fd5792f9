"""kube-mcp reads as the asker (DESIGN §2, "the cluster decides"): every request needs a valid
signed identity, every read is impersonated, and no argument can steer a read elsewhere."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth_common.identity import ASSERTION_HEADER, IdentitySigner, generate_keypair

pytestmark = pytest.mark.connected

AUD = "kube-mcp/demo"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[IdentitySigner, Path]:
    private, public = generate_keypair()
    d = tmp_path_factory.mktemp("keys")
    (d / "agent.pub").write_bytes(public)
    return IdentitySigner.from_pem(private), d / "agent.pub"


@pytest.fixture(scope="module")
def url(kube_mcp: Any, keys: tuple[IdentitySigner, Path]) -> str:
    """kube-mcp as in production: the reader identity, identity required."""
    return str(kube_mcp("sleuth-reader", verify_key=str(keys[1])).url)


def as_user(signer: IdentitySigner, user: str, groups: tuple[str, ...] = (), **kw: Any) -> dict[str, str]:
    return {ASSERTION_HEADER: signer.mint(user, groups, audience=kw.pop("audience", AUD), **kw)}


def _groups(sim: Any, user: str) -> tuple[str, ...]:
    return tuple(sim.snapshot.users[user].groups)


async def test_a_request_without_identity_is_refused_before_the_mcp_layer(url: str) -> None:
    async with httpx.AsyncClient() as http:
        r = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401
    assert "unauthenticated" in r.json()["error"] and "pods" not in r.text


@dataclass(frozen=True)
class Forged:
    name: str
    headers: Any  # (signer, another signer) -> headers
    why: str


FORGED = [
    Forged("expired", lambda s, o: as_user(s, "carol", ("system:masters",), ttl=1, now=1_000_000), "expired"),
    Forged("another audience", lambda s, o: as_user(s, "carol", audience="kube-mcp/other"), "not for"),
    Forged("another key", lambda s, o: as_user(o, "carol"), "unknown key"),
    Forged("unsigned", lambda s, o: {ASSERTION_HEADER: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJjYXJvbCJ9."}, "EdDSA"),
    Forged("too long-lived", lambda s, o: as_user(s, "carol", ttl=3600), "longer than"),
    Forged("a bearer token instead", lambda s, o: {"Authorization": "Bearer demo-carol-token"}, "no identity"),
    Forged("validly signed, as system:masters", lambda s, o: as_user(s, "mallory", ("system:masters",)),
           "does not act as a member of system:masters"),
]


@pytest.mark.parametrize("case", FORGED, ids=lambda c: c.name)
async def test_forged_or_stale_assertions_are_refused(url: str, keys: Any, case: Forged) -> None:
    other = IdentitySigner.from_pem(generate_keypair()[0])
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_pods", "arguments": {"namespace": "team-b"}}}
    async with httpx.AsyncClient() as http:
        r = await http.post(url, json=body, headers={"Accept": "application/json, text/event-stream",
                                                     **case.headers(keys[0], other)})
    assert r.status_code == 401 and case.why in r.json()["error"]
    assert "team-b" not in r.text


async def test_reads_are_made_as_the_asker(url: str, keys: Any, mcp_call: Any, sim: Any) -> None:
    signer = keys[0]
    alice = as_user(signer, "alice", _groups(sim, "alice"))
    err, own = await mcp_call(url, "list_pods", {"namespace": "team-a"}, headers=alice)
    assert not err and own["count"] >= 1 and own["namespace"] == "team-a"
    err, other = await mcp_call(url, "list_pods", {"namespace": "team-b"}, headers=alice)
    # The API server (simcluster's RBAC) refused it as alice, in its own words.
    assert err and other["code"] == 403 and "alice" in other["error"]
    err, carol = await mcp_call(url, "list_pods", {"namespace": "team-b"},
                                headers=as_user(signer, "carol", _groups(sim, "carol")))
    assert not err and carol["count"] >= 1


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("get_resource", {"kind": "ClusterRole", "name": "cluster-admin"}),
        ("get_resource", {"kind": "Namespace", "name": "team-b"}),
        ("list_storage", {}),
        ("list_nodes", {}),
    ],
)
async def test_cluster_scoped_reads_follow_the_askers_rbac(url: str, keys: Any, mcp_call: Any, sim: Any,
                                                           tool: str, args: dict[str, Any]) -> None:
    err, data = await mcp_call(url, tool, args, headers=as_user(keys[0], "alice", _groups(sim, "alice")))
    text = json.dumps(data)
    if err:
        assert data["code"] == 403
    else:  # list_storage reports per-kind refusals instead of failing whole
        assert data.get("count", 0) == 0 and all(e["code"] == 403 for e in data.get("errors", []))
    assert "team-b" not in text or "alice" in text


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("pod_logs", {"namespace": "team-a", "name": "../../team-b/pods/x"}),
        ("pod_logs", {"namespace": "team-a", "name": "..%2F..%2Fteam-b%2Fpods%2Fx"}),
        ("get_pod", {"namespace": "team-a/../team-b", "name": "x"}),
        ("get_pod", {"namespace": "team-a", "name": "x/../../team-b/pods/y"}),
        ("get_resource", {"kind": "Secret", "namespace": "team-a", "name": "../../team-b/secrets/db"}),
        ("get_resource", {"kind": "pods/../../../api/v1/namespaces/team-b/pods", "name": "x", "namespace": "team-a"}),
        ("list_events", {"namespace": "team-a", "involved_object_name": "x,involvedObject.namespace=team-b"}),
        ("pod_logs", {"namespace": "team-a", "name": "web", "container": "../x"}),
        ("subgraph", {"namespace": "team-a", "kind": "Deployment", "name": "../team-b"}),
        ("analyze_logs", {"namespace": "team-a", "workload": "../../team-b/pods/x"}),
        ("list_pods", {"namespace": "team-a?x=1"}),
        ("list_pods", {"namespace": "TEAM-A"}),
    ],
)
async def test_name_arguments_cannot_steer_a_read(url: str, keys: Any, mcp_call: Any, sim: Any, tool: str,
                                                  args: dict[str, Any]) -> None:
    err, data = await mcp_call(url, tool, args, headers=as_user(keys[0], "carol", _groups(sim, "carol")))
    assert err and data["code"] == 400 and data["reason"] == "BadRequest", data
    assert "invalid" in data["error"]


async def test_an_impersonated_read_is_audited_with_both_identities(url: str, keys: Any, mcp_call: Any,
                                                                    sim: Any) -> None:
    sim.audit.clear()
    await mcp_call(url, "list_pods", {"namespace": "team-a"}, headers=as_user(keys[0], "alice", _groups(sim, "alice")))
    await mcp_call(url, "list_pods", {"namespace": "team-b"}, headers=as_user(keys[0], "alice", _groups(sim, "alice")))
    reads = [r for r in sim.audit.records() if r.resource == "pods"]
    assert reads and all((r.user, r.impersonated_user) == ("sleuth-reader", "alice") for r in reads)
    assert {(r.namespace, r.code) for r in reads} == {("team-a", 200), ("team-b", 403)}


async def test_a_persons_own_token_is_accepted_only_when_configured(kube_mcp: Any, keys: Any, mcp_call: Any,
                                                                    sim: Any) -> None:
    url = str(kube_mcp("sleuth-reader", accept_caller_token=True, verify_key=str(keys[1])).url)
    err, own = await mcp_call(url, "list_pods", {"namespace": "team-b"}, token=sim.token("bob"))
    assert not err and own["count"] >= 1
    err, other = await mcp_call(url, "list_pods", {"namespace": "team-a"}, token=sim.token("bob"))
    assert err and other["code"] == 403
    async with httpx.AsyncClient() as http:  # neither a token nor an assertion: refused
        r = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401 and "your own bearer token" in r.json()["error"]
