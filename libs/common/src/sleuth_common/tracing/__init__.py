"""OpenTelemetry traces for every Sleuth process, across the bus.

Each service calls ``setup_tracing("sleuth-<name>")`` once at start. Tracing is on only when the
standard environment asks for it (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or ``OTEL_TRACES_EXPORTER=otlp|console``); otherwise
nothing is imported, patched or started and every helper here is a no-op. When on, spans go to an
OTLP/HTTP (protobuf) collector in batches, flushed when the process exits; ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER(_ARG)``, ``OTEL_EXPORTER_OTLP_HEADERS`` and
``OTEL_BSP_*`` mean what the OpenTelemetry specification says.

Where spans come from, so that one question is one trace (gateway → authz-cache → agent →
kube-mcp → back):

- HTTP served: ``traced_asgi(app)`` (gateway, alerts webhook, kube-mcp); health and metrics
  paths are not traced and credential headers are never recorded.
- HTTP sent with ``httpx`` and Redis commands: the upstream instrumentations (commands without
  their arguments; a command outside any trace, such as a poll loop's, is not recorded).
- NATS: nats-py has no instrumentation, so ``_nats`` wraps ``Client.publish`` / ``request`` /
  ``subscribe`` and ``JetStreamContext.publish``: every publish carries W3C trace context
  (``traceparent``) in its headers and gets a producer span; every callback subscription
  processes a message in a consumer span continuing the sender's trace. Pull consumers wrap each
  message in ``consumed(msg, name)``; FastStream apps get FastStream's own telemetry middleware
  (``broker_middlewares()``).
- MCP: the MCP SDK itself carries trace context in ``params._meta`` (SEP-414) and opens client
  and server spans; ``ScopedMcpClient`` adds one span per tool call and sends ``traceparent`` on
  its HTTP requests (``http_hooks()``).
- LLM: one ``chat <model>`` span per attempt (``sleuth_common.llm``), and under it the Anthropic
  SDK's own span (metadata only, never prompts or answers).

Log lines carry ``trace_id`` and ``span_id`` while a span is active (``sleuth_common.logs``).
Spans never carry a token, a message body, tool arguments or tool output.
"""

from __future__ import annotations

from sleuth_common.tracing._api import (
    broker_middlewares,
    consumed,
    current_ids,
    http_hooks,
    internal_span,
    sdk_tracer_provider,
    traced_asgi,
    tracing_enabled,
)
from sleuth_common.tracing._setup import setup_tracing, shutdown_tracing

__all__ = [
    "broker_middlewares",
    "consumed",
    "current_ids",
    "http_hooks",
    "internal_span",
    "sdk_tracer_provider",
    "setup_tracing",
    "shutdown_tracing",
    "traced_asgi",
    "tracing_enabled",
]
