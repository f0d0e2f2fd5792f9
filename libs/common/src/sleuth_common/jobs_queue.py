"""The JOBS work queue as Prometheus gauges, read from JetStream when scraped.

A service that serves ``/metrics`` (the gateway) calls ``refresh`` before rendering: one stream
info and one consumer info request, at most every ``min_interval`` seconds. Because JOBS keeps
a job until an agent acks it (work-queue retention), the stream's first message is the oldest
job not yet answered: its age is the queue's lag.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Any

from nats.errors import Error as NatsError
from nats.js.api import ConsumerInfo
from nats.js.errors import NotFoundError
from prometheus_client import CollectorRegistry, Gauge

from sleuth_common.subjects import Subjects

__all__ = ["JobsQueueGauges"]

log = logging.getLogger(__name__)


class JobsQueueGauges:
    """``sleuth_jobs_*`` gauges in ``registry`` (labels: none; every replica reads the same queue,
    so rules and panels take ``max``)."""

    def __init__(self, registry: CollectorRegistry, *, timeout: float = 1.0, min_interval: float = 5.0) -> None:
        self.timeout = timeout
        self.min_interval = min_interval
        self._last = float("-inf")
        self._lock = asyncio.Lock()
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

    async def refresh(self, nc: Any, subjects: Subjects) -> None:
        """Read the queue (``nc``: a connected nats-py client, or ``None``: not connected)."""
        async with self._lock:
            now = time.monotonic()
            if now - self._last < self.min_interval:
                return
            self._last = now
            consumer: ConsumerInfo | None = None
            if nc is None or not getattr(nc, "is_connected", False):
                self.up.set(0)
                return
            js = nc.jsm(timeout=self.timeout)
            try:
                stream = await js.stream_info(subjects.stream_jobs)
                consumer = await js.consumer_info(subjects.stream_jobs, subjects.agent_durable)
                oldest = 0.0
                if stream.state.messages:
                    first = await js.get_msg(subjects.stream_jobs, seq=stream.state.first_seq)
                    oldest = _age(first.time)
            except NotFoundError:
                if consumer is None:  # no stream or no consumer: no agent ever pulled
                    self.up.set(0)
                    return
                oldest = 0.0  # the oldest job was acked in between: the queue just moved
            except (NatsError, TimeoutError) as exc:
                log.info("JOBS queue not readable for metrics: %s", type(exc).__name__)
                self.up.set(0)
                return
            self.up.set(1)
            self.pending.set(consumer.num_pending or 0)
            self.ack_pending.set(consumer.num_ack_pending or 0)
            self.waiting_pulls.set(consumer.num_waiting or 0)
            self.redelivered.set(consumer.num_redelivered or 0)
            self.oldest.set(oldest)


def _age(at: datetime | None) -> float:
    if at is None:
        return 0.0
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return max(0.0, (datetime.now(UTC) - at).total_seconds())
