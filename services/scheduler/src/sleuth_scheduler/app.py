"""Wiring: settings → NATS (the FastStream broker's connection), Redis, the streams, the
commands, the firing loop and the health server."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass, field

import uvicorn
from faststream import FastStream
from faststream.nats import NatsBroker
from nats.aio.client import Client as Nats
from redis.asyncio import Redis

from sleuth_common.audit import AuditLog
from sleuth_common.connect import nats_broker, redis_client
from sleuth_common.health import Dependencies, Readiness, until_up
from sleuth_common.identity import IdentitySigner, signer_from_settings
from sleuth_common.subjects import Subjects
from sleuth_scheduler.answers import Answers
from sleuth_scheduler.bus import ensure_streams
from sleuth_scheduler.clock import Clock
from sleuth_scheduler.commands import Commands
from sleuth_scheduler.firing import SCHEDULER_ISSUER, Firer
from sleuth_scheduler.handlers import build_router
from sleuth_scheduler.metrics import HealthServer, Metrics, health_app
from sleuth_scheduler.settings import Settings
from sleuth_scheduler.store import Schedule, Store

__all__ = ["Scheduler", "build", "create_app"]

log = logging.getLogger(__name__)


@dataclass
class Scheduler:
    """One scheduler process: the FastStream app and what it runs."""

    settings: Settings
    app: FastStream
    broker: NatsBroker
    metrics: Metrics
    redis: Redis
    deps: Dependencies = field(repr=False)
    clock: Clock = field(default_factory=Clock)
    store: Store | None = None
    nc: Nats | None = None
    firer: Firer | None = None
    answers: Answers | None = None
    commands: Commands | None = None
    audit: AuditLog | None = None
    _http: uvicorn.Server | None = None
    _http_task: asyncio.Task[None] | None = field(default=None, repr=False)

    async def readiness(self) -> Readiness:
        return await self.deps.readiness(waiting_for_answers=self.answers.watching if self.answers else 0)

    async def start(self) -> None:
        """Serve /healthz, /readyz and /metrics at once; connect to NATS (waiting as long as it
        takes) and answer the commands; once Redis answers, fire schedules. (The app's start:
        ``_before_broker``, the broker's subscribers — the commands —, ``_after_broker``.)"""
        await self.app.start()

    async def _before_broker(self) -> None:
        cfg = self.settings.scheduler
        if cfg.port and self._http is None:
            config = uvicorn.Config(health_app(self.metrics, self.readiness), host=cfg.host, port=cfg.port,
                                    log_config=None, access_log=False, lifespan="off")
            self._http = HealthServer(config)
            self._http_task = asyncio.create_task(self._http.serve())
        # The key first: a key that cannot be read is a configuration error, not retried.
        signer = signer_from_settings(self.settings.identity, issuer=SCHEDULER_ISSUER,
                                      ttl=self.settings.identity.job_ttl)
        if signer is None:
            log.warning("the scheduler has no identity signing key (identity.signing_key_file): the agent "
                        "will refuse every scheduled investigation")
        self.store = Store(self.redis, self.settings.prefix, fired_ttl=cfg.fired_ttl,
                           run_ttl=cfg.claim_timeout + cfg.investigation_timeout + cfg.answer_grace + 86400)
        self.deps.watch_redis()
        await until_up(functools.partial(self._connect, signer), self.deps.nats_retry)

    async def _after_broker(self) -> None:
        assert self.nc is not None
        await self.nc.flush()  # started means the server routes requests to us
        self.deps.set_up = True
        log.info("scheduler ready: commands on %s", Subjects(self.settings.prefix).schedules_all)
        await self.deps.redis_up()
        assert self.firer is not None
        self.firer.start()

    async def _connect(self, signer: IdentitySigner | None) -> None:
        subjects = Subjects(self.settings.prefix)
        cfg = self.settings.scheduler
        self.nc = self.deps.nc = await self.broker.connect()
        js = self.nc.jetstream(timeout=cfg.publish_timeout)
        await ensure_streams(js, subjects, self.settings.jetstream.replicas)
        assert self.store is not None
        if self.audit is None:
            self.audit = AuditLog(subjects, "scheduler", self.settings.audit, self.metrics.registry)
            await self.audit.start(self.nc, self.settings.jetstream.replicas)
        if self.firer is None:
            self.answers = Answers(self.nc, self.store, self.settings, self.metrics, self.clock, self.audit)
            self.firer = Firer(self.nc, self.store, self.settings, self.metrics, self.clock, self.answers, signer)
        if self.commands is None:  # answered by the subscriber of ``handlers``, started next
            self.commands = Commands(self.store, self.settings, self.clock, self.nc, self._run_now, self.metrics,
                                     self.audit)

    async def _run_now(self, s: Schedule) -> str:
        assert self.firer is not None
        return await self.firer.run_now(s)

    async def stop(self) -> None:
        if self.firer is not None:
            await self.firer.stop()
        if self.answers is not None:
            await self.answers.close()
        if self._http is not None:
            self._http.should_exit = True
            if self._http_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._http_task
            self._http = None
        if self.audit is not None:
            await self.audit.aclose()
        await self.deps.aclose()
        await self.redis.aclose()


def build(settings: Settings, *, clock: Clock | None = None) -> Scheduler:
    """Build without connecting anything (tests pass a clock they move)."""
    redis = redis_client(settings.redis)
    deps = Dependencies(settings.nats, settings.redis, redis)
    broker = nats_broker(
        settings.nats,
        name="sleuth-scheduler",
        max_reconnect_attempts=-1,
        reconnect_time_wait=settings.nats.retry_interval,
        error_cb=deps.nats_retry.nats_error_cb(),
        drain_timeout=2,
        log_level=logging.DEBUG,
    )
    metrics = Metrics()
    scheduler = Scheduler(settings, FastStream(broker), broker, metrics, redis, deps,
                          clock=clock or Clock.from_settings(settings.scheduler))
    broker.include_router(build_router(lambda: scheduler.commands, Subjects(settings.prefix), crashes=metrics.crashes))
    # Before the broker's own start (which subscribes the commands on the connection made, and
    # waited for, here); after it, what needs Redis.
    scheduler.app.on_startup(scheduler._before_broker)
    scheduler.app.after_startup(scheduler._after_broker)
    scheduler.app.on_shutdown(scheduler.stop)
    return scheduler


def create_app(settings: Settings) -> FastStream:
    """The scheduler as a FastStream app (``await create_app(settings).run()``)."""
    return build(settings).app
