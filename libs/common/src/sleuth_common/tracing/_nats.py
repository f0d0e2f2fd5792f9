"""Trace context across NATS, for nats-py (which has no OpenTelemetry instrumentation).

``instrument()`` wraps, for the whole process:

- ``Client.publish``: a producer span, and the W3C trace context (``traceparent``) injected into
  the message headers (a copy: the caller's dict is left alone);
- ``Client.request``: a client span around the round trip (its publish carries the context);
- ``JetStreamContext.publish``: a producer span around the publish and its acknowledgement;
- ``Client.subscribe`` with a callback: each message is processed in a consumer span continuing
  the trace found in its headers.

Subjects starting with ``$`` (JetStream's API: fetch requests, acks) are left alone, and so are the
library's own callbacks (nats-py's request multiplexer, FastStream's subscribers, which have
FastStream's telemetry middleware). Span names and attributes carry the subject, never the
payload or the headers.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from collections.abc import Awaitable, Callable
from typing import Any

from nats.aio.client import Client
from nats.js.client import JetStreamContext
from opentelemetry import propagate
from opentelemetry.trace import SpanKind, get_current_span

from sleuth_common.tracing._api import tracer

__all__ = ["instrument", "uninstrument"]

_ORIGINALS: dict[tuple[type, str], Any] = {}
# Set inside a span this module opened around a request or a JetStream publish: the publish it
# makes underneath injects the context without a span of its own.
_INNER = contextvars.ContextVar("sleuth_nats_inner", default=False)
_SKIP_CALLBACK_MODULES = ("nats.", "faststream.")


def _traced(subject: str) -> bool:
    return not subject.startswith("$")


def _label(client: Any, subject: str) -> str:
    prefix = getattr(client, "_inbox_prefix", None)
    inbox = bytes(prefix).decode() if isinstance(prefix, bytes | bytearray) else "_INBOX"
    return "(reply)" if subject.startswith((inbox, "_INBOX")) else subject


_ID_TOKEN = re.compile(r"^(?=[^.]*\d)[0-9A-Za-z_-]{16,}$")


def _template(subject: str) -> str:
    """The subject with per-job/per-request tokens as ``{id}``: span names stay low-cardinality
    (``publish sleuth.jobs.done.{id}``); the full subject is the ``messaging.destination.name``."""
    return ".".join("{id}" if _ID_TOKEN.match(token) else token for token in subject.split("."))


def _attributes(subject: str, payload: bytes, operation: str) -> dict[str, Any]:
    return {"messaging.system": "nats", "messaging.destination.name": subject,
            "messaging.operation.type": operation, "messaging.message.body.size": len(payload or b"")}


def _producing() -> bool:
    """The active span is a producer span already (FastStream's publish)."""
    return getattr(get_current_span(), "kind", None) is SpanKind.PRODUCER


def _with_context(headers: dict[str, Any] | None) -> dict[str, Any]:
    carrier = dict(headers or {})
    propagate.inject(carrier)
    return carrier


async def _publish(self: Client, subject: str, payload: bytes = b"", reply: str = "",
                   headers: dict[str, Any] | None = None) -> None:
    original = _ORIGINALS[(Client, "publish")]
    if not _traced(subject):
        return await original(self, subject, payload, reply, headers)
    if _INNER.get() or _producing():
        # Inside a span of ours, or FastStream's own producer span: its context, no second span.
        return await original(self, subject, payload, reply, _with_context(headers))
    label = _label(self, subject)
    with tracer().start_as_current_span(f"publish {_template(label)}", kind=SpanKind.PRODUCER,
                                        attributes=_attributes(label, payload, "send")):
        return await original(self, subject, payload, reply, _with_context(headers))


async def _request(self: Client, subject: str, payload: bytes = b"", timeout: float = 0.5,  # noqa: ASYNC109
                   old_style: bool = False, headers: dict[str, Any] | None = None) -> Any:
    original = _ORIGINALS[(Client, "request")]
    if not _traced(subject) or _INNER.get():
        return await original(self, subject, payload, timeout, old_style, headers)
    with tracer().start_as_current_span(f"request {_template(subject)}", kind=SpanKind.CLIENT,
                                        attributes=_attributes(subject, payload, "send")):
        token = _INNER.set(True)
        try:
            return await original(self, subject, payload, timeout, old_style, headers)
        finally:
            _INNER.reset(token)


async def _js_publish(self: JetStreamContext, subject: str, payload: bytes = b"", *args: Any, **kw: Any) -> Any:
    original = _ORIGINALS[(JetStreamContext, "publish")]
    if not _traced(subject) or _INNER.get():
        return await original(self, subject, payload, *args, **kw)
    span = contextlib.nullcontext() if _producing() else tracer().start_as_current_span(
        f"publish {_template(subject)}", kind=SpanKind.PRODUCER, attributes=_attributes(subject, payload, "send"))
    with span:
        token = _INNER.set(True)
        try:
            return await original(self, subject, payload, *args, **kw)
        finally:
            _INNER.reset(token)


def _consumer(cb: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
    @functools.wraps(cb)
    async def process(msg: Any) -> None:
        parent = propagate.extract(msg.headers or {})
        subject = msg.subject
        with tracer().start_as_current_span(f"process {_template(subject)}", context=parent, kind=SpanKind.CONSUMER,
                                            attributes=_attributes(subject, msg.data, "process")):
            await cb(msg)

    return process


def _ours(client: Client, cb: Any) -> bool:
    owner = getattr(cb, "__self__", None)
    module = getattr(cb, "__module__", "") or ""
    return owner is not client and not module.startswith(_SKIP_CALLBACK_MODULES)


async def _subscribe(self: Client, subject: str, queue: str = "", cb: Any = None, *args: Any, **kw: Any) -> Any:
    original = _ORIGINALS[(Client, "subscribe")]
    if cb is not None and _traced(subject) and _ours(self, cb):
        cb = _consumer(cb)
    return await original(self, subject, queue, cb, *args, **kw)


_WRAPPERS: dict[tuple[type, str], Any] = {
    (Client, "publish"): _publish,
    (Client, "request"): _request,
    (Client, "subscribe"): _subscribe,
    (JetStreamContext, "publish"): _js_publish,
}


def instrument() -> None:
    for (cls, name), wrapper in _WRAPPERS.items():
        if (cls, name) not in _ORIGINALS:
            _ORIGINALS[(cls, name)] = getattr(cls, name)
            setattr(cls, name, functools.wraps(_ORIGINALS[(cls, name)])(wrapper))


def uninstrument() -> None:
    for (cls, name), original in list(_ORIGINALS.items()):
        setattr(cls, name, original)
        del _ORIGINALS[(cls, name)]
