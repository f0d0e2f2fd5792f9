"""Request ids, access logs, request metrics and the last-resort JSON error (pure ASGI)."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sleuth_gateway.metrics import Metrics

log = logging.getLogger(__name__)

__all__ = ["RequestContextMiddleware"]

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestContextMiddleware:
    """Gives every request an id (``X-Request-Id`` in and out), logs and counts it.

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
        incoming = ""
        for name, value in scope.get("headers", []):
            if name == b"x-request-id":
                incoming = value.decode("latin-1")
                break
        request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        header = (b"x-request-id", request_id.encode())
        status = 500
        started = False
        t0 = time.monotonic()

        async def send_wrapper(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-request-id"]
                message = {**message, "headers": [*headers, header]}
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except Exception:
            log.exception("unhandled error", extra={"request_id": request_id, "path": scope.get("path")})
            if not started:
                body = json.dumps({"error": "internal error", "request_id": request_id}).encode()
                await send_wrapper(
                    {
                        "type": "http.response.start",
                        "status": 500,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
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
