"""``POST /v1/alertmanager/{route}`` (Alertmanager webhook v4), ``/healthz``, ``/readyz``, ``/metrics``.

A payload is acked 200 only after the ALERTS stream stored it; anything else is an error
Alertmanager retries (5xx) or a caller's mistake it should not retry (4xx). Before the body is
read: ``Host`` allow-list (400), no foreign ``Origin`` (403), known route (404), the route's
bearer token (401), ``application/json`` (415); then size (413), nesting depth and JSON (400).
Every refusal is one line to the caller, a count in ``sleuth_alerts_webhook_refused_total`` and
an INFO log line naming the reason, never the payload.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import zlib
from collections.abc import Awaitable, Callable, Iterator

import uvicorn
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sleuth_alerts.batcher import ENCODING_HEADER, ROUTE_HEADER
from sleuth_alerts.guard import HostCheck, bearer_matches, is_json, origin_allowed
from sleuth_alerts.metrics import Metrics
from sleuth_alerts.payload import PayloadError, parse_payload
from sleuth_alerts.settings import RouteSettings, Settings
from sleuth_common.audit import AuditLog
from sleuth_common.health import Readiness, alive
from sleuth_common.httpserver import new_request_id
from sleuth_common.messages.audit import AlertReceived
from sleuth_common.subjects import Subjects

__all__ = ["WebhookServer", "webhook_app"]

log = logging.getLogger(__name__)


_SECURITY_HEADERS = (
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
)


class _RequestIds:
    """Every request gets an id (a caller's ``X-Request-Id`` when it looks like one), returned in
    ``X-Request-Id`` with the security headers on every response; errors carry it in their body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_request_id(scope)
        scope.setdefault("state", {})["request_id"] = request_id
        names = {name for name, _ in _SECURITY_HEADERS} | {b"x-request-id"}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() not in names]
                headers += [*_SECURITY_HEADERS, (b"x-request-id", request_id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _rid(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail, "request_id": _rid(request)}, status_code=exc.status_code,
                        headers=dict(exc.headers or {}))


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message


async def _read_body(request: Request, limit: int, within: float) -> bytes:
    """The body, refused past ``limit`` bytes (413) or ``within`` seconds (408)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _Refused(413, "too_large", f"the payload is larger than the limit of {limit} bytes")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(within):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _Refused(413, "too_large", f"the payload is larger than the limit of {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise _Refused(408, "timeout", f"the body did not arrive within {within:g}s") from None
    return b"".join(chunks)


def webhook_app(
    settings: Settings,
    metrics: Metrics,
    js: Callable[[], JetStreamContext | None],
    readiness: Callable[[], Awaitable[Readiness]],
    audit: AuditLog | None = None,
) -> Starlette:
    cfg = settings.alerts
    subjects = Subjects(settings.prefix)
    limit = cfg.max_body_bytes
    hosts = HostCheck(cfg.host_allowlist())

    def check_headers(request: Request, route: RouteSettings | None, name: str) -> RouteSettings:
        if not hosts.allows(request.headers.get("host", "")):
            raise _Refused(400, "host", "this Host is not served here (alerts.allowed_hosts)")
        if not origin_allowed(request.headers.get("origin"), cfg.allowed_origins):
            raise _Refused(403, "origin", "cross-origin posts are refused (alerts.allowed_origins)")
        if route is None:
            raise _Refused(404, "unknown_route", f"unknown alert route {name[:64]!r}")
        if route.token_env or cfg.require_token:
            expected = route.token()
            if expected is None:
                reason = "no_token_configured" if not route.token_env else "token"
                raise _Refused(401, reason, "a valid bearer token for this route is required")
            if not bearer_matches(request.headers.get("authorization", ""), expected.get_secret_value()):
                raise _Refused(401, "token", "a valid bearer token for this route is required")
        if not is_json(request.headers.get("content-type", "")):
            raise _Refused(415, "content_type", "the body must be application/json (Alertmanager's webhook)")
        return route


    async def receive(request: Request) -> Response:
        name = request.path_params["route"]
        route = settings.route(name)
        label = name if route is not None else "unknown"
        code = 500
        try:
            route = check_headers(request, route, name)
            body = await _read_body(request, limit, cfg.body_timeout)
            try:
                payload = parse_payload(body, max_depth=cfg.max_json_depth)
            except PayloadError as exc:
                raise _Refused(400, exc.reason, exc.message) from exc
            ctx = js()
            if ctx is None:
                raise _Refused(503, "unavailable", "not connected to NATS; try again shortly")
            headers = {
                ROUTE_HEADER: name,
                "Nats-Msg-Id": hashlib.sha256(name.encode() + b"\0" + body).hexdigest(),
            }
            data = body
            if len(body) > 256 * 1024:
                # NATS caps messages (1 MiB by default, headers included): big payloads travel compressed.
                data = zlib.compress(body, 6)
                headers[ENCODING_HEADER] = "zlib"
            try:
                ack = await ctx.publish(
                    subjects.alerts_ingest,
                    data,
                    stream=subjects.stream_alerts,
                    timeout=cfg.publish_timeout,
                    headers=headers,
                )
            except (NatsError, TimeoutError) as exc:
                raise _Refused(
                    503, "unavailable", f"the alert could not be stored ({type(exc).__name__}); retry"
                ) from exc
            code = 200
            accepted = min(len(payload.alerts), cfg.max_alerts_per_request)
            if audit is not None:
                audit.emit_nowait(AlertReceived(
                    entry="alertmanager", route=label, decision="allowed",
                    counts={"alerts": len(payload.alerts), "accepted": accepted, "duplicate": int(bool(ack.duplicate))},
                ))
            return JSONResponse(
                {
                    "status": "stored",
                    "route": name,
                    "alerts": len(payload.alerts),
                    "accepted": accepted,
                    "dropped": len(payload.alerts) - accepted,
                    "duplicate": bool(ack.duplicate),
                    "request_id": _rid(request),
                }
            )
        except _Refused as exc:
            code = exc.status
            metrics.refused.labels(label, exc.reason).inc()
            if audit is not None:
                audit.emit_nowait(AlertReceived(entry="alertmanager", route=label,
                                                decision="error" if exc.status >= 500 else "refused",
                                                reason=exc.reason, counts={"status": exc.status}))
            client = request.client.host if request.client else "?"
            log.log(
                logging.WARNING if exc.status >= 500 else logging.INFO,
                "webhook refused (%s, %d) on route %s from %s",
                exc.reason,
                exc.status,
                label,
                client,
                extra={"route": label, "reason": exc.reason, "status": exc.status},
            )
            headers = {"WWW-Authenticate": 'Bearer realm="sleuth-alerts"'} if exc.status == 401 else {}
            if exc.status == 408:
                headers["Connection"] = "close"  # the rest of a trickled body is not waited for
            return JSONResponse(
                {"error": exc.message, "request_id": _rid(request)}, status_code=exc.status, headers=headers
            )
        except Exception:  # the process edge: log with the traceback, answer one line
            metrics.crashes.labels("alerts", "webhook").inc()
            log.exception("webhook on route %s failed", label)
            return JSONResponse(
                {"error": "internal error; see the alerts service's log", "request_id": _rid(request)},
                status_code=500,
            )
        finally:
            metrics.webhook.labels(label, str(code)).inc()

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse(alive())

    async def readyz(_request: Request) -> JSONResponse:
        state = await readiness()
        return JSONResponse(state.body(), status_code=state.status_code)

    async def metrics_endpoint(_request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return Starlette(
        routes=[
            Route("/v1/alertmanager/{route}", receive, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
        ],
        middleware=[Middleware(_RequestIds)],
        exception_handlers={HTTPException: _http_error},
    )


class WebhookServer(uvicorn.Server):
    """A uvicorn server that leaves SIGTERM and SIGINT to the process (``__main__``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
