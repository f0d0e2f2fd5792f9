"""The JOBS work queue as Prometheus gauges, read from JetStream when scraped.

A service that serves ``/metrics`` (the gateway) calls ``refresh`` before rendering: one stream
info and one consumer info request, at most every ``min_interval`` seconds — never a message read:
the gateway may not read the jobs other services queued (its NATS user has no ``MSG.GET`` on JOBS).
Because JOBS keeps a job until an agent acks it (work-queue retention), the stream's first
message (``state.first_ts`` of the stream info) is the oldest job not yet answered: its age is the
queue's lag. While jobs wait for an agent, that age is also the bound used for how long the next
one has waited: it is never less than the true wait (the oldest job may be one an agent is
running, at most its deadline old).

The last reading is kept as ``state`` for the gateway's backpressure (sleuth_gateway.asking),
so a question never costs a JetStream request of its own: at most one reading per
``min_interval`` seconds, whoever asks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nats.errors import Error as NatsError
from nats.js.api import ConsumerInfo
from nats.js.errors import NotFoundError
from prometheus_client import CollectorRegistry, Gauge

from sleuth_common.subjects import Subjects

__all__ = ["JobsQueueGauges", "JobsQueueState"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobsQueueState:
    """The JOBS queue at one reading."""

    pending: int
    """Jobs not yet handed to an agent."""
    pending_oldest: float
    """Seconds the oldest of them has waited (0 when none waits)."""
    read_at: float
    """``time.monotonic()`` of the reading."""


class JobsQueueGauges:
    """``sleuth_jobs_*`` gauges in ``registry`` (labels: none; every replica reads the same queue,
    so rules and panels take ``max``)."""

    def __init__(self, registry: CollectorRegistry, *, timeout: float = 1.0, min_interval: float = 5.0) -> None:
        self.timeout = timeout
        self.min_interval = min_interval
        self._last = float("-inf")
        self._lock = asyncio.Lock()
        self.state: JobsQueueState | None = None
        """The last reading; ``None`` when the last attempt could not read the queue (or none was made)."""
        self.up = Gauge(
            "sleuth_jobs_consumer_up",
            "1 when the agents' durable consumer of the JOBS stream could be read at the last scrape, "
            "0 when it is missing or NATS did not answer",
            registry=registry,
        )
        self.pending = Gauge(
            "sleuth_jobs_pending", "Jobs in JOBS not yet handed to an agent", registry=registry
        )
        self.ack_pending = Gauge(
            "sleuth_jobs_ack_pending", "Jobs an agent holds and has not acked yet (running)", registry=registry
        )
        self.waiting_pulls = Gauge(
            "sleuth_jobs_waiting_pulls",
            "Agents' pull requests waiting for a job (0 with jobs pending: no agent is free to take one)",
            registry=registry,
        )
        self.redelivered = Gauge(
            "sleuth_jobs_redelivered", "Jobs handed out more than once and not yet acked", registry=registry
        )
        self.oldest = Gauge(
            "sleuth_jobs_oldest_seconds",
            "Age of the oldest job not yet acked (0 when the queue is empty): the queue's lag",
            registry=registry,
        )
        self.pending_oldest = Gauge(
            "sleuth_jobs_pending_oldest_seconds",
            "Seconds the oldest job not yet handed to an agent has waited (0 when none waits): how long "
            "a new question waits before an agent starts on it",
            registry=registry,
        )

    async def refresh(self, nc: Any, subjects: Subjects) -> None:
        """Read the queue (``nc``: a connected nats-py client, or ``None``: not connected)."""
        async with self._lock:
            now = time.monotonic()
            if now - self._last < self.min_interval:
                return
            self._last = now
            consumer: ConsumerInfo | None = None
            self.state = None
            if nc is None or not getattr(nc, "is_connected", False):
                self.up.set(0)
                return
            js = nc.jsm(timeout=self.timeout)
            oldest = waited = 0.0
            try:
                oldest = await _oldest_age(nc, subjects, self.timeout)
                consumer = await js.consumer_info(subjects.stream_jobs, subjects.agent_durable)
                if consumer.num_pending:
                    waited = oldest
            except NotFoundError:
                if consumer is None:  # no stream or no consumer: no agent ever pulled
                    self.up.set(0)
                    return
                # else: the job looked up was taken or acked in between (the queue just moved)
            except (NatsError, TimeoutError) as exc:
                log.info("JOBS queue not readable (metrics, backpressure): %s", type(exc).__name__)
                self.up.set(0)
                return
            self.up.set(1)
            self.pending.set(consumer.num_pending or 0)
            self.ack_pending.set(consumer.num_ack_pending or 0)
            self.waiting_pulls.set(consumer.num_waiting or 0)
            self.redelivered.set(consumer.num_redelivered or 0)
            self.oldest.set(oldest)
            self.pending_oldest.set(waited)
            self.state = JobsQueueState(consumer.num_pending or 0, waited, now)


async def _oldest_age(nc: Any, subjects: Subjects, wait: float) -> float:
    """Age of the stream's first message from the stream info's ``state.first_ts`` (nats-py's
    ``StreamState`` drops that field, so the info is read raw); 0 when the stream is empty."""
    msg = await nc.request(f"$JS.API.STREAM.INFO.{subjects.stream_jobs}", b"", timeout=wait)
    info = json.loads(msg.data)
    if "error" in info:
        if info["error"].get("err_code") == _STREAM_NOT_FOUND:
            raise NotFoundError
        raise NatsError(info["error"].get("description", "stream info refused"))
    state = info.get("state") or {}
    if not state.get("messages"):
        return 0.0
    return _age(_rfc3339(state.get("first_ts")))


_STREAM_NOT_FOUND = 10059


def _rfc3339(value: str | None) -> datetime | None:
    """nats-server's timestamps carry nanoseconds (``…:30.754175123Z``); datetime takes microseconds."""
    if not value or value.startswith("0001-"):
        return None
    head, _, frac = value.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{(frac or '0')[:6].ljust(6, '0')}+00:00")


def _age(at: datetime | None) -> float:
    if at is None:
        return 0.0
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return max(0.0, (datetime.now(UTC) - at).total_seconds())
