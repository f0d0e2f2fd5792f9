"""What an attacker on the network (a tenant, or someone with no token at all) can do to the gateway,
through its public HTTP surface: bursts, floods of reads and guesses, rebinding, slow clients,
hostile bodies, and Sleuth's own identities trying to sign in."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sleuth.embedded import free_port, wait_for_port

pytestmark = pytest.mark.connected

ALICE = {"Authorization": "Bearer t-alice"}
BOB = {"Authorization": "Bearer t-bob"}
SHARED = [{"name": "shared", "members": ["group:team-a", "group:team-b"]}]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_error(resp: httpx.Response, status: int, *words: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) >= {"error", "request_id"}, body
    assert body["request_id"] == resp.headers["x-request-id"]
    for word in words:
        assert word in body["error"], body
    return body


def retry_after(resp: httpx.Response) -> int:
    seconds = int(resp.headers["retry-after"])
    assert seconds >= 1
    return seconds


# ------------------------------------------------------------------ 1. one user's burst

BURST_TIMEOUTS = {"redis_timeout": 5.0, "authz_timeout": 5.0}
"""The burst is sent from the event loop the gateway runs in: on a busy machine (tests running in
parallel) a Redis command or an authz-cache look-up can wait there longer than the fixtures'
short timeouts, which would answer 503 for reasons no gateway of its own would have. What is
checked (who is refused at once, who is served) does not depend on these timeouts."""


async def _signed_in(s: Any, *headers: dict[str, str]) -> None:
    """Sign these callers in first: the burst is about what a signed-in user can do (and the fake
    authz-cache, in the test's own event loop, is not made to answer under the burst)."""
    for h in headers:
        assert (await s.client.get("/v1/whoami", headers=h)).status_code == 200


async def test_one_users_burst_of_questions_leaves_others_served(start_stack):
    """200 concurrent questions from alice: a few run, the rest are told to wait (429), and bob's
    questions asked in the middle of the burst are answered; nobody gets a 503."""
    async with start_stack(
        rate_limit_capacity=1000, rate_limit_refill_per_second=100, max_inflight_per_user=4, **BURST_TIMEOUTS
    ) as s:
        await _signed_in(s, ALICE, BOB)
        limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
        async with httpx.AsyncClient(base_url=s.url, timeout=30, limits=limits) as burst:
            question = {"query": "what is failing in team-a?"}
            alice = [burst.post("/v1/query", json=question, headers=ALICE) for _ in range(200)]
            bob = [burst.post("/v1/query", json={"query": "and team-b?"}, headers=BOB) for _ in range(3)]
            *alice_answers, b1, b2, b3 = await asyncio.gather(*alice, *bob)
        for resp in (b1, b2, b3):
            assert resp.status_code == 200, resp.text
            assert resp.json()["user"] == "bob"
        statuses = sorted({r.status_code for r in alice_answers})
        assert statuses == [200, 429], {r.text for r in alice_answers if r.status_code not in (200, 429)}
        refused = [r for r in alice_answers if r.status_code == 429]
        assert_error(refused[0], 429, "in flight")
        retry_after(refused[0])
        # The refused questions never reached the agent.
        assert sum(j.requester.user == "alice" for j in s.agent.jobs) == 200 - len(refused)


async def test_a_burst_of_reads_is_cut_at_the_door_and_others_are_served(start_stack):
    """200 concurrent reads from alice (her read bucket large enough for all of them): the ones
    over her share of requests in progress are refused at once, before they wait for Redis, and
    bob's reads during the burst are answered; nobody gets a 503."""
    async with start_stack(
        read_rate_limit_capacity=1000, read_rate_limit_refill_per_second=100, max_requests_per_user=8,
        **BURST_TIMEOUTS,
    ) as s:
        await _signed_in(s, ALICE, BOB)
        limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
        async with httpx.AsyncClient(base_url=s.url, timeout=30, limits=limits) as burst:
            alice = [burst.get("/v1/conversation", headers=ALICE) for _ in range(200)]
            bob = [burst.get("/v1/conversation", headers=BOB) for _ in range(3)]
            *alice_answers, b1, b2, b3 = await asyncio.gather(*alice, *bob)
        for resp in (b1, b2, b3):
            assert resp.status_code == 200, resp.text
            assert resp.json()["user"] == "bob"
        assert {r.status_code for r in alice_answers} <= {200, 429}, {r.text for r in alice_answers}
        refused = [r for r in alice_answers if r.status_code == 429]
        assert refused, "a burst of 200 was let through whole"
        assert_error(refused[0], 429, "in flight")
        retry_after(refused[0])


async def test_a_burst_of_bad_tokens_from_one_address_leaves_other_addresses_served(start_stack):
    """An outsider sends 200 different tokens at once from one address: a few are looked up, the
    rest are refused at once; bob signs in from another address meanwhile."""
    async with start_stack(max_sign_ins_per_address=4, auth_failure_limit=1000, **BURST_TIMEOUTS) as s:
        limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
        other = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with (
            httpx.AsyncClient(base_url=s.url, timeout=30, limits=limits) as burst,
            httpx.AsyncClient(base_url=s.url, timeout=30, transport=other) as bob_client,
        ):
            guesses = [burst.get("/v1/whoami", headers=bearer(f"t-guess-{i}")) for i in range(200)]
            bob = [bob_client.get("/v1/whoami", headers=BOB) for _ in range(3)]
            *answers, b1, b2, b3 = await asyncio.gather(*guesses, *bob)
        assert [r.status_code for r in (b1, b2, b3)] == [200, 200, 200], b1.text
        assert {r.status_code for r in answers} == {401, 429}
        busy = [r for r in answers if r.status_code == 429]
        assert_error(busy[0], 429, "sign-ins in progress")
        # Only the look-ups let through reached authz-cache (bob's once, the guesses a few).
        assert s.authz.requests == 1 + sum(r.status_code == 401 for r in answers)
        assert s.authz.requests < 100


# ------------------------------------------------------------------ 2. reads are rate-limited


@dataclass(frozen=True)
class Read:
    method: str
    path: str


READS = [
    Read("GET", "/v1/whoami"),
    Read("GET", "/v1/conversation"),
    Read("GET", "/v1/channels"),
    Read("GET", "/v1/channels/shared/messages"),
    Read("DELETE", "/v1/conversation"),
]


async def test_every_read_endpoint_takes_from_the_users_read_bucket(start_stack):
    async with start_stack(
        channels=SHARED, read_rate_limit_capacity=len(READS), read_rate_limit_refill_per_second=0.01
    ) as s:
        for read in READS:
            resp = await s.client.request(read.method, read.path, headers=ALICE)
            assert resp.status_code == 200, (read, resp.text)
        for read in READS:
            resp = await s.client.request(read.method, read.path, headers=ALICE)
            assert_error(resp, 429, "too many requests")
            assert retry_after(resp) > 1
        # Bob has his own bucket; alice's questions have theirs.
        for read in READS:
            assert (await s.client.request(read.method, read.path, headers=BOB)).status_code == 200
        assert (await s.client.post("/v1/query", json={"query": "help"}, headers=ALICE)).status_code == 200


# ------------------------------------------------------------------ 3. failed sign-ins


async def test_a_refused_token_is_remembered_briefly_and_costs_one_review(start_stack):
    async with start_stack() as s:
        for _ in range(10):
            assert_error(await s.client.get("/v1/whoami", headers=bearer("t-wrong")), 401, "not accepted")
        assert s.authz.requests == 1
        # Only a hash of the refused token is kept.
        authenticator = s.app.state.gateway.authenticator
        assert all("t-wrong" not in key for key in authenticator._refused)


async def test_failed_sign_ins_are_throttled_per_address(start_stack):
    async with start_stack(auth_failure_limit=5, auth_failure_window=60) as s:
        assert (await s.client.get("/v1/whoami", headers=ALICE)).status_code == 200
        asked = s.authz.requests
        for i in range(5):
            # A forged X-Forwarded-For does not make a new address.
            headers = {**bearer(f"t-guess-{i}"), "X-Forwarded-For": f"10.0.0.{i}"}
            assert_error(await s.client.get("/v1/whoami", headers=headers), 401, "not accepted")
        assert s.authz.requests == asked + 5
        for i in range(5, 40):
            headers = {**bearer(f"t-guess-{i}"), "X-Forwarded-For": f"10.0.1.{i}"}
            resp = await s.client.get("/v1/whoami", headers=headers)
            assert_error(resp, 429, "failed sign-ins")
            assert 1 <= retry_after(resp) <= 61
        resp = await s.client.post("/v1/query", json={"query": "hi"}, headers=bearer("t-guess-x"))
        assert_error(resp, 429, "failed sign-ins")
        # None of those cost a TokenReview ...
        assert s.authz.requests == asked + 5
        # ... a token not yet known waits too (it would cost one) ...
        assert_error(await s.client.get("/v1/whoami", headers=BOB), 429, "failed sign-ins")
        assert s.authz.requests == asked + 5
        # ... while a sign-in already made keeps working.
        assert (await s.client.get("/v1/whoami", headers=ALICE)).json()["user"] == "alice"


# ------------------------------------------------------------------ 4. channel posts


async def test_channel_posts_take_from_the_users_question_bucket(start_stack):
    async with start_stack(channels=SHARED, rate_limit_capacity=3, rate_limit_refill_per_second=0.01) as s:
        path = "/v1/channels/shared/messages"
        for i in range(3):
            resp = await s.client.post(path, json={"text": f"note {i}"}, headers=ALICE)
            assert resp.status_code == 200, resp.text
        resp = await s.client.post(path, json={"text": "spam"}, headers=ALICE)
        assert_error(resp, 429, "too many")
        retry_after(resp)
        assert_error(await s.client.post("/v1/query", json={"query": "help"}, headers=ALICE), 429)
        assert (await s.client.post(path, json={"text": "bob here"}, headers=BOB)).status_code == 200
        texts = [m["text"] for m in (await s.client.get(path, headers=BOB)).json()["messages"]]
        assert texts == ["note 0", "note 1", "note 2", "bob here"]


# ------------------------------------------------------------------ 5. Host allow-list


@dataclass(frozen=True)
class HostCase:
    host: str  # {port} is the gateway's port
    allowed: bool
    config: tuple[str, ...] = ()


HOSTS = [
    HostCase("127.0.0.1:{port}", True),
    HostCase("localhost:{port}", True),
    HostCase("LocalHost:{port}", True),
    HostCase("[::1]:{port}", True),
    HostCase("localhost:9999", True),  # a port-forward: loopback names cannot be rebound
    HostCase("evil.example", False),
    HostCase("evil.example:{port}", False),
    HostCase("127.0.0.1.evil.example:{port}", False),
    HostCase("", False),
    HostCase("sleuth.example.com", True, ("sleuth.example.com",)),
    HostCase("sleuth.example.com:443", True, ("sleuth.example.com",)),
    HostCase("sleuth.example.com:8443", False, ("sleuth.example.com:443",)),
    HostCase("a.corp.example", True, ("*.corp.example",)),
    HostCase("corp.example", False, ("*.corp.example",)),
    HostCase("evil.example", False, ("sleuth.example.com",)),
    HostCase("evil.example", True, ("*",)),
]


@pytest.mark.parametrize("case", HOSTS, ids=lambda c: f"{c.host or 'empty'}-{','.join(c.config)}")
async def test_only_allowed_host_names_are_answered(start_stack, case: HostCase):
    async with start_stack(allowed_hosts=list(case.config)) as s:
        host = case.host.format(port=s.settings.gateway.port)
        resp = await s.client.get("/v1/whoami", headers={**ALICE, "Host": host})
        if case.allowed:
            assert resp.status_code == 200, resp.text
        else:
            assert_error(resp, 400, "unknown host")
            resp = await s.client.post("/v1/query", json={"query": "what?"}, headers={**ALICE, "Host": host})
            assert_error(resp, 400, "unknown host")
            assert_error(await s.client.get("/", headers={"Host": host}), 400, "unknown host")
            assert s.authz.requests == 0 and s.agent.jobs == []
            # Probes reach the pod by its IP: liveness and readiness answer whatever the Host.
            assert (await s.client.get("/healthz", headers={"Host": host})).status_code == 200
            assert (await s.client.get("/readyz", headers={"Host": host})).status_code == 200


# ------------------------------------------------------------------ 6. slow clients


def _slow_client(port: int, head: bytes, deadline: float) -> tuple[float, bytes]:
    """Send ``head`` one byte a second; return (seconds until the server closed, what it sent)."""
    t0 = time.monotonic()
    got = b""
    with socket.create_connection(("127.0.0.1", port), timeout=deadline) as sock:
        sock.settimeout(1.0)
        for byte in head:
            if time.monotonic() - t0 > deadline:
                return time.monotonic() - t0, got
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return time.monotonic() - t0, got
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - t0, got
            if not chunk:
                return time.monotonic() - t0, got
            got += chunk
    return time.monotonic() - t0, got


def test_a_slow_header_client_is_cut_off(nats_server, valkey, tmp_path: Path) -> None:
    """The gateway as ``python -m sleuth_gateway`` runs it: a client that sends its request head one
    byte a second is answered 408 and closed, while other clients are served."""
    port = free_port()
    config = tmp_path / "sleuth.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "nats": {"url": nats_server.url},
                "redis": {"url": valkey.url},
                "gateway": {"port": port, "header_timeout": 2.0},
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth_gateway", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port("127.0.0.1", port, 20, proc)  # type: ignore[arg-type]
        head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Padding: " + b"a" * 60 + b"\r\n\r\n"
        elapsed, got = _slow_client(port, head, deadline=15.0)
        assert elapsed < 15.0, "the server held a slow-header client for 15 s"
        assert got.startswith(b"HTTP/1.1 408"), got
        # A client that connects and sends nothing is closed too (quietly: nothing was asked).
        with socket.create_connection(("127.0.0.1", port), timeout=15) as idle:
            idle.settimeout(15)
            t0 = time.monotonic()
            assert idle.recv(4096) == b""
            assert time.monotonic() - t0 < 15
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


async def test_a_slow_body_is_cut_off(start_stack):
    async with start_stack(body_timeout=2.0) as s:
        port = s.settings.gateway.port
        head = (
            "POST /v1/query HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\n"
            "Authorization: Bearer t-alice\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 200\r\n\r\n"
        ).encode()

        def slow() -> tuple[float, bytes]:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(head)
                return _slow_client_on(sock, b'{"query": "' + b"x" * 150, deadline=15.0)

        elapsed, got = await asyncio.to_thread(slow)
        assert elapsed < 15.0, "the server held a slow-body client for 15 s"
        assert got.startswith(b"HTTP/1.1 408"), got
        assert b"request_id" in got and b"did not arrive" in got
        assert s.agent.jobs == []


def _slow_client_on(sock: socket.socket, body: bytes, deadline: float) -> tuple[float, bytes]:
    t0 = time.monotonic()
    got = b""
    sock.settimeout(1.0)
    for byte in body:
        if time.monotonic() - t0 > deadline:
            break
        try:
            sock.sendall(bytes([byte]))
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        got += chunk
        if b"\r\n\r\n" in got:
            break
    elapsed = time.monotonic() - t0
    # The response's body may come in a later segment than its head: read it to the end.
    while b"\r\n\r\n" in got and time.monotonic() - t0 < deadline:
        try:
            chunk = sock.recv(4096)
        except (TimeoutError, OSError):
            break
        if not chunk:
            break
        got += chunk
    return elapsed, got


# ------------------------------------------------------------------ 7. response headers


@dataclass(frozen=True)
class HeaderCase:
    name: str
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None = None
    status: int = 200


HEADER_CASES = [
    HeaderCase("whoami", "GET", "/v1/whoami", ALICE),
    HeaderCase("unauthenticated", "GET", "/v1/whoami", {}, status=401),
    HeaderCase("not-found", "GET", "/nope", {}, status=404),
    HeaderCase("answer", "POST", "/v1/query", ALICE, {"query": "what is failing in team-a?"}),
    HeaderCase("stream", "POST", "/v1/query?stream=1", ALICE, {"query": "what is failing in team-a?"}),
    HeaderCase("conversation", "GET", "/v1/conversation", ALICE),
    HeaderCase("channel", "GET", "/v1/channels/shared/messages", ALICE),
    HeaderCase("bad-body", "POST", "/v1/query", ALICE, {"nope": 1}, status=400),
    HeaderCase("page", "GET", "/", {}),
    HeaderCase("health", "GET", "/healthz", {}),
    HeaderCase("ready", "GET", "/readyz", {}),
    HeaderCase("unknown-host", "GET", "/v1/whoami", {**ALICE, "Host": "evil.example"}, status=400),
]


@pytest.mark.parametrize("case", HEADER_CASES, ids=lambda c: c.name)
async def test_responses_are_never_cached_or_sniffed(start_stack, case: HeaderCase):
    async with start_stack(channels=SHARED) as s:
        async with s.client.stream(case.method, case.path, json=case.body, headers=case.headers) as resp:
            await resp.aread()
        assert resp.status_code == case.status, resp.text
        assert resp.headers["x-content-type-options"] == "nosniff"
        assert resp.headers["cache-control"] == "no-store"
        if case.name == "page":
            assert "script-src" in resp.headers["content-security-policy"]
            assert resp.headers["referrer-policy"] == "no-referrer"


# ------------------------------------------------------------------ 8. Sleuth's own identities


@dataclass(frozen=True)
class IdentityCase:
    token: str
    refused: bool


IDENTITIES = [
    IdentityCase("t-sleuth-reader", True),
    IdentityCase("t-sleuth-authz", True),
    IdentityCase("t-sa-agent", True),
    IdentityCase("t-sa-group", True),
    IdentityCase("t-sa-elsewhere", False),
    IdentityCase("t-alice", False),
]


@pytest.mark.parametrize("case", IDENTITIES, ids=lambda c: c.token)
async def test_sleuths_own_identities_cannot_use_chat(start_stack, case: IdentityCase):
    members = ["group:team-a", "group:system:serviceaccounts:team-a"]
    async with start_stack(channels=[{"name": "all", "members": members}]) as s:
        requests = [
            ("GET", "/v1/whoami", None),
            ("POST", "/v1/query", {"query": "what is failing everywhere?"}),
            ("GET", "/v1/conversation", None),
            ("GET", "/v1/channels/all/messages", None),
            ("POST", "/v1/channels/all/messages", {"text": "hello"}),
        ]
        for method, path, body in requests:
            resp = await s.client.request(method, path, json=body, headers=bearer(case.token))
            if case.refused:
                assert_error(resp, 403, "service identities cannot use chat")
            else:
                assert resp.status_code == 200, (path, resp.text)
        assert len(s.agent.jobs) == (0 if case.refused else 1)


async def test_refused_identities_come_from_the_config(start_stack):
    async with start_stack(refused_identities=["user:alice"]) as s:
        assert_error(await s.client.get("/v1/whoami", headers=ALICE), 403, "service identities")
        reader = await s.client.get("/v1/whoami", headers=bearer("t-sleuth-reader"))
        assert reader.status_code == 200 and reader.json()["user"] == "sleuth-reader"


# ------------------------------------------------------------------ 9. hostile bodies


@dataclass(frozen=True)
class BodyCase:
    name: str
    raw: bytes
    words: tuple[str, ...] = ()


BODIES = [
    BodyCase("deep-array", b'{"query": "x", "pad": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", ("nested",)),
    BodyCase("deep-object", b'{"a": ' * 33 + b"1" + b"}" * 33, ("nested",)),
    BodyCase("deep-history", b'{"query": "x", "history": ' + b"[" * 40 + b"]" * 40 + b"}", ("nested",)),
    BodyCase("invalid-utf8", b'{"query": "why \xff\xfe crash?", "text": "why \xff\xfe crash?"}', ("UTF-8",)),
    BodyCase("lone-surrogate", b'{"query": "\\ud800 why", "text": "\\ud800 why"}', ("Unicode",)),
    BodyCase("huge-integer", b'{"query": "x", "text": "x", "n": ' + b"9" * 5000 + b"}", ("number",)),
    BodyCase("huge-float", b'{"query": "x", "text": "x", "review": 1e999999}', ("number",)),
    BodyCase("nan", b'{"query": "x", "text": "x", "n": NaN}', ("number",)),
    BodyCase("truncated", b'{"query": "x', ("malformed JSON",)),
    BodyCase("not-an-object", b'"just a string"'),
    BodyCase("empty", b""),
    BodyCase("nul-bytes", b"\x00\x00\x00\x00"),
]


@pytest.mark.parametrize("case", BODIES, ids=lambda c: c.name)
async def test_hostile_bodies_are_a_one_line_400(start_stack, case: BodyCase):
    async with start_stack(channels=SHARED, max_json_depth=32) as s:
        for path in ("/v1/query", "/v1/channels/shared/messages"):
            resp = await s.client.post(
                path, content=case.raw, headers={**ALICE, "Content-Type": "application/json"}
            )
            body = assert_error(resp, 400, *case.words)
            assert "\n" not in body["error"] and "Traceback" not in body["error"], body
            assert len(body["error"]) < 300, body
        assert s.agent.jobs == []
        assert (await s.client.get("/v1/channels/shared/messages", headers=ALICE)).json()["messages"] == []
        assert (await s.client.get("/v1/conversation", headers=ALICE)).json()["messages"] == []


async def test_a_body_just_under_the_limits_is_accepted(start_stack):
    async with start_stack(channels=SHARED, max_json_depth=32) as s:
        # Brackets and escaped quotes inside strings are text, not nesting.
        question = 'why is api crashing? 🙂 ' + '[{\\"' * 100
        history = [{"role": "user", "text": "é ü 日本 🙂"}]
        doc = {"query": question, "history": history, "meta": {"a": [[[[1, -2.5e10, 12345678901234567890]]]]}}
        resp = await s.client.post("/v1/query", content=json.dumps(doc).encode(), headers=ALICE)
        assert resp.status_code == 200, resp.text
        assert s.agent.jobs[0].question == question
        assert s.agent.jobs[0].history[0].text == "é ü 日本 🙂"
        post = {"text": "a note [[[[" + "]" * 40, "extra": [[[["x"]]]]}
        resp = await s.client.post("/v1/channels/shared/messages", json=post, headers=ALICE)
        assert resp.status_code == 200, resp.text
