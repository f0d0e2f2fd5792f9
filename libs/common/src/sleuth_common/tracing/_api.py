"""The helpers services call: cheap no-ops until ``setup_tracing`` turned tracing on.

Only the OpenTelemetry API is imported here (the SDK, exporter and instrumentations are imported
by ``_setup`` when tracing is on)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, StatusCode

TRACER = "sleuth"
SENSITIVE_HEADERS = ["authorization", "cookie", "token", "secret", "password", "key", "identity", "remote-user",
                     "signature", "session"]
"""Headers whose name contains one of these are never recorded on a span ("[REDACTED]"), even
when an operator asks for headers to be captured (OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_*)."""
UNTRACED_PATHS = "/healthz,/readyz,/metrics"


class _State:
    enabled = False
    provider: Any = None


STATE = _State()


def tracing_enabled() -> bool:
    return STATE.enabled


def tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER, tracer_provider=STATE.provider)


def sdk_tracer_provider() -> dict[str, Any]:
    """``{"tracer_provider": provider}`` for an SDK that takes one (tracing on), else ``{}``."""
    return {"tracer_provider": STATE.provider} if STATE.enabled else {}


def current_ids() -> dict[str, str]:
    """``{"trace_id", "span_id"}`` of the active span as hex (what backends show), or ``{}``."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return {}
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")}


@contextlib.contextmanager
def internal_span(
    name: str, *, kind: SpanKind = SpanKind.INTERNAL, attributes: Mapping[str, Any] | None = None
) -> Iterator[Span]:
    """A span around a block (a tool call, an LLM call). Yields a span either way, so callers
    may ``set_attribute`` unconditionally; with tracing off it is the no-op ``INVALID_SPAN``."""
    if not STATE.enabled:
        yield INVALID_SPAN
        return
    with tracer().start_as_current_span(name, kind=kind, attributes=dict(attributes or {}),
                                        record_exception=False, set_status_on_exception=False) as span:
        try:
            yield span
        except BaseException as exc:  # its type only: a message may quote a server's answer
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(StatusCode.ERROR)
            raise


@contextlib.contextmanager
def consumed(msg: Any, name: str) -> Iterator[Span]:
    """Process one message taken from the bus (a pull consumer's fetch) in a consumer span that
    continues the trace the publisher put in the message's headers."""
    if not STATE.enabled:
        yield INVALID_SPAN
        return
    parent = propagate.extract(getattr(msg, "headers", None) or {})
    attributes = {"messaging.system": "nats", "messaging.operation.type": "process",
                  "messaging.destination.name": getattr(msg, "subject", ""),
                  "messaging.message.body.size": len(getattr(msg, "data", b"") or b"")}
    with tracer().start_as_current_span(name, context=parent, kind=SpanKind.CONSUMER,
                                        attributes=attributes) as span:
        yield span


def traced_asgi(app: Any) -> Any:
    """``app`` with a server span per HTTP request (the caller's ``traceparent`` honoured);
    ``app`` itself when tracing is off."""
    if not STATE.enabled:
        return app
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(
        app,
        excluded_urls=UNTRACED_PATHS,
        exclude_spans=["receive", "send"],
        tracer_provider=STATE.provider,
    )


def http_hooks() -> dict[str, list[Any]]:
    """``event_hooks`` for an ``httpx2`` client (the MCP SDK's; the httpx instrumentation does not
    see it): each request carries the context of the task that sends it."""
    if not STATE.enabled:
        return {}

    async def inject(request: Any) -> None:
        propagate.inject(request.headers)

    return {"request": [inject]}


def broker_middlewares() -> tuple[Any, ...]:
    """FastStream middlewares for a ``NatsBroker``: its telemetry middleware when tracing is on."""
    if not STATE.enabled:
        return ()
    from faststream.nats.opentelemetry import NatsTelemetryMiddleware

    return (NatsTelemetryMiddleware(tracer_provider=STATE.provider, include_messages_counters=False),)
