"""The JetStream side: pull jobs from the JOBS work queue through the shared durable consumer,
never more than ``max_concurrent_jobs`` at once, signal "in progress" while working, and ack
only after the result is published. A worker that dies mid-job leaves the job unacked, so
JetStream redelivers it after ``ack_wait``; malformed payloads are terminated (not redelivered)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.client import JetStreamContext
from pydantic import ValidationError

from sleuth_agent.metrics import Metrics
from sleuth_agent.settings import AgentSettings
from sleuth_common.messages import InvestigationJob
from sleuth_common.streams import ensure_streams
from sleuth_common.subjects import Subjects
from sleuth_common.tracing import consumed

__all__ = ["JobWorker", "ensure_jobs_stream"]

log = logging.getLogger(__name__)


Handler = Callable[[InvestigationJob], Awaitable[object]]


async def ensure_jobs_stream(js: JetStreamContext, subjects: Subjects, replicas: int = 1) -> None:
    """Create the JOBS stream if absent, with ``replicas`` copies (one definition for every
    service: sleuth_common.streams)."""
    await ensure_streams(js, subjects, "jobs", replicas=replicas)


class JobWorker:
    def __init__(
        self,
        nc: Nats,
        subjects: Subjects,
        settings: AgentSettings,
        handler: Handler,
        metrics: Metrics,
        *,
        fetch_timeout: float = 2.0,
        stream_replicas: int = 1,
    ) -> None:
        self.stream_replicas = stream_replicas
        self.nc = nc
        self.subjects = subjects
        self.settings = settings
        self.handler = handler
        self.metrics = metrics
        self.fetch_timeout = fetch_timeout
        self._slots = asyncio.Semaphore(max(1, settings.max_concurrent_jobs))
        self._running: set[asyncio.Task[None]] = set()
        self._loop: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        js = self.nc.jetstream()
        await ensure_jobs_stream(js, self.subjects, self.stream_replicas)
        config = ConsumerConfig(
            durable_name=self.subjects.agent_durable,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.settings.ack_wait,
            max_deliver=self.settings.max_deliver,
            max_ack_pending=-1,
            filter_subject=self.subjects.jobs_investigate,
        )
        # Stays a hand-written nats-py loop, not a FastStream subscriber: FastStream 0.7.8's concurrent
        # pull subscriber fetches before a worker slot is free and holds what it fetched (no in-progress
        # heartbeats), so a busy replica would sit on work others could run (sleuth_common.bus, "JetStream").
        self._sub = await js.pull_subscribe(
            self.subjects.jobs_investigate,
            durable=self.subjects.agent_durable,
            stream=self.subjects.stream_jobs,
            config=config,
        )
        self._loop = asyncio.create_task(self._pull(), name="agent-pull")

    @property
    def busy(self) -> int:
        return len(self._running)

    async def stop(self, grace: float = 10.0) -> None:
        """Stop pulling; give running jobs ``grace`` seconds, then abandon them unacked
        (JetStream redelivers them)."""
        self._stopping.set()
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        if self._running:
            _done, pending = await asyncio.wait(self._running, timeout=grace)
            for t in pending:
                t.cancel()
            for t in pending:
                with contextlib.suppress(asyncio.CancelledError):
                    await t
        with contextlib.suppress(NatsError, AttributeError):
            await self._sub.unsubscribe()

    async def _pull(self) -> None:
        while not self._stopping.is_set():
            await self._slots.acquire()
            try:
                msgs = await self._sub.fetch(1, timeout=self.fetch_timeout)
            except NatsTimeout:
                self._slots.release()
                continue
            except NatsError as exc:
                self._slots.release()
                log.warning("fetching jobs failed: %s", exc)
                await asyncio.sleep(1.0)
                continue
            except BaseException:
                self._slots.release()
                raise
            for msg in msgs:
                task = asyncio.create_task(self._process(msg))
                self._running.add(task)
                task.add_done_callback(self._running.discard)

    async def _process(self, msg: Msg) -> None:
        try:
            with consumed(msg, "investigate job"):
                await self._process_one(msg)
        finally:
            self._slots.release()

    async def _process_one(self, msg: Msg) -> None:
        try:
            job = InvestigationJob.model_validate_json(msg.data)
        except ValidationError as exc:
            self.metrics.rejected.inc()
            log.warning(
                "rejected a malformed job payload (%d errors)",
                exc.error_count(),
                extra={"subject": msg.subject},
            )
            with contextlib.suppress(NatsError):
                await msg.term()
            return
        delivered = msg.metadata.num_delivered if msg.metadata else 1
        if delivered > 1:
            self.metrics.redeliveries.inc()
            log.info("job delivered again (%d)", delivered, extra={"job_id": job.id})
        heartbeat = asyncio.create_task(self._heartbeat(msg, job.id))
        try:
            await self.handler(job)
        except (NatsError, OSError) as exc:
            # The result could not be published: leave the job for a redelivery.
            log.warning("job not finished (%s); it will be redelivered", exc, extra={"job_id": job.id})
            with contextlib.suppress(NatsError):
                await msg.nak(delay=2.0)
            return
        except Exception:  # the job task's edge: logged and counted; the job is redelivered
            self.metrics.crashes.labels("agent", "job").inc()
            log.exception("job handler crashed; it will be redelivered", extra={"job_id": job.id})
            with contextlib.suppress(NatsError):
                await msg.nak(delay=2.0)
            return
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        try:
            await msg.ack_sync(timeout=5)
        except NatsError as exc:
            log.warning(
                "ack failed (%s); a redelivery will find the job answered", exc, extra={"job_id": job.id}
            )

    async def _heartbeat(self, msg: Msg, job_id: str) -> None:
        interval = max(0.2, min(self.settings.in_progress_interval, self.settings.ack_wait / 2))
        while True:
            await asyncio.sleep(interval)
            try:
                await msg.in_progress()
            except NatsError as exc:
                log.debug("in-progress signal failed: %s", exc, extra={"job_id": job_id})
