"""How Sleuth's HTTP servers (gateway, alerts webhook, kube-mcp) run uvicorn so a slow or hostile
client cannot hold a worker: an HTTP/1.1 protocol that gives each request head a deadline, a
bounded head size, idle keep-alive timeouts and a connection cap; and the headers every response
carries.

uvicorn closes idle keep-alive connections, but a client that connects and then sends its request
head slowly (one byte a second: "slowloris") is held forever. ``HeadTimeoutH11Protocol`` arms a
timer when a connection opens and whenever a new request head starts; a head not complete when it
fires is answered 408 and the connection closed (a connection that sent nothing is just closed).
A body has its own deadline in each app.

Past ``max_connections`` uvicorn would answer ``503 Service Unavailable`` in plain text without
these headers; ``HeadTimeoutH11Protocol`` answers it as every other error: ``{error, request_id}``
with ``Retry-After`` and the headers every response carries. :class:`RequestIds` gives an app's
own responses the request id and those headers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "API_CSP",
    "SECURITY_HEADERS",
    "HeadTimeoutH11Protocol",
    "RequestIds",
    "new_request_id",
    "raw_error",
    "request_id_of",
    "uvicorn_limits",
]

log = logging.getLogger(__name__)

SECURITY_HEADERS = (
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
)
"""On every response: nothing may be cached (answers are one person's), content-sniffed into
something else, framed by another page or leak its address to the next one."""
API_CSP = b"default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
"""The policy of every response that is not a page: load nothing, be framed nowhere."""


_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_ALWAYS = {name for name, _ in SECURITY_HEADERS} | {b"x-request-id"}
_CSP = b"content-security-policy"
BUSY_RETRY_AFTER = 1
"""Seconds a client is told to wait when the server is at its connection or request cap."""


def _error_head(request_id: str, *extra: tuple[bytes, bytes]) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), *SECURITY_HEADERS, (_CSP, API_CSP),
            (b"x-request-id", request_id.encode()), *extra]


def new_request_id(scope: Any) -> str:
    """The id of a new HTTP request: the caller's ``X-Request-Id`` when it looks like one (so a request
    can be traced across systems), else a fresh one."""
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            incoming = value.decode("latin-1")
            return incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
    return uuid.uuid4().hex


def request_id_of(scope: Any) -> str:
    """The id :class:`RequestIds` gave this request ("" outside it)."""
    return str((scope.get("state") or {}).get("request_id", ""))


async def _send_json_error(send: Any, status: int, message: str, request_id: str,
                           *extra: tuple[bytes, bytes]) -> None:
    body = json.dumps({"error": message, "request_id": request_id}).encode()
    headers = [*_error_head(request_id, *extra), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestIds:
    """Pure ASGI: every HTTP request gets an id (the caller's ``X-Request-Id`` when it looks like
    one, so a request can be traced across systems), kept in ``scope["state"]["request_id"]`` and
    returned in ``X-Request-Id``; every response carries ``SECURITY_HEADERS`` and ``API_CSP`` (unless
    it set its own policy). An exception escaping the app before it answered becomes 500
    ``{error, request_id}`` (logged with the id), never a bare connection reset."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_request_id(scope)
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_headers(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [h for h in message.get("headers", []) if h[0].lower() not in _ALWAYS]
                if not any(h[0].lower() == _CSP for h in headers):
                    headers.append((_CSP, API_CSP))
                message = {**message, "headers": [*headers, *SECURITY_HEADERS, (b"x-request-id", request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            log.exception("unhandled error", extra={"request_id": request_id, "path": scope.get("path")})
            if started:
                raise
            await _send_json_error(send, 500, "internal error", request_id)


class _AtCapacity:
    """What uvicorn's ``limit_concurrency`` does (``service_unavailable`` past the cap of
    connections or running requests), answered as Sleuth's errors are: 503 ``{error, request_id}``
    with ``Retry-After`` and the security headers, the connection closed."""

    def __init__(self, app: Any, limit: int, state: Any) -> None:
        self.app, self.limit, self.state = app, limit, state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # This request's own connection and task are already counted (uvicorn checks before it
        # makes the task: ``tasks >= limit``; here the task exists, hence ``>``).
        if scope["type"] == "http" and (
            len(self.state.connections) >= self.limit or len(self.state.tasks) > self.limit
        ):
            log.warning("at the concurrency limit (%d): answered 503", self.limit)
            await _send_json_error(send, 503, "the server is busy: retry shortly", uuid.uuid4().hex,
                                   (b"retry-after", str(BUSY_RETRY_AFTER).encode()), (b"connection", b"close"))
            return
        await self.app(scope, receive, send)


def raw_error(status: int, reason: bytes, message: str) -> bytes:
    """A whole HTTP/1.1 error response written below the app (its middleware never sees these):
    ``{error, request_id}`` with the headers every response carries; the connection closes."""
    request_id = uuid.uuid4().hex
    body = json.dumps({"error": message, "request_id": request_id}).encode()
    headers = _error_head(request_id, (b"connection", b"close"), (b"content-length", str(len(body)).encode()))
    head = b"HTTP/1.1 %d %s\r\n" % (status, reason) + b"".join(n + b": " + v + b"\r\n" for n, v in headers)
    return head + b"\r\n" + body


class HeadTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline of ``head_timeout`` seconds for each request head,
    and its 400 for a head it cannot parse in the ``{error, request_id}`` shape."""

    head_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uvicorn's own check would answer its plain-text 503: the app wrapper answers it instead.
        limit, self.limit_concurrency = self.limit_concurrency, None
        if limit is not None:
            self.app = _AtCapacity(self.app, limit, self.server_state)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            # A head begun (after a keep-alive pause the first byte cancelled uvicorn's idle timer).
            if self._head_timer is None:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_timeout, self._on_head_timeout)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _on_head_timeout(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        started = bool(self.conn.trailing_data[0])
        if started:
            self.logger.info("closed a connection whose request head took over %gs", self.head_timeout)
            self.transport.write(raw_error(408, b"Request Timeout", "the request head did not arrive in time"))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """A request head h11 cannot parse (or too large): 400 ``{error, request_id}``, closed."""
        self.transport.write(raw_error(400, b"Bad Request", f"malformed request: {msg}"[:200]))
        self.transport.close()


def uvicorn_limits(
    *, header_timeout: float = 10.0, keep_alive_timeout: int = 5, max_header_bytes: int = 16384,
    max_connections: int = 1000,
) -> dict[str, Any]:
    """``uvicorn.Config`` options for these limits (``max_connections`` 0 = no cap)."""
    protocol = type("SleuthH11Protocol", (HeadTimeoutH11Protocol,), {"head_timeout": header_timeout})
    return {
        "http": protocol,
        "ws": "none",  # no WebSocket routes: no upgrade path around the limits above
        "h11_max_incomplete_event_size": max_header_bytes,
        "timeout_keep_alive": keep_alive_timeout,
        "limit_concurrency": max_connections or None,
        "server_header": False,
    }
