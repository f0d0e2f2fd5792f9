"""Every HTTP entry point of a real gateway (on real NATS and Valkey) fed Hypothesis-generated
requests: random JSON, wrong types, huge strings, invalid UTF-8, deep nesting, bad auth, bad
content types, odd request ids. Every answer is a 2xx or a 4xx with a request id, never a 5xx or
a hang, and a refused request leaves nothing behind (no job, no conversation or channel entry).

``-s`` prints the inputs tried and 5xx seen per endpoint."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.connected

FUZZ = settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
"""Fixed and reproducible: the same inputs every run, bounded time."""

REQUEST_TIMEOUT = 10.0
SHARED = [{"name": "shared", "members": ["group:team-a"]}]
_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

# ------------------------------------------------------------------ strategies

_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    _json_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _nested(depth: int) -> bytes:
    return b'{"query": ' + b"[" * depth + b"1" + b"]" * depth + b"}"


raw_bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),  # invalid UTF-8 and anything else
    st.integers(1, 100_000).map(_nested),
    st.integers(1, 200_000).map(lambda n: json.dumps({"query": "x" * n, "text": "y" * n}).encode()),
    st.sampled_from([b"", b"null", b"[]", b"{}", b'{"query": null}', b'{"query": 1e999}', b'{"query": "\\ud800"}',
                     b'{"query": "a", "history": "no"}', b'{"query": "a", "review": "yes"}', b"\xff\xfe{}",
                     b'{"query": "x"' + b" " * 70_000 + b"}", b'{"text": ["a"]}', b'{"query": "' + b"\\u0000" * 50 + b'"}']),
)
# Near-valid questions, so some get through and what is stored is checked against what was accepted.
questions = st.fixed_dictionaries(
    {"query": st.text(min_size=0, max_size=300)},
    optional={
        "history": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "system", 3]), "text": st.one_of(st.text(max_size=30),
                                                                                        st.integers())}),
            max_size=12)),
        "review": st.one_of(st.booleans(), st.integers(), st.text(max_size=3)),
        "text": st.one_of(st.text(max_size=50), st.integers()),
    },
).map(lambda d: json.dumps(d).encode())
bodies = st.one_of(raw_bodies, questions)
# Near-valid JSON-RPC, so the MCP layer and its tools are reached too.
_rpc_methods = st.one_of(st.sampled_from(["initialize", "tools/list", "tools/call", "tools/call", "ping",
                                          "notifications/initialized", "resources/list"]), st.text(max_size=20))
_rpc_params = st.one_of(json_values, st.fixed_dictionaries(
    {"name": st.sampled_from(["ask", "whoami", "nope", ""])},
    optional={"arguments": st.one_of(json_values, st.fixed_dictionaries(
        {"question": st.one_of(st.text(max_size=200), st.integers())}))}))
mcp_messages = st.one_of(
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": st.integers(0, 10**6), "method": _rpc_methods},
                          optional={"params": _rpc_params}),
    st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "1.0", 2])},
        optional={
            "id": st.one_of(st.integers(), st.text(max_size=10), st.none(), st.floats(), st.lists(st.integers())),
            "method": _rpc_methods,
            "params": _rpc_params,
        },
    ),
).map(lambda d: json.dumps(d).encode())



def feedback_bodies(job_ids: list[str]) -> st.SearchStrategy[bytes]:
    """Near-valid feedback on the jobs answered so far (so some is taken) and on anything else."""
    near = st.fixed_dictionaries(
        {"job_id": st.one_of(*[st.sampled_from(job_ids or ["none"])] * 4, st.text(max_size=120), st.integers(),
                             st.none()),
         "verdict": st.one_of(*[st.sampled_from(["up", "down"])] * 3, st.sampled_from(["", "UP", "meh"]),
                              st.integers(), st.none())},
        optional={
            "fixed_by": st.one_of(st.text(max_size=80), st.text(min_size=495, max_size=510),
                                  st.sampled_from(["a\x00b", "x\u202ey", "  "]), st.integers()),
        },
    ).map(lambda d: json.dumps(d).encode())
    return st.one_of(raw_bodies, near, near, near)


_header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=80)
authorizations = st.one_of(
    st.just("Bearer t-alice"),
    st.sampled_from([None, "Bearer t-alice", "Bearer t-alice", "Bearer t-alice", "Bearer t-bob", "Bearer",
                     "Bearer ", "bearer t-alice", "Basic dC1hbGljZTo=", "Bearer t-sleuth-reader",
                     "Bearer " + "x" * 4000]),
    _header_text.map(lambda t: "Bearer " + t),
)
content_types = st.one_of(
    st.just("application/json"),
    st.sampled_from([None, "application/json", "application/json", "text/plain", "application/x-www-form-urlencoded",
                     "application/json; charset=latin-1", "multipart/form-data; boundary=x"]),
    _header_text,
)
request_ids = st.one_of(st.none(), _header_text, st.sampled_from(["ok-id.1", "a" * 65, "../../etc", "x\ty"]))
accepts = st.one_of(st.just("application/json, text/event-stream"),
                    st.sampled_from([None, "application/json", "text/event-stream", "*/*"]))


def _headers(auth: str | None, ctype: str | None, rid: str | None, accept: str | None) -> dict[bytes, bytes]:
    headers: dict[bytes, bytes] = {}
    for name, value in (("authorization", auth), ("content-type", ctype), ("x-request-id", rid), ("accept", accept)):
        if value is not None:
            headers[name.encode()] = value.strip().encode("latin-1")  # header values: latin-1 bytes as sent
    return headers


# ------------------------------------------------------------------ the run


def _check(resp: httpx.Response, endpoint: str) -> None:
    rid = resp.headers.get("x-request-id", "")
    assert _ID.match(rid), (endpoint, resp.status_code, dict(resp.headers))
    assert resp.status_code < 500, (endpoint, resp.status_code, resp.text[:300])
    if resp.status_code >= 400 and not (endpoint == "/mcp" and "jsonrpc" in resp.text):
        body = resp.json()
        assert isinstance(body.get("error"), str) and body["error"], (endpoint, body)
        assert body.get("request_id") == rid, (endpoint, body, rid)


def _fuzz(url: str, phase: str, counts: Counter[str], errors: Counter[str], accepted: Counter[str],
          job_ids: list[str]) -> None:
    """One phase; runs in a thread: the gateway serves on the test's event loop meanwhile."""
    client = httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT)

    def send(endpoint: str, method: str, path: str, body: bytes | None, headers: dict[bytes, bytes]) -> httpx.Response:
        counts[endpoint] += 1
        resp = client.request(method, path, content=body, headers=headers)
        if resp.status_code >= 500:
            errors[endpoint] += 1
        _check(resp, endpoint)
        return resp

    @FUZZ
    @given(body=bodies, auth=authorizations, ctype=content_types, rid=request_ids, stream=st.booleans())
    def query(body: bytes, auth: str | None, ctype: str | None, rid: str | None, stream: bool) -> None:
        resp = send("POST /v1/query", "POST", "/v1/query" + ("?stream=1" if stream else ""), body,
                    _headers(auth, ctype, rid, None))
        if resp.status_code == 200:
            accepted["query"] += 1
            if "job_id" in resp.text:
                accepted["jobs"] += 1

    @FUZZ
    @given(body=bodies, auth=authorizations, ctype=content_types, rid=request_ids,
           channel=st.sampled_from(["shared", "shared", "nope", "..", "%00", "a" * 300]))
    def post(body: bytes, auth: str | None, ctype: str | None, rid: str | None, channel: str) -> None:
        resp = send("POST /v1/channels/{c}/messages", "POST", f"/v1/channels/{channel}/messages", body,
                    _headers(auth, ctype, rid, None))
        if resp.status_code == 200:
            accepted["posts"] += len(resp.json()["messages"])

    @FUZZ
    @given(body=st.one_of(mcp_messages, bodies), auth=authorizations, ctype=content_types, rid=request_ids,
           accept=accepts)
    def mcp(body: bytes, auth: str | None, ctype: str | None, rid: str | None, accept: str | None) -> None:
        resp = send("POST /mcp", "POST", "/mcp", body, _headers(auth, ctype, rid, accept))
        if resp.status_code == 200:
            accepted["mcp"] += 1

    @FUZZ
    @given(auth=authorizations, rid=request_ids,
           path=st.sampled_from(["/v1/whoami", "/v1/conversation", "/v1/channels", "/v1/channels/shared/messages"]),
           query=st.one_of(st.just(""), _header_text.map(lambda t: "?" + httpx.QueryParams({"q": t}).__str__())))
    def reads(auth: str | None, rid: str | None, path: str, query: str) -> None:
        send("GET /v1/*", "GET", path + query, None, _headers(auth, None, rid, None))

    @FUZZ
    @given(body=feedback_bodies(job_ids), auth=authorizations, ctype=content_types, rid=request_ids)
    def feedback(body: bytes, auth: str | None, ctype: str | None, rid: str | None) -> None:
        resp = send("POST /v1/feedback", "POST", "/v1/feedback", body, _headers(auth, ctype, rid, None))
        if resp.status_code == 200:
            accepted["feedback"] += 1

    with client:
        {"query": query, "post": post, "mcp": mcp, "reads": reads, "feedback": feedback}[phase]()


