"""``setup_tracing``: the SDK, the OTLP/HTTP exporter and the instrumentations, from ``OTEL_*``."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

from sleuth_common.tracing._api import SENSITIVE_HEADERS, STATE

__all__ = ["exporter_from_env", "setup_tracing", "shutdown_tracing"]

log = logging.getLogger(__name__)

_SANITIZE = "OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SANITIZE_FIELDS"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def exporter_from_env(environ: Mapping[str, str]) -> str | None:
    """Which exporter the environment asks for: ``"otlp"``, ``"console"`` or ``None`` (tracing
    off). An OTLP endpoint turns tracing on; ``OTEL_TRACES_EXPORTER=otlp`` alone exports to the
    specification's default (``http://localhost:4318``); ``OTEL_SDK_DISABLED=true`` and
    ``OTEL_TRACES_EXPORTER=none`` turn it off whatever else is set."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    chosen = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if chosen in ("none", ""):
        return "otlp" if chosen == "" and any(environ.get(k, "").strip() for k in _ENDPOINTS) else None
    if chosen not in ("otlp", "console"):
        log.warning("OTEL_TRACES_EXPORTER=%s is not supported (otlp, console, none): tracing is off", chosen)
        return None
    return chosen


def setup_tracing(
    service: str, *, environ: Mapping[str, str] | None = None, exporter: Any = None, install_global: bool = True
) -> bool:
    """Turn tracing on for this process as ``service`` (``OTEL_SERVICE_NAME`` wins) when the
    environment asks for it, or when ``exporter`` (a ``SpanExporter``; tests) is given. Returns
    whether tracing is on. Spans still queued are exported when the process exits.

    ``install_global=False`` (tests) leaves OpenTelemetry's process-wide provider alone: it can be
    set once per process, and libraries that use it (the MCP SDK) then keep it."""
    env = os.environ if environ is None else environ
    kind = "given" if exporter is not None else exporter_from_env(env)
    if kind is None or STATE.enabled:
        return STATE.enabled

    from opentelemetry import trace
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    from sleuth_common.tracing import _nats

    if exporter is None:
        protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
        if kind == "otlp" and protocol and protocol != "http/protobuf":
            log.warning("OTLP protocol %s is not built in: exporting with http/protobuf", protocol)
        if kind == "console":
            exporter = ConsoleSpanExporter(service_name=service)
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
    name = env.get("OTEL_SERVICE_NAME", "").strip() or service
    resource = Resource.create({SERVICE_NAME: name, "service.namespace": "sleuth"})
    provider = TracerProvider(resource=resource)  # sampler from OTEL_TRACES_SAMPLER(_ARG)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    if install_global:
        trace.set_tracer_provider(provider)
    # Credential headers are "[REDACTED]" even where an operator asks for headers on spans
    # (OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_*): the instrumentations read this variable.
    asked = os.environ.get(_SANITIZE, "")
    os.environ[_SANITIZE] = ",".join(x for x in (asked, *SENSITIVE_HEADERS) if x)
    STATE.provider = provider
    STATE.enabled = True
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    RedisInstrumentor().instrument(tracer_provider=_within_traces(provider))
    _nats.instrument()
    log.info("tracing on", extra={"service_name": name, "exporter": kind})
    return True


def _within_traces(provider: Any) -> Any:
    """``provider`` for an instrumentation whose spans only matter inside a trace: Redis commands
    outside any (a poll loop's tick, a health check's PING) start none, so traces stay questions."""
    from opentelemetry import trace

    class Tracer(trace.Tracer):
        def __init__(self, inner: trace.Tracer) -> None:
            self.inner = inner

        def start_span(self, name: str, context: Any = None, *args: Any, **kw: Any) -> trace.Span:
            if not trace.get_current_span(context).get_span_context().is_valid:
                return trace.INVALID_SPAN
            return self.inner.start_span(name, context, *args, **kw)

        @contextlib.contextmanager
        def start_as_current_span(  # type: ignore[override]  # same arguments, passed through
            self, name: str, context: Any = None, *args: Any, **kw: Any
        ) -> Iterator[trace.Span]:
            if not trace.get_current_span(context).get_span_context().is_valid:
                yield trace.INVALID_SPAN
                return
            with self.inner.start_as_current_span(name, context, *args, **kw) as span:
                yield span

    class Provider(trace.TracerProvider):
        def get_tracer(self, *args: Any, **kw: Any) -> trace.Tracer:
            return Tracer(provider.get_tracer(*args, **kw))

    return Provider()


def shutdown_tracing() -> None:
    """Export what is queued and stop (also done at exit); undo the instrumentations."""
    if not STATE.enabled:
        return
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    from sleuth_common.tracing import _nats

    _nats.uninstrument()
    HTTPXClientInstrumentor().uninstrument()
    RedisInstrumentor().uninstrument()
    provider, STATE.provider, STATE.enabled = STATE.provider, None, False
    provider.shutdown()
