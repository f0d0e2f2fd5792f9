"""The gateway's browser-facing surface: security headers on every response (errors and raw
protocol errors too), CORS closed unless configured, the OpenAPI document, and the token kept out
of URLs and logs."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from importlib import resources

import httpx
import pytest

pytestmark = pytest.mark.connected

ALICE = {"Authorization": "Bearer t-alice"}
SHARED = [{"name": "shared", "members": ["group:team-a"]}]
SECURITY = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def assert_secured(resp: httpx.Response, where: str) -> None:
    for name, value in SECURITY.items():
        assert resp.headers.get(name) == value, (where, name, dict(resp.headers))
    csp = resp.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp, (where, csp)
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp, (where, csp)
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}", resp.headers.get("x-request-id", "")), where
    assert "access-control-allow-origin" not in resp.headers, where


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        got = b""
        while chunk := sock.recv(4096):
            got += chunk
        return got


async def test_every_response_carries_the_security_headers(start_stack):
    """Pages, assets, answers, every kind of error (routing, auth, body, host, method) and the
    protocol layer's own 400 for a head it cannot parse."""
    async with start_stack(channels=SHARED) as s:
        requests = [
            ("GET", "/", {}, None, 200),
            ("GET", "/static/app.js", {}, None, 200),
            ("GET", "/static/app.css", {}, None, 200),
            ("GET", "/static/nope.js", {}, None, 404),
            ("GET", "/openapi.json", {}, None, 200),
            ("GET", "/v1/whoami", ALICE, None, 200),
            ("GET", "/v1/whoami", {"Authorization": "Bearer nope"}, None, 401),
            ("GET", "/v1/whoami", {}, None, 401),
            ("POST", "/v1/query", ALICE, b"{not json", 400),
            ("POST", "/v1/query", ALICE, b'{"query": "what is failing in team-a?"}', 200),
            ("PUT", "/v1/query", ALICE, None, 405),
            ("GET", "/v1/channels/nope/messages", ALICE, None, 404),
            ("GET", "/nowhere", {}, None, 404),
            ("GET", "/v1/whoami", {**ALICE, "Host": "evil.example"}, None, 400),
            ("POST", "/mcp", {}, b"{}", 401),
            ("GET", "/mcp", ALICE, None, 405),
            ("GET", "/healthz", {}, None, 200),
        ]
        for method, path, headers, body, status in requests:
            resp = await s.client.request(method, path, headers=headers, content=body)
            assert resp.status_code == status, (method, path, resp.text)
            assert_secured(resp, f"{method} {path}")
            if status >= 400:
                assert resp.json()["request_id"] == resp.headers["x-request-id"], (path, resp.text)
        page_csp = (await s.client.get("/")).headers["content-security-policy"]
        assert "script-src 'self'" in page_csp and "style-src 'self'" in page_csp

        # A request head h11 refuses: answered below the app, with the same headers and shape.
        got = await asyncio.to_thread(_raw, s.settings.gateway.port, b"GET / HTTP/1.1\r\nBad Header\r\n\r\n")
        head, _, body = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), got
        resp = httpx.Response(400, headers=[tuple(line.split(b": ", 1)) for line in head.split(b"\r\n")[1:]],
                              content=body)
        assert_secured(resp, "raw 400")
        assert resp.json()["request_id"] == resp.headers["x-request-id"]


