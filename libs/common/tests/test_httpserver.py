"""How Sleuth's HTTP servers run uvicorn (``sleuth_common.httpserver``), against a real uvicorn on
loopback: past the connection cap the answer is a JSON 503 with a request id, ``Retry-After`` and
the security headers (not uvicorn's plain text), and ``RequestIds`` puts the id and the headers on
every response of the app, an unhandled error included."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import uvicorn

from sleuth_common.httpserver import SECURITY_HEADERS, RequestIds, uvicorn_limits

entered = threading.Event()
release = threading.Event()


async def _app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/boom":
        raise RuntimeError("a bug")
    if scope["path"] == "/slow":
        entered.set()
        await asyncio.to_thread(release.wait, 10)  # holds its connection and its task, as a long request does
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def server() -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(RequestIds(_app), log_config=None, access_log=False, lifespan="off",
                            **uvicorn_limits(header_timeout=5, max_connections=2))
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.01)
    entered.clear()
    release.clear()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        release.set()
        srv.should_exit = True
        thread.join(10)


def _secure(resp: httpx.Response) -> str:
    for name, value in SECURITY_HEADERS:
        assert resp.headers.get(name.decode()) == value.decode(), dict(resp.headers)
    assert resp.headers["content-security-policy"].startswith("default-src 'none'")
    return resp.headers["x-request-id"]


def test_past_the_connection_cap_the_answer_is_a_json_503_with_a_request_id(server: str) -> None:
    with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=server, timeout=10) as other:
        slow = pool.submit(httpx.get, f"{server}/slow", timeout=10)
        assert entered.wait(10)
        busy = other.get("/fast")  # a second connection: at the cap of two (uvicorn counts this one too)
        assert busy.status_code == 503
        assert busy.headers["content-type"] == "application/json" and busy.headers["retry-after"] == "1"
        assert busy.json() == {"error": "the server is busy: retry shortly", "request_id": _secure(busy)}
        release.set()
        done = slow.result(10)
        assert done.status_code == 200 and done.text == "ok" and len(_secure(done)) == 32
    again = httpx.get(f"{server}/fast", headers={"X-Request-Id": "mine-1"}, timeout=10)
    assert again.status_code == 200 and _secure(again) == "mine-1"


def test_an_unhandled_error_is_a_json_500_with_the_request_id(server: str) -> None:
    resp = httpx.get(f"{server}/boom", timeout=10)
    assert resp.status_code == 500
    assert resp.json() == {"error": "internal error", "request_id": _secure(resp)}
