"""Wiring: settings → NATS (FastStream broker's connection), Redis, job handler, JetStream
worker, health/metrics server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

import uvicorn
from faststream import FastStream
from faststream.nats import NatsBroker
from redis.asyncio import Redis

from sleuth_agent.handlers import JobHandler
from sleuth_agent.llm import LlmInvestigator, make_llm_investigator
from sleuth_agent.metrics import Metrics, health_app
from sleuth_agent.settings import Settings
from sleuth_agent.worker import JobWorker
from sleuth_common.connect import nats_broker, redis_client
from sleuth_common.identity import job_verifier_from_settings
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
    worker: JobWorker | None = None
    handler: JobHandler | None = None
    llm: LlmInvestigator | None = None
    _http: uvicorn.Server | None = None
    _http_task: asyncio.Task[None] | None = field(default=None, repr=False)

    def status(self) -> dict[str, object]:
        nc = self.handler.nc if self.handler else None
        connected = bool(nc and nc.is_connected)
        return {"ok": connected, "nats": connected, "busy": self.worker.busy if self.worker else 0}

    async def start(self) -> None:
        nc = await self.broker.connect()
        self.llm = make_llm_investigator(self.settings, self.metrics, self.redis)
        self.handler = JobHandler(
            nc, self.settings, self.metrics, self.redis, self.llm,
            verifier=job_verifier_from_settings(self.settings.identity),
        )
        self.worker = JobWorker(
            nc, Subjects(self.settings.prefix), self.settings.agent, self.handler.handle, self.metrics
        )
        await self.worker.start()
        if self.settings.agent.metrics_port:
            config = uvicorn.Config(
                health_app(self.metrics, self.status),
                host=self.settings.agent.host,
                port=self.settings.agent.metrics_port,
                log_config=None,
                access_log=False,
                lifespan="off",
            )
            self._http = uvicorn.Server(config)
            self._http_task = asyncio.create_task(self._http.serve())
        log.info("agent ready: pulling jobs from %s", Subjects(self.settings.prefix).stream_jobs)

    async def stop(self) -> None:
        if self.worker is not None:
            await self.worker.stop()
        if self._http is not None:
            self._http.should_exit = True
            if self._http_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._http_task
        if self.llm is not None:
            await self.llm.aclose()
        await self.redis.aclose()


def build(settings: Settings) -> Agent:
    """Build without connecting anything."""
    broker = nats_broker(
        settings.nats,
        name="sleuth-agent",
        max_reconnect_attempts=-1,
        log_level=logging.DEBUG,
    )
    redis = redis_client(settings.redis)
    agent = Agent(settings, FastStream(broker), broker, Metrics(), redis)
    agent.app.after_startup(agent.start)
    agent.app.on_shutdown(agent.stop)
    return agent


def create_app(settings: Settings) -> FastStream:
    """The agent as a FastStream app (``await create_app(settings).run()``)."""
    return build(settings).app