async def test_every_gateway_entry_point_answers_fuzzed_requests_with_a_4xx_or_2xx(start_stack):
    async with start_stack(
        channels=SHARED,
        rate_limit_capacity=100_000, rate_limit_refill_per_second=1000.0,
        read_rate_limit_capacity=100_000, read_rate_limit_refill_per_second=1000.0,
        auth_failure_limit=100_000, max_sign_ins_per_address=100_000,
        conversation_max_messages=10_000, channel_max_messages=10_000,
        redis_timeout=5.0, authz_timeout=5.0,
    ) as s:
        counts: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        accepted: Counter[str] = Counter()

        async def stored() -> tuple[int, int, int]:
            """(jobs published, conversation entries of alice and bob, messages in the channel)."""
            entries = 0
            for token in ("t-alice", "t-bob"):
                got = await s.client.get("/v1/conversation", headers={"Authorization": f"Bearer {token}"})
                entries += len(got.json()["messages"])
            channel = await s.client.get("/v1/channels/shared/messages", headers={"Authorization": "Bearer t-alice"})
            return len(s.agent.jobs), entries, len(channel.json()["messages"])

        for phase in ("query", "post", "mcp", "reads", "feedback"):
            before = await stored()
            kept = len(s.agent.feedback)
            job_ids = sorted({j.id for j in s.agent.jobs if j.requester.user == "alice"})  # most requests are hers
            await asyncio.to_thread(_fuzz, s.url, phase, counts, errors, accepted, job_ids)
            jobs, entries, posts = await stored()
            # Feedback is kept exactly when it was answered 200: none half-stored, none from another phase.
            assert len(s.agent.feedback) - kept == (accepted["feedback"] if phase == "feedback" else 0), phase
            # Only what was accepted left anything behind: a job for each investigation answered,
            # a question and an answer in the asker's conversation for each question answered,
            # the channel's messages exactly those answered; reads and MCP's refusals nothing.
            if phase == "query":
                assert jobs - before[0] == accepted["jobs"], (jobs, before, accepted)
                assert entries - before[1] == 2 * accepted["query"], (entries, before, accepted)
            if phase == "post":
                assert posts - before[2] == accepted["posts"], (posts, before, accepted)
            if phase in ("post", "reads"):
                assert (jobs, entries) == before[:2], phase
            if phase in ("reads", "feedback") or (phase == "mcp" and accepted["mcp"] == 0):
                assert (jobs, entries, posts) == before, phase
        for endpoint, n in sorted(counts.items()):
            print(f"fuzz gateway {endpoint}: {n} inputs tried, {errors[endpoint]} 5xx")
        print(f"fuzz gateway: accepted {dict(accepted)}")
        assert sum(errors.values()) == 0
        assert all(n >= 100 for n in counts.values()), counts
        # The fuzzer reached past the checks on every endpoint.
        assert accepted["jobs"] > 0 and accepted["posts"] > 0 and accepted["mcp"] > 0, accepted
        assert accepted["feedback"] > 0, accepted

