"""The audit trail's publisher (DESIGN §1): one ``AuditLog`` per process, every service's decisions
onto the AUDIT stream (``<prefix>.audit.<kind>``), typed by ``sleuth_common.messages.audit``.

``emit`` never blocks the request it describes: events go into a bounded in-memory backlog that
one background task publishes to JetStream (each with a bounded wait for the acknowledgement,
deduplicated by event id so a retry never stores an event twice). While NATS or the stream is
unavailable the task retries with backoff and keeps events; only beyond ``audit.backlog`` are the
oldest dropped. Every outcome is counted in ``sleuth_audit_events_total{outcome}`` (published,
failed — a try that will be retried —, dropped) and failures are logged once per outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, Counter

from sleuth_common.config import AuditSettings
from sleuth_common.mcp._result import ToolAuditEvent
from sleuth_common.messages.audit import AuditBase, Decision, ToolCall
from sleuth_common.streams import ensure_streams
from sleuth_common.subjects import Subjects

if TYPE_CHECKING:
    from faststream.nats import NatsBroker
    from nats.aio.client import Client as Nats

log = logging.getLogger(__name__)

__all__ = ["AuditLog", "Publish", "tool_call_event"]

Publish = Callable[[str, bytes, dict[str, str], float], Awaitable[Any]]
"""``(subject, payload, headers, wait)``: one JetStream publish that raises unless stored."""

_TOOL_DECISION: dict[str, Decision] = {"ok": "allowed", "filtered": "filtered", "withheld": "withheld", "denied": "refused",
                  "error": "error"}


def tool_call_event(event: ToolAuditEvent, **fields: Any) -> ToolCall:
    """The ``audit.tool_call`` event of one scoped call: outcome, counts, reason code; ``fields``
    add context (``job_id``, ``entry``, ``groups`` …) or replace a field (``user``). Never the
    arguments or the result."""
    return ToolCall(**{
        "user": event.user, "cluster": event.cluster, "server": event.server, "tool": event.tool,
        "decision": _TOOL_DECISION[event.outcome], "reason": event.reason, "duration_ms": round(event.duration_ms, 1),
        "counts": {"removed": event.removed, "redacted": event.redacted, "cut": event.cut, "calls": event.calls},
        **fields,
    })


class _Counter(Protocol):
    def labels(self, *values: str) -> Any: ...


class AuditLog:
    """Publishes audit events for one service (``service`` is stamped on each event).

    Bind a publisher when the process is connected: ``bind_nats(nc)`` (nats-py) or
    ``bind_broker(broker)`` (FastStream, which ``TestNatsBroker`` also serves in memory). Events
    emitted before that wait in the backlog. ``aclose`` publishes what it can within a few seconds,
    then stops; call it before the NATS connection closes."""

    def __init__(self, subjects: Subjects, service: str, settings: AuditSettings | None = None,
                 registry: CollectorRegistry | None = None) -> None:
        self.subjects = subjects
        self.service = service
        self.settings = settings or AuditSettings()
        self.events: _Counter = Counter(
            "sleuth_audit_events", "Audit events by outcome: published (stored in the AUDIT stream), failed "
            "(a publish that timed out or was refused; retried), dropped (the backlog was full)",
            ["outcome"], registry=registry,
        ) if registry is not None else _NoCounter()
        self._backlog: deque[tuple[str, bytes, dict[str, str]]] = deque()
        self._publish: Publish | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._failing = False

    # -- binding -----------------------------------------------------------------------------
    def bind(self, publish: Publish) -> None:
        self._publish = publish
        self._kick()

    def bind_nats(self, nc: Nats) -> None:
        js = nc.jetstream()
        stream = self.subjects.stream_audit

        async def publish(subject: str, data: bytes, headers: dict[str, str], wait: float) -> None:
            await js.publish(subject, data, timeout=wait, stream=stream, headers=headers)

        self.bind(publish)

    def bind_broker(self, broker: NatsBroker) -> None:
        stream = self.subjects.stream_audit

        async def publish(subject: str, data: bytes, headers: dict[str, str], wait: float) -> None:
            await broker.publish(data, subject, headers=headers, stream=stream, timeout=wait)

        self.bind(publish)

    async def ensure_stream(self, nc: Nats, replicas: int = 1) -> None:
        """Create the AUDIT stream when absent (best effort: without it events wait in the backlog)."""
        try:
            await ensure_streams(nc.jetstream(timeout=self.settings.publish_timeout), self.subjects, "audit",
                                 replicas=replicas, audit_max_age=self.settings.max_age,
                                 audit_max_bytes=self.settings.max_bytes)
        except Exception as exc:  # process edge: the audit stream must not stop a service starting
            log.warning("could not create the AUDIT stream (%s); audit events wait in memory", exc)

    async def start(self, nc: Nats, replicas: int = 1) -> None:
        """``ensure_stream`` then ``bind_nats``: the usual start for a nats-py service."""
        await self.ensure_stream(nc, replicas)
        self.bind_nats(nc)

    # -- emitting ----------------------------------------------------------------------------
    async def emit(self, event: AuditBase) -> None:
        """Queue ``event`` for the AUDIT stream; returns at once, never raises."""
        self.emit_nowait(event)

    def emit_nowait(self, event: AuditBase) -> None:
        try:
            if not event.service:
                event = event.model_copy(update={"service": self.service})
            data = event.to_bytes()
            item = (self.subjects.audit(event.subject_name), data, {"Nats-Msg-Id": event.id})
        except Exception:  # process edge: an audit event must never fail the request it describes
            log.exception("could not serialise an audit event")
            return
        if self._closing:
            self.events.labels("dropped").inc()
            return
        if len(self._backlog) >= self.settings.backlog:
            self._backlog.popleft()
            self.events.labels("dropped").inc()
            log.warning("audit backlog full (%d events): dropped the oldest", self.settings.backlog)
        self._backlog.append(item)
        self._kick()

    @property
    def pending(self) -> int:
        """Events not yet stored in the stream."""
        return len(self._backlog)

    def _kick(self) -> None:
        self._wake.set()
        if self._publish is None or (self._task is not None and not self._task.done()):
            return
        try:
            self._task = asyncio.get_running_loop().create_task(self._drain(), name=f"audit-{self.service}")
        except RuntimeError:  # no loop yet (building at import or in sync code): started on the next emit
            self._task = None

    async def _drain(self) -> None:
        backoff = 0.1
        while True:
            if not self._backlog:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            subject, data, headers = self._backlog[0]
            assert self._publish is not None
            try:
                await asyncio.wait_for(self._publish(subject, data, headers, self.settings.publish_timeout),
                                       self.settings.publish_timeout)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # process edge: any publish failure is retried, counted, logged once
                self.events.labels("failed").inc()
                if not self._failing:
                    log.warning("audit events cannot be published (%s: %s); keeping up to %d in memory",
                                type(exc).__name__, exc, self.settings.backlog)
                    self._failing = True
                if self._closing:
                    return
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            if self._backlog and self._backlog[0][2] is headers:
                self._backlog.popleft()
            self.events.labels("published").inc()
            backoff = 0.1
            if self._failing:
                log.info("audit events are published again")
                self._failing = False

    async def aclose(self, grace: float = 3.0) -> None:
        """Publish what is queued within ``grace`` seconds, then stop (idempotent)."""
        self._closing = True
        task, self._task = self._task, None
        if task is None:
            if self._backlog:
                log.warning("%d audit event(s) never published (no connection)", len(self._backlog))
                self.events.labels("dropped").inc(len(self._backlog))
                self._backlog.clear()
            return
        self._wake.set()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), grace)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._backlog:
            self.events.labels("dropped").inc(len(self._backlog))
            log.warning("%d audit event(s) not published before shutdown", len(self._backlog))
            self._backlog.clear()


class _NoCounter:
    def labels(self, *values: str) -> _NoCounter:
        return self

    def inc(self, amount: float = 1) -> None:
        return None
