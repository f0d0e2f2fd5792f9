"""kube-mcp's HTTP surface (issue 16): every response carries a request id and the security headers
the other services send, errors are ``{error, request_id}`` (or JSON-RPC errors from the MCP layer),
and Hypothesis-generated requests to ``/mcp`` — random JSON-RPC, wrong types, bad identities,
content types and request ids — get a 2xx or a 4xx, never a 5xx or a hang.

``-s`` prints the inputs tried and 5xx seen."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_common.httpserver import SECURITY_HEADERS
from sleuth_common.identity import ASSERTION_HEADER, IdentitySigner, generate_keypair
from sleuth_kube_mcp import TOOL_NAMES

pytestmark = pytest.mark.connected

AUD = "kube-mcp/demo"
_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[IdentitySigner, Path]:
    private, public = generate_keypair()
    d = tmp_path_factory.mktemp("keys")
    (d / "agent.pub").write_bytes(public)
    return IdentitySigner.from_pem(private), d / "agent.pub"


@pytest.fixture(scope="module")
def server(kube_mcp: Any, keys: tuple[IdentitySigner, Path]) -> Any:
    return kube_mcp("sleuth-reader", verify_key=str(keys[1]))


def _secure(resp: httpx.Response) -> str:
    """The request id, after checking the headers every response carries."""
    for name, value in SECURITY_HEADERS:
        assert resp.headers.get(name.decode()) == value.decode(), (resp.status_code, name, dict(resp.headers))
    assert resp.headers.get("content-security-policy", "").startswith("default-src 'none'")
    rid = resp.headers.get("x-request-id", "")
    assert _ID.match(rid), dict(resp.headers)
    return rid


def test_every_response_has_a_request_id_and_the_security_headers(server, keys) -> None:
    alice = keys[0].mint("alice", ("team-a",), audience=AUD)
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with httpx.Client(base_url=server.base_url, timeout=10) as c:
        ok = c.post("/mcp", json=init, headers={ASSERTION_HEADER: alice, "Accept": ACCEPT, "X-Request-Id": "trace-7.a"})
        assert ok.status_code == 200 and "list_pods" in ok.text
        assert _secure(ok) == "trace-7.a"  # a caller's id that looks like one is kept
        refused = c.post("/mcp", json=init, headers={"Accept": ACCEPT, "X-Request-Id": "../../etc"})
        assert refused.status_code == 401
        rid = _secure(refused)
        assert rid != "../../etc" and refused.json()["request_id"] == rid and "unauthenticated" in refused.json()["error"]
        stream = c.get("/mcp", headers={ASSERTION_HEADER: alice, "Accept": "text/event-stream"})
        assert stream.status_code == 405 and stream.headers["allow"] == "POST"  # no event stream held open
        assert stream.json()["request_id"] == _secure(stream)
        missing = c.get("/nothing-here")
        assert missing.status_code == 404 and missing.json() == {"error": "Not Found", "request_id": _secure(missing)}
        wrong = c.put("/healthz")
        assert wrong.status_code == 405 and wrong.json()["request_id"] == _secure(wrong)
        for path in ("/healthz", "/readyz", "/metrics"):
            _secure(c.get(path))


FUZZ = settings(max_examples=200, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
"""Fixed and reproducible: the same inputs every run, bounded time."""

_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30))
json_values = st.recursive(
    _leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=15,
)
_arguments = st.one_of(json_values, st.fixed_dictionaries({}, optional={
    "namespace": st.one_of(st.sampled_from(["team-a", "team-b", "kube-system", "", "..", "team-a/../b", "a" * 300]),
                           st.text(max_size=20), st.integers()),
    "name": st.one_of(st.sampled_from(["checkout-api-7d9f8c6b5d-x2k4p", "%2e%2e", "x y"]), st.text(max_size=20)),
    "kind": st.one_of(st.sampled_from(["Deployment", "secrets", "nodes", "Secret", "cm", ""]), st.text(max_size=12)),
    "label_selector": st.one_of(st.sampled_from(["app=web", "a in (b", "!!", "x" * 2000]), st.text(max_size=20)),
    "tail_lines": st.one_of(st.integers(-5, 10_000), st.text(max_size=5)),
    "hops": st.integers(-3, 50), "budget": st.integers(-1, 10**7),
    "types": st.one_of(st.lists(st.sampled_from(["Warning", "Normal", "Bogus"]), max_size=3), st.text(max_size=5)),
}))
_methods = st.one_of(st.sampled_from(["initialize", "tools/list", "tools/call", "tools/call", "tools/call", "ping",
                                      "notifications/initialized", "resources/list", "prompts/get"]),
                     st.text(max_size=20))
_params = st.one_of(json_values, st.fixed_dictionaries(
    {"name": st.one_of(st.sampled_from([*TOOL_NAMES, "nope", ""]), st.text(max_size=10))},
    optional={"arguments": _arguments}))
messages = st.one_of(
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": st.integers(0, 10**6), "method": _methods},
                          optional={"params": _params}),
    st.fixed_dictionaries({"jsonrpc": st.sampled_from(["2.0", "1.0", 2])}, optional={
        "id": st.one_of(st.integers(), st.text(max_size=10), st.none(), st.floats(), st.lists(st.integers())),
        "method": _methods, "params": _params}),
).map(lambda d: json.dumps(d).encode())
raw = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),
    st.integers(1, 50_000).map(lambda n: b"[" * n + b"]" * n),
    st.sampled_from([b"", b"null", b"[]", b"{}", b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', b"\xff\xfe{}",
                     b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_pods", '
                     b'"arguments": {"namespace": "\\ud800"}}}']),
)
_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=60)
identities = st.sampled_from(["alice", "alice", "alice", "carol", None, "garbage", "masters", "bearer"])
content_types = st.sampled_from(["application/json"] * 8 + [None, "text/plain", "application/json; charset=utf-8", "x"])
accepts = st.sampled_from([ACCEPT] * 6 + [None, "application/json", "text/event-stream", "*/*"])
request_ids = st.one_of(st.none(), _text, st.sampled_from(["ok-id.1", "a" * 65, "x\ty"]))
methods = st.sampled_from(["POST"] * 12 + ["GET", "DELETE", "PUT", "OPTIONS"])


def _identity(keys: tuple[IdentitySigner, Path], who: str | None) -> dict[str, str]:
    signer = keys[0]
    if who in ("alice", "carol"):
        return {ASSERTION_HEADER: signer.mint(who, ("team-a",) if who == "alice" else ("platform-admins",),
                                              audience=AUD)}
    if who == "masters":
        return {ASSERTION_HEADER: signer.mint("mallory", ("system:masters",), audience=AUD)}
    if who == "garbage":
        return {ASSERTION_HEADER: "eyJhbGciOiJub25lIn0.e30."}
    return {"Authorization": "Bearer demo-alice-token"} if who == "bearer" else {}


def test_fuzzed_mcp_requests_get_a_4xx_or_a_json_rpc_answer_never_a_5xx(server, keys) -> None:
    counts: Counter[str] = Counter()
    client = httpx.Client(base_url=server.base_url, timeout=10)

    @FUZZ
    @given(body=st.one_of(messages, messages, messages, raw), who=identities, ctype=content_types, accept=accepts, rid=request_ids,
           method=methods)
    def one(body: bytes, who: str | None, ctype: str | None, accept: str | None, rid: str | None, method: str) -> None:
        headers = _identity(keys, who)
        for name, value in (("content-type", ctype), ("accept", accept), ("x-request-id", rid)):
            if value is not None:
                headers[name] = value.strip()
        resp = client.request(method, "/mcp", content=body if method == "POST" else None,
                              headers={k: v.encode("latin-1") for k, v in headers.items()})  # type: ignore[misc]
        counts["inputs"] += 1
        counts[f"status {resp.status_code}"] += 1
        if resp.status_code >= 500:
            counts["5xx"] += 1
        assert resp.status_code < 500, (resp.status_code, resp.text[:300])
        rid_out = _secure(resp)
        if resp.status_code >= 400 and "jsonrpc" not in resp.text:
            assert resp.json()["request_id"] == rid_out and resp.json()["error"], resp.text[:300]

    with client:
        one()
    print(f"\nkube-mcp /mcp fuzz: {counts['inputs']} inputs, {counts['5xx']} 5xx;",
          ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()) if k.startswith("status")))
    assert counts["inputs"] >= 200 and counts["5xx"] == 0
    assert counts["status 200"] > 30 and sum(v for k, v in counts.items() if k.startswith("status 4")) > 10