async def test_cors_is_closed_by_default(start_stack):
    async with start_stack() as s:
        origin = {"Origin": "https://evil.example"}
        resp = await s.client.get("/v1/whoami", headers={**ALICE, **origin})
        assert resp.status_code == 200 and "access-control-allow-origin" not in resp.headers
        preflight = await s.client.options(
            "/v1/query",
            headers={**origin, "Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "authorization, content-type"},
        )
        assert preflight.status_code == 403, preflight.text
        assert preflight.json()["request_id"] == preflight.headers["x-request-id"]
        assert not [h for h in preflight.headers if h.startswith("access-control-")]
        assert s.agent.jobs == []


async def test_cors_answers_only_the_configured_origins(start_stack):
    allowed = "https://ops.example.com"
    async with start_stack(cors_allowed_origins=[allowed + "/"]) as s:
        preflight = await s.client.options(
            "/v1/query",
            headers={"Origin": allowed, "Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "authorization, content-type"},
        )
        assert preflight.status_code == 204, preflight.text
        assert preflight.headers["access-control-allow-origin"] == allowed
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert {"authorization", "content-type"} <= {
            h.strip() for h in preflight.headers["access-control-allow-headers"].split(",")
        }
        assert "access-control-allow-credentials" not in preflight.headers
        assert preflight.headers["vary"] == "Origin"
        resp = await s.client.get("/v1/whoami", headers={**ALICE, "Origin": allowed})
        assert resp.status_code == 200
        assert resp.headers["access-control-allow-origin"] == allowed
        assert "x-request-id" in resp.headers["access-control-expose-headers"]
        # Another origin (even a sibling) gets nothing.
        for other in ("https://evil.example", "https://ops.example.com.evil.example", "http://ops.example.com"):
            resp = await s.client.get("/v1/whoami", headers={**ALICE, "Origin": other})
            assert resp.status_code == 200 and "access-control-allow-origin" not in resp.headers, other
            preflight = await s.client.options(
                "/v1/whoami", headers={"Origin": other, "Access-Control-Request-Method": "GET"}
            )
            assert preflight.status_code == 403, other


async def test_openapi_document_describes_the_api(start_stack):
    async with start_stack() as s:
        resp = await s.client.get("/openapi.json")
        assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
        doc = resp.json()
        assert doc["openapi"].startswith("3.")
        documented = {(path, method.upper()) for path, ops in doc["paths"].items() for method in ops
                      if method != "parameters"}
        served = {
            (route.path, method)
            for route in s.app.routes
            if route.path.startswith("/v1/") or route.path == "/mcp"
            for method in route.methods - {"HEAD"}
            if not (route.path == "/mcp" and method in {"GET", "DELETE"})  # only ever 405
        }
        assert served <= documented, served - documented
        error = doc["components"]["schemas"]["Error"]
        assert set(error["required"]) == {"error", "request_id"}
        for path, ops in doc["paths"].items():
            for method, op in ops.items():
                if method == "parameters":
                    continue
                for code, answer in op["responses"].items():
                    if code.startswith("4") or code.startswith("5"):
                        assert answer == {"$ref": f"#/components/responses/E{code}"}, (path, method, code)
                        assert f"E{code}" in doc["components"]["responses"]
        # What the document says a query is, the server takes.
        query = doc["components"]["schemas"]["Query"]
        body = {name: "what is failing in team-a?" for name in query["required"]}
        assert (await s.client.post("/v1/query", json=body, headers=ALICE)).status_code == 200


async def test_the_token_stays_out_of_urls_and_logs(start_stack, caplog: pytest.LogCaptureFixture):
    """The page's script sends the token only in ``Authorization``; the gateway logs no token,
    even one a client put in the query string."""
    script = resources.files("sleuth_gateway").joinpath("web/app.js").read_text(encoding="utf-8")
    uses = [line.strip() for line in script.splitlines() if re.search(r"\btoken\b", line)]
    assert any('"Authorization": "Bearer " + token' in line for line in uses)
    for line in uses:
        assert not re.search(r"[?&]token=|encodeURIComponent\(token|location|history\.|EventSource", line), line
    assert "WebSocket" not in script and "EventSource" not in script
    caplog.set_level(logging.DEBUG)
    async with start_stack(channels=SHARED) as s:
        await s.client.get("/v1/whoami", headers=ALICE)
        await s.client.get("/v1/whoami?token=t-alice&access_token=t-bob")
        await s.client.post("/v1/query", json={"query": "what is failing in team-a?"}, headers=ALICE)
        await s.client.get("/v1/conversation", headers={"Authorization": "Bearer t-carol-wrong"})
        await s.client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=ALICE)
    # What the servers log (the test's own httpx client logs the URLs it requests).
    records = [r for r in caplog.records if r.name.startswith(("sleuth", "uvicorn", "mcp", "nats", "faststream"))]
    logged = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in records)
    assert "request_id" in logged  # the access log was captured
    for secret in ("t-alice", "t-bob", "t-carol-wrong"):
        assert secret not in logged, secret
