"""Request ids, access logs, request metrics, response headers, the Host check and the
last-resort JSON error (pure ASGI)."""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sleuth_common.httpserver import API_CSP, SECURITY_HEADERS, new_request_id
from sleuth_gateway.metrics import Metrics

log = logging.getLogger(__name__)

__all__ = [
    "API_CSP",
    "SECURITY_HEADERS",
    "CorsMiddleware",
    "HostCheckMiddleware",
    "RequestContextMiddleware",
    "on_finish",
]

# On every response (sleuth_common.httpserver): no caching, no sniffing, no framing, no referrer;
# and API_CSP unless the response has its own policy (the web chat's files do).
_ALWAYS_NAMES = {name for name, _ in SECURITY_HEADERS} | {b"x-request-id"}
_CSP = b"content-security-policy"

Cleanup = Callable[[], Awaitable[None] | None]


def on_finish(request: Request, cleanup: Cleanup) -> None:
    """Run ``cleanup`` when the response is finished: after the last byte of a stream, or when
    its client went away, or after an error (what a request holds: a question slot, a place in a
    concurrency gate)."""
    request.state.on_finish.append(cleanup)


async def _json_error(send: Send, status: int, message: str, request_id: str) -> None:
    body = json.dumps({"error": message, "request_id": request_id}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequestContextMiddleware:
    """Gives every request an id (``X-Request-Id`` in and out), logs and counts it, adds
    ``SECURITY_HEADERS`` (and ``API_CSP`` unless the response has its own policy) to every
    response, and runs the request's ``on_finish`` clean-ups at its very end.

    An incoming ``X-Request-Id`` is reused when it looks like an id, so a caller can trace a
    request across systems. An unhandled exception becomes a 500 ``{error, request_id}``.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_request_id(scope)
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        cleanups: list[Cleanup] = []
        state["on_finish"] = cleanups
        header = (b"x-request-id", request_id.encode())
        status = 500
        started = False
        t0 = time.monotonic()

        async def send_wrapper(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                headers = [h for h in message.get("headers", []) if h[0].lower() not in _ALWAYS_NAMES]
                if not any(h[0].lower() == _CSP for h in headers):
                    headers.append((_CSP, API_CSP))
                message = {**message, "headers": [*headers, *SECURITY_HEADERS, header]}
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except Exception:
            self.metrics.crashes.labels("gateway", "http").inc()
            log.exception("unhandled error", extra={"request_id": request_id, "path": scope.get("path")})
            if not started:
                await _json_error(send_wrapper, 500, "internal error", request_id)
        finally:
            route = scope.get("route")
            label = getattr(route, "path", None) or "unmatched"
            self.metrics.requests.labels(route=label, status=str(status)).inc()
            log.info(
                "%s %s %s",
                scope.get("method"),
                label,
                status,
                extra={
                    "request_id": request_id,
                    "user": state.get("user", ""),
                    "duration_ms": round((time.monotonic() - t0) * 1000, 1),
                },
            )
            await _run(cleanups, request_id)


async def _run(cleanups: list[Cleanup], request_id: str) -> None:
    for cleanup in reversed(cleanups):
        try:
            result = cleanup()
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("a request clean-up failed", extra={"request_id": request_id})


class HostCheckMiddleware:
    """Answers only requests whose ``Host`` is one of ``names`` (DNS rebinding: a page on an
    attacker's domain that resolves to the gateway's address sends that domain as Host).

    ``name`` matches any port, ``name:port`` that port only, ``*.example.com`` any subdomain,
    ``*`` anything. Paths in ``exempt`` (health, metrics: no user data, probed by IP) are not
    checked. Others get 400 ``{"error": "unknown host ...", "request_id"}``.
    """

    def __init__(self, app: ASGIApp, names: Iterable[str], metrics: Metrics, exempt: Iterable[str] = ()) -> None:
        self.app = app
        self.metrics = metrics
        self.exempt = frozenset(exempt)
        entries = [n.strip().lower().rstrip(".") for n in names if n.strip()]
        self.any = "*" in entries
        self.exact: set[str] = set()
        self.any_port: set[str] = set()
        self.suffixes: list[str] = []
        for entry in entries:
            host, port = _split_host(entry)
            if host.startswith("*."):
                self.suffixes.append(host[1:])
            elif port:
                self.exact.add(f"{host}:{port}")
            else:
                self.any_port.add(host)

    def allows(self, value: str, scheme: str = "http") -> bool:
        """Whether a request with ``Host: value`` is answered (no port = the scheme's default)."""
        if self.any:
            return True
        host, port = _split_host(value.strip().lower())
        host = host.rstrip(".")
        port = port or ("443" if scheme == "https" else "80")
        if not host:
            return False
        if host in self.any_port or f"{host}:{port}" in self.exact:
            return True
        return any(host.endswith(suffix) and len(host) > len(suffix) for suffix in self.suffixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.any or scope.get("path") in self.exempt:
            await self.app(scope, receive, send)
            return
        host = ""
        for name, value in scope.get("headers", []):
            if name == b"host":
                host = value.decode("latin-1")
                break
        if self.allows(host, scope.get("scheme", "http")):
            await self.app(scope, receive, send)
            return
        self.metrics.refused.labels(reason="host").inc()
        state: dict[str, Any] = scope.get("state", {})
        request_id = str(state.get("request_id", ""))
        log.info("refused: unknown host", extra={"request_id": request_id, "host": host[:100]})
        await _json_error(
            send, 400, "unknown host: this gateway answers only to the names in gateway.allowed_hosts", request_id
        )


def _split_host(value: str) -> tuple[str, str]:
    """(host, port) of a Host header value; IPv6 literals keep their brackets."""
    if value.startswith("["):
        host, _, rest = value.partition("]")
        return host + "]", rest[1:] if rest.startswith(":") else ""
    host, _, port = value.partition(":")
    return host, port


class CorsMiddleware:
    """Cross-origin access for the web pages in ``origins`` (exact ``scheme://host[:port]``), and
    for no other: without a listed ``Origin`` a response carries no ``Access-Control-Allow-*``
    header, so a browser keeps it from the page. A preflight (``OPTIONS`` with
    ``Access-Control-Request-Method``) from a listed origin is answered 204 with what it may send;
    from any other, 403 ``{error, request_id}``. No credentials are allowed: the API takes a
    bearer token in ``Authorization``, never a cookie.
    """

    METHODS = b"GET, POST, DELETE"
    HEADERS = b"authorization, content-type, x-request-id, accept"
    EXPOSE = b"x-request-id, retry-after"

    def __init__(self, app: ASGIApp, origins: Iterable[str], metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self.origins = frozenset(o.strip().lower().rstrip("/") for o in origins if o.strip())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name: value for name, value in scope.get("headers", [])}
        origin = headers.get(b"origin", b"").decode("latin-1")
        listed = bool(origin) and origin.strip().lower().rstrip("/") in self.origins
        state: dict[str, Any] = scope.get("state", {})
        request_id = str(state.get("request_id", ""))
        if scope.get("method") == "OPTIONS" and b"access-control-request-method" in headers and origin:
            if not listed:
                self.metrics.refused.labels(reason="cors").inc()
                await _json_error(send, 403, "cross-origin requests from this origin are not allowed", request_id)
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": [
                        (b"access-control-allow-origin", origin.encode("latin-1")),
                        (b"access-control-allow-methods", self.METHODS),
                        (b"access-control-allow-headers", self.HEADERS),
                        (b"access-control-max-age", b"600"),
                        (b"vary", b"Origin"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        if not listed:
            await self.app(scope, receive, send)
            return

        async def send_allowed(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [
                    (b"access-control-allow-origin", origin.encode("latin-1")),
                    (b"access-control-expose-headers", self.EXPOSE),
                    (b"vary", b"Origin"),
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_allowed)
