"""``POST /v1/alertmanager/{route}`` (Alertmanager webhook v4), ``/healthz``, ``/metrics``.

A payload is acked 200 only after the ALERTS stream stored it; anything else is an error
Alertmanager retries (5xx) or a caller's mistake it should not retry (4xx).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import zlib
from collections.abc import Callable
from typing import Any

from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sleuth_alerts.batcher import ENCODING_HEADER, ROUTE_HEADER
from sleuth_alerts.metrics import Metrics
from sleuth_alerts.settings import Settings
from sleuth_common.messages import AlertmanagerWebhook
from sleuth_common.subjects import Subjects

__all__ = ["webhook_app"]

log = logging.getLogger(__name__)


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5])


def webhook_app(
    settings: Settings,
    metrics: Metrics,
    js: Callable[[], JetStreamContext | None],
    status: Callable[[], dict[str, Any]],
) -> Starlette:
    cfg = settings.alerts
    subjects = Subjects(settings.prefix)
    limit = cfg.max_body_bytes

    async def read_body(request: Request) -> bytes:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _Refused(413, f"the payload is larger than the limit of {limit} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _Refused(413, f"the payload is larger than the limit of {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def receive(request: Request) -> Response:
        name = request.path_params["route"]
        route = settings.route(name)
        code = 500
        try:
            if route is None:
                raise _Refused(404, f"unknown alert route {name!r}")
            if route.token_env:
                expected = route.token()
                given = request.headers.get("authorization", "")
                scheme, _, token = given.partition(" ")
                if (
                    expected is None
                    or scheme.lower() != "bearer"
                    or not hmac.compare_digest(token.strip().encode(), expected.get_secret_value().encode())
                ):
                    raise _Refused(401, "a valid bearer token for this route is required")
            body = await read_body(request)
            try:
                json.loads(body)
            except (ValueError, UnicodeDecodeError) as exc:
                raise _Refused(400, f"malformed JSON: {exc}") from exc
            try:
                payload = AlertmanagerWebhook.model_validate_json(body)
            except ValidationError as exc:
                raise _Refused(
                    400, f"not an Alertmanager webhook payload (version 4): {_problems(exc)}"
                ) from exc
            ctx = js()
            if ctx is None:
                raise _Refused(503, "not connected to NATS; try again shortly")
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
                raise _Refused(503, f"the alert could not be stored ({type(exc).__name__}); retry") from exc
            code = 200
            return JSONResponse(
                {
                    "status": "stored",
                    "route": name,
                    "alerts": len(payload.alerts),
                    "duplicate": bool(ack.duplicate),
                }
            )
        except _Refused as exc:
            code = exc.status
            if exc.status >= 500:
                log.warning("webhook %s: %s", name, exc.message)
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        finally:
            metrics.webhook.labels(name if route is not None else "unknown", str(code)).inc()

    async def healthz(_request: Request) -> JSONResponse:
        body = status()
        return JSONResponse(body, status_code=200 if body.get("ok") else 503)

    async def metrics_endpoint(_request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return Starlette(
        routes=[
            Route("/v1/alertmanager/{route}", receive, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
        ]
    )
