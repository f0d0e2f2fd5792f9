"""Wiring: settings → NATS (FastStream broker's connection), Redis, job handler, JetStream
worker, diagnostics responder, health/metrics server."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass, field

import uvicorn
from faststream import FastStream
from faststream.nats import NatsBroker
from redis.asyncio import Redis

from sleuth_agent.diagnostics import DiagnosticsResponder, diagnostics_router
from sleuth_agent.handlers import JobHandler
from sleuth_agent.incidents import (
    FeedbackResponder,
    IncidentMemory,
    IncidentStore,
    feedback_router,
    incidents_router,
)
from sleuth_agent.knowledge import KbResponder, Knowledge, RunbookStore, kb_router
from sleuth_agent.llm import LlmInvestigator, make_llm_investigator
from sleuth_agent.metrics import HealthServer, Metrics, health_app
from sleuth_agent.settings import Settings
from sleuth_agent.worker import JobWorker
from sleuth_common.audit import AuditLog
from sleuth_common.connect import nats_broker, redis_client
from sleuth_common.health import Dependencies, Readiness, until_up
from sleuth_common.identity import IdentityVerifier, job_verifier_from_settings
from sleuth_common.messages import IncidentRecorded
from sleuth_common.streams import ensure_streams
from sleuth_common.subjects import Subjects

__all__ = ["Agent", "build", "create_app"]

log = logging.getLogger(__name__)


@dataclass
class Agent:
    """One agent process: the FastStream app and what it runs."""

    settings: Settings
    app: FastStream
    broker: NatsBroker
    metrics: Metrics
    redis: Redis
    deps: Dependencies = field(repr=False)
    worker: JobWorker | None = None
    handler: JobHandler | None = None
    diagnostics: DiagnosticsResponder | None = None
    llm: LlmInvestigator | None = None
    audit: AuditLog | None = None
    knowledge: Knowledge | None = None
    kb: KbResponder | None = None
    _knowledge_task: asyncio.Task[None] | None = field(default=None, repr=False)
    incidents: IncidentMemory | None = None
    feedback: FeedbackResponder | None = None
    _incidents_task: asyncio.Task[None] | None = field(default=None, repr=False)
    _http: uvicorn.Server | None = None
    _http_task: asyncio.Task[None] | None = field(default=None, repr=False)

    async def readiness(self) -> Readiness:
        return await self.deps.readiness(busy=self.worker.busy if self.worker else 0)

    async def start(self) -> None:
        """Serve /healthz, /readyz and /metrics at once, then connect to NATS (waiting as long as
        it takes) and pull jobs. Redis is watched, not waited for: a job answered while it is
        down is answered without its marks (see ``JobHandler``). (The app's start:
        ``_before_broker``, the broker's subscribers — diagnostics —, ``_after_broker``.)"""
        await self.app.start()

    async def _before_broker(self) -> None:
        if self.settings.agent.metrics_port and self._http is None:
            config = uvicorn.Config(
                health_app(self.metrics, self.readiness),
                host=self.settings.agent.host,
                port=self.settings.agent.metrics_port,
                log_config=None,
                access_log=False,
                lifespan="off",
            )
            self._http = HealthServer(config)
            self._http_task = asyncio.create_task(self._http.serve())
        # What reads files (keys, endpoints) first: a mistake there is not retried as NATS is.
        if self.llm is None:
            self.llm = make_llm_investigator(self.settings, self.metrics, self.redis)
        verifier = job_verifier_from_settings(self.settings.identity)
        self.deps.watch_redis()
        kb = self.settings.knowledge
        if kb.enabled and self.knowledge is None:
            self.knowledge = Knowledge(kb.runbooks_dir, RunbookStore(self.redis, self.settings.prefix),
                                       max_runbooks=kb.max_runbooks, max_bytes=kb.max_runbook_bytes,
                                       reload_interval=kb.reload_interval, search_timeout=kb.search_timeout)
            self._knowledge_task = asyncio.create_task(self.knowledge.run(), name="agent-runbooks")
            self.kb = KbResponder(self.knowledge, RunbookStore(self.redis, self.settings.prefix))
        inc = self.settings.incidents
        if inc.enabled and self.incidents is None:  # loads in the background: Redis down never holds up jobs
            store = IncidentStore(self.redis, self.settings.prefix, max_incidents=inc.max_incidents,
                                  max_age=inc.max_age_days * 86400.0)
            self.incidents = IncidentMemory(store, inc)
            self._incidents_task = asyncio.create_task(self.incidents.run(), name="agent-incidents")
        if self.feedback is None:
            self.feedback = FeedbackResponder(self.incidents, self.metrics.feedback, self.metrics.feedback_refused)
        await until_up(functools.partial(self._pull_jobs, verifier), self.deps.nats_retry)

    async def _after_broker(self) -> None:
        assert self.deps.nc is not None
        await self.deps.nc.flush()  # started means the server routes diagnostics requests to us
        self.deps.set_up = True
        log.info("agent ready: pulling jobs from %s", Subjects(self.settings.prefix).stream_jobs)

    async def _pull_jobs(self, verifier: IdentityVerifier | None) -> None:
        nc = await self.broker.connect()
        self.deps.nc = nc
        if self.diagnostics is None:  # answered by the subscriber of ``diagnostics_router``, started next
            self.diagnostics = DiagnosticsResponder(self.settings, self.metrics, self.llm)
        js = self.settings.jetstream  # RESULTS keeps each answer for a restarted gateway
        await ensure_streams(nc.jetstream(), Subjects(self.settings.prefix), "results", replicas=js.replicas,
                             results_max_age=js.results_max_age, results_max_bytes=js.results_max_bytes)
        if self.audit is None:
            self.audit = AuditLog(Subjects(self.settings.prefix), "agent", self.settings.audit, self.metrics.registry)
            await self.audit.start(nc, self.settings.jetstream.replicas)
        self.handler = JobHandler(nc, self.settings, self.metrics, self.redis, self.llm, verifier=verifier,
                                  audit=self.audit, knowledge=self.knowledge, incidents=self.incidents)
        if self.incidents is not None:
            subject = Subjects(self.settings.prefix).incidents_recorded

            async def announce(message: IncidentRecorded) -> None:
                await nc.publish(subject, message.to_bytes())

            self.incidents.announce_with(announce)
        worker = JobWorker(nc, Subjects(self.settings.prefix), self.settings.agent, self.handler.handle, self.metrics,
                           stream_replicas=self.settings.jetstream.replicas)
        await worker.start()
        self.worker = worker

    async def stop(self) -> None:
        if self._incidents_task is not None:
            self._incidents_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._incidents_task
        if self._knowledge_task is not None:
            self._knowledge_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._knowledge_task
        if self.diagnostics is not None:
            await self.diagnostics.aclose()
        if self.worker is not None:
            await self.worker.stop()
        if self._http is not None:
            self._http.should_exit = True
            if self._http_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._http_task
        if self.llm is not None:
            await self.llm.aclose()
        if self.audit is not None:
            await self.audit.aclose()
        await self.deps.aclose()
        await self.redis.aclose()


def build(settings: Settings) -> Agent:
    """Build without connecting anything."""
    redis = redis_client(settings.redis)
    deps = Dependencies(settings.nats, settings.redis, redis)
    broker = nats_broker(
        settings.nats,
        name="sleuth-agent",
        max_reconnect_attempts=-1,
        reconnect_time_wait=settings.nats.retry_interval,
        error_cb=deps.nats_retry.nats_error_cb(),
        log_level=logging.DEBUG,
    )
    metrics = Metrics()
    agent = Agent(settings, FastStream(broker), broker, metrics, redis, deps)
    # Every agent listens; one of queue group "agent" answers.
    broker.include_router(diagnostics_router(lambda: agent.diagnostics, Subjects(settings.prefix),
                                             crashes=metrics.crashes))
    broker.include_router(kb_router(lambda: agent.kb, Subjects(settings.prefix), crashes=metrics.crashes))
    broker.include_router(incidents_router(lambda: agent.incidents, Subjects(settings.prefix)))
    broker.include_router(feedback_router(lambda: agent.feedback, Subjects(settings.prefix), crashes=metrics.crashes))
    # Before the broker's own start (which subscribes on the connection made, and waited for,
    # here); after it, ready.
    agent.app.on_startup(agent._before_broker)
    agent.app.after_startup(agent._after_broker)
    agent.app.on_shutdown(agent.stop)
    return agent


def create_app(settings: Settings) -> FastStream:
    """The agent as a FastStream app (``await create_app(settings).run()``)."""
    return build(settings).app
