"""The gateway's side of the bus (nats-py): authenticate, invalidate, submit jobs, watch them,
ask the alerts service and an agent (``diagnostics``).

The gateway makes core request/reply calls (authz-cache), JetStream publishes (jobs) and plain
subscriptions to one job's progress and done subjects, so it uses the NATS client directly
rather than a FastStream app. The same goes for a job's answer kept in the RESULTS stream after a
restart: one "last message of this subject" get, no consumer (FastStream would add a subscriber
per job for what is one request).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import nats
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.errors import NoStreamResponseError, NotFoundError
from pydantic import ValidationError

from sleuth_common.bus import BusError, PermanentBusError, TemporaryBusError, read_reply, request
from sleuth_common.config import JetStreamSettings, NatsSettings
from sleuth_common.connect import nats_connect_options
from sleuth_common.health import RetryLog
from sleuth_common.messages import (
    AgentDiagnosticsReply,
    AgentDiagnosticsRequest,
    AlertChannelReply,
    AlertChannelRequest,
    AuthenticateReply,
    AuthenticateRequest,
    FeedbackReply,
    FeedbackRequest,
    InvalidateRequest,
    InvestigationJob,
    InvestigationResult,
    JobProgress,
    KbReply,
    KbRequest,
)
from sleuth_common.messages.base import Message
from sleuth_common.messages.reports import ReportReply, ReportRequest
from sleuth_common.messages.schedules import ScheduleReply, ScheduleRequest
from sleuth_common.streams import ensure_streams as common_ensure_streams
from sleuth_common.subjects import Subjects

_R = TypeVar("_R", bound=Message)

log = logging.getLogger(__name__)

__all__ = ["Bus", "BusError", "JobWatch", "PermanentBusError", "TemporaryBusError", "ensure_streams"]





async def ensure_streams(
    js: JetStreamContext, subjects: Subjects, replicas: int = 1, jetstream: JetStreamSettings | None = None
) -> None:
    """Create the JOBS, CHAT and RESULTS streams if absent (defined once in sleuth_common.streams)
    with ``replicas`` copies (RESULTS: ``jetstream``'s age and size limits). An existing stream is
    left as it is. Safe to call from several replicas at once."""
    cfg = jetstream or JetStreamSettings()
    await common_ensure_streams(
        js, subjects, "jobs", "chat", "results", replicas=replicas,
        results_max_age=cfg.results_max_age, results_max_bytes=cfg.results_max_bytes,
    )


class JobWatch:
    """Progress and the result of one job, subscribed before the job is published."""

    def __init__(self, nc: NatsClient, subjects: Subjects, job_id: str) -> None:
        self._nc = nc
        self._subjects = subjects
        self.job_id = job_id
        self._queue: asyncio.Queue[JobProgress | InvestigationResult] = asyncio.Queue()
        self._subs: list[Subscription] = []
        self._closed = False

    async def open(self) -> JobWatch:
        try:
            self._subs.append(
                await self._nc.subscribe(self._subjects.jobs_done(self.job_id), cb=self._on_done)
            )
            self._subs.append(
                await self._nc.subscribe(self._subjects.jobs_progress(self.job_id), cb=self._on_progress)
            )
        except NatsError as exc:
            await self.close()
            raise TemporaryBusError(f"cannot subscribe to the job's subjects: {exc}") from exc
        return self

    async def close(self) -> None:
        """Unsubscribe. Safe to call again: a close cut short (a stream cancelled when its client
        went away) is finished by the next call (the response's background task)."""
        self._closed = True
        while self._subs:
            with contextlib.suppress(NatsError):
                await self._subs[-1].unsubscribe()
            self._subs.pop()

    def put(self, result: InvestigationResult) -> None:
        """Hand in ``result`` as if it had just arrived (an answer kept in RESULTS)."""
        self._queue.put_nowait(result)

    async def _on_done(self, msg: Msg) -> None:
        try:
            result = InvestigationResult.model_validate_json(msg.data)
        except ValidationError:
            log.warning("ignored a malformed result", extra={"job_id": self.job_id, "subject": msg.subject})
            return
        if result.job_id and result.job_id != self.job_id:
            log.warning("ignored a result for another job", extra={"job_id": self.job_id})
            return
        self._queue.put_nowait(result)

    async def _on_progress(self, msg: Msg) -> None:
        try:
            progress = JobProgress.model_validate_json(msg.data)
        except ValidationError:
            log.warning("ignored malformed progress", extra={"job_id": self.job_id, "subject": msg.subject})
            return
        self._queue.put_nowait(progress)

    async def events(
        self, deadline: float, heartbeat: float | None = None
    ) -> AsyncIterator[JobProgress | InvestigationResult | None]:
        """Progress messages, then the result; raises ``TimeoutError`` at ``deadline`` (unix seconds).

        With ``heartbeat``, yields ``None`` after that many quiet seconds (to keep a stream alive).
        """
        while True:
            remaining = deadline - time.time()
            if remaining <= 0 and self._queue.empty():  # a kept answer is handed out even so
                raise TimeoutError
            if not self._queue.empty():
                ready = self._queue.get_nowait()
                yield ready
                if isinstance(ready, InvestigationResult):
                    return
                continue
            wait = min(remaining, heartbeat) if heartbeat else remaining
            try:
                item = await asyncio.wait_for(self._queue.get(), wait)
            except TimeoutError:
                if heartbeat and time.time() < deadline:
                    yield None
                    continue
                raise
            yield item
            if isinstance(item, InvestigationResult):
                return

    async def result(self, deadline: float) -> InvestigationResult:
        async for item in self.events(deadline):
            if isinstance(item, InvestigationResult):
                return item
        raise TimeoutError  # pragma: no cover - events() ends only with a result


class Bus:
    """One NATS connection for the gateway process."""

    def __init__(
        self,
        nats_settings: NatsSettings,
        subjects: Subjects,
        *,
        request_timeout: float,
        publish_timeout: float,
        stream_replicas: int = 1,
        jetstream: JetStreamSettings | None = None,
        hedge_after: float = 0.0,
    ) -> None:
        self._settings = nats_settings
        self.hedge_after = hedge_after
        self.stream_replicas = stream_replicas
        self.jetstream = jetstream or JetStreamSettings()
        self.subjects = subjects
        self.request_timeout = request_timeout
        self.publish_timeout = publish_timeout
        self._nc: NatsClient | None = None
        self._js: JetStreamContext | None = None
        self._closing = False
        self._options: dict[str, Any] = {}
        self._retry: RetryLog | None = None

    def prepare(self, retry: RetryLog) -> None:
        """Check the settings (raises ``ConnectConfigError``: a password variable is empty …)
        before anything waits; ``retry`` says when NATS cannot be reached."""
        self._options = nats_connect_options(self._settings, name="sleuth-gateway")
        self._retry = retry

    async def connect(self) -> NatsClient:
        """Connect (nats-py retries an unreachable server every ``nats.retry_interval`` seconds,
        for as long as it takes) and make the streams; again after a failure, on the same
        connection."""
        if self._retry is None:
            raise RuntimeError("Bus.prepare() first")
        if self._nc is None or self._nc.is_closed:
            self._nc = await nats.connect(
                **self._options,
                max_reconnect_attempts=-1,
                reconnect_time_wait=self._settings.retry_interval,
                error_cb=self._retry.nats_error_cb(self._on_error),
                disconnected_cb=self._on_disconnected,
                reconnected_cb=self._on_reconnected,
            )
        self._js = self._nc.jetstream(timeout=self.publish_timeout)
        await ensure_streams(self._js, self.subjects, self.stream_replicas, self.jetstream)
        return self._nc

    async def close(self) -> None:
        self._closing = True
        if self._nc is not None and not self._nc.is_closed:
            with contextlib.suppress(NatsError, asyncio.TimeoutError):
                await self._nc.close()

    @property
    def connected(self) -> bool:
        return self._nc is not None and self._nc.is_connected

    @property
    def nats(self) -> NatsClient:
        """The connection (for the CHAT consumer)."""
        return self._client()

    async def alerts_command(self, req: AlertChannelRequest, wait: float) -> AlertChannelReply:
        return await self._ask(
            "alerts", self.subjects.alerts_channels(req.op), req, AlertChannelReply, wait
        )

    async def schedules_command(self, req: ScheduleRequest, wait: float) -> ScheduleReply:
        return await self._ask("scheduler", self.subjects.schedules(req.op), req, ScheduleReply, wait)

    async def reports_command(self, req: ReportRequest, wait: float) -> ReportReply:
        return await self._ask("reporter", self.subjects.reports(req.op), req, ReportReply, wait)

    async def _ask(self, service: str, subject: str, req: Message, reply: type[_R], wait: float) -> _R:
        """A command to ``service`` (request/reply); ``TemporaryBusError`` or ``PermanentBusError``
        saying what went wrong."""
        return await request(self._client(), subject, req, reply, wait=wait, service=f"the {service} service")

    async def agent_diagnostics(self, req: AgentDiagnosticsRequest, wait: float) -> AgentDiagnosticsReply:
        """One agent's view of its MCP servers and LLM (the agents answer in a queue group). The
        reply comes to a branch of the gateway's inbox of its own (``Subjects.agent_diagnostics_reply``):
        an agent may write there and into no other reply of the gateway."""
        reply_to = self.subjects.agent_diagnostics_reply(self._settings.inbox(), uuid.uuid4().hex)
        return await self._ask_agent(self.subjects.agent_diagnostics, reply_to, req, AgentDiagnosticsReply, wait)

    async def agent_kb(self, req: KbRequest, wait: float) -> KbReply:
        """The chat command ``kb`` (runbooks), answered by one agent into its own inbox branch."""
        reply_to = self.subjects.agent_kb_reply(self._settings.inbox(), uuid.uuid4().hex)
        return await self._ask_agent(self.subjects.agent_kb, reply_to, req, KbReply, wait)

    async def agent_feedback(self, req: FeedbackRequest, wait: float) -> FeedbackReply:
        """Feedback on an answer, kept by one agent with the answer's incident (its own inbox branch)."""
        reply_to = self.subjects.agent_feedback_reply(self._settings.inbox(), uuid.uuid4().hex)
        return await self._ask_agent(self.subjects.agent_feedback, reply_to, req, FeedbackReply, wait)

    async def _ask_agent(self, subject: str, reply_to: str, req: Message, reply: type[_R], wait: float) -> _R:
        nc = self._client()
        try:
            sub = await nc.subscribe(reply_to, max_msgs=1)
            try:
                await nc.publish(subject, req.to_bytes(), reply=reply_to)
                msg = await sub.next_msg(timeout=wait)
            finally:
                with contextlib.suppress(NatsError):
                    await sub.unsubscribe()
        except NatsTimeoutError as exc:
            raise TemporaryBusError(f"no agent answered within {wait:g}s", reason="timeout") from exc
        except NatsError as exc:
            raise TemporaryBusError(f"the request failed: {exc}") from exc
        if msg.headers and msg.headers.get("Status") == "503":  # nats-server: nobody subscribed
            raise TemporaryBusError("no agent is running", reason="no_responders")
        # An agent's error reply or a malformed reply: typed.
        return read_reply(msg, reply, service="the agent", subject=subject)

    def _client(self) -> NatsClient:
        if self._nc is None or not self._nc.is_connected:
            raise TemporaryBusError("not connected to NATS", reason="disconnected")
        return self._nc

    async def authenticate(self, token: str) -> AuthenticateReply:
        return await request(self._client(), self.subjects.authz_authenticate, AuthenticateRequest(token=token),
                             AuthenticateReply, wait=self.request_timeout, service="authz-cache",
                             hedge_after=self.hedge_after)

    async def invalidate(self, user: str) -> None:
        nc = self._client()
        try:
            await nc.publish(self.subjects.authz_invalidate, InvalidateRequest(user=user).to_bytes())
            await nc.flush(timeout=math.ceil(self.request_timeout))
        except (TimeoutError, NatsError) as exc:
            raise TemporaryBusError(f"could not publish the invalidation: {exc}") from exc

    async def watch(self, job_id: str, *, kept: bool = False) -> JobWatch:
        """Progress and the result of ``job_id`` from now on; ``kept``: also its answer kept in
        RESULTS, when it finished before (a job resumed after a restart or a retry)."""
        watch = await JobWatch(self._client(), self.subjects, job_id).open()
        if kept:
            result = await self.kept_result(job_id)
            if result is not None:
                watch.put(result)
        return watch

    async def kept_result(self, job_id: str) -> InvestigationResult | None:
        """The answer of ``job_id`` kept in RESULTS (``jetstream.results_max_age``), or ``None``
        (not finished, expired, or the stream cannot be read now: a live watch still gets it)."""
        self._client()
        assert self._js is not None
        try:
            msg = await self._js.get_last_msg(self.subjects.stream_results, self.subjects.jobs_done(job_id))
        except NotFoundError:
            return None
        except (TimeoutError, NatsError) as exc:
            log.warning("cannot read a kept answer: %r", exc, extra={"job_id": job_id})
            return None
        try:
            result = InvestigationResult.model_validate_json(msg.data or b"")
        except ValidationError:
            log.warning("ignored a malformed kept answer", extra={"job_id": job_id})
            return None
        return result if result.job_id in ("", job_id) else None

    async def submit(self, job: InvestigationJob) -> None:
        """Publish ``job`` to JOBS, trying again within ``publish_timeout`` while the stream has
        no leader to answer (a clustered stream electing a new one after its node went away
        answers nobody for a second or two). The job id is its ``Nats-Msg-Id``: a try that was
        stored although its answer was lost is stored once however often it is sent."""
        self._client()
        assert self._js is not None
        deadline = time.monotonic() + self.publish_timeout
        pause = 0.2
        while True:
            left = deadline - time.monotonic()
            try:
                await self._js.publish(
                    self.subjects.jobs_investigate,
                    job.to_bytes(),
                    stream=self.subjects.stream_jobs,
                    timeout=max(0.5, left),
                    headers={"Nats-Msg-Id": job.id},
                )
                return
            except (NoStreamResponseError, NoRespondersError) as exc:
                if left - pause < 0.5:
                    raise TemporaryBusError(f"JetStream did not accept the job: {exc!r}") from exc
                log.info("JOBS has no leader to take the job yet (%r); trying again", exc,
                         extra={"job_id": job.id})
                await asyncio.sleep(pause)
                pause = min(1.0, pause * 2)
            except (TimeoutError, NatsError) as exc:
                raise TemporaryBusError(f"JetStream did not accept the job: {exc!r}") from exc

    async def _on_error(self, exc: Exception) -> None:
        log.warning("NATS error: %s", exc)

    async def _on_disconnected(self) -> None:
        if not self._closing:
            log.warning("disconnected from NATS; reconnecting")

    async def _on_reconnected(self) -> None:
        log.info("reconnected to NATS")
