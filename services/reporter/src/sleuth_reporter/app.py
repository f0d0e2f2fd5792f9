"""Wiring: settings → NATS (the FastStream broker's connection), Redis, the streams, the commands
(``reports.<op>``), the queue worker and the /healthz, /readyz, /metrics server."""

from __future__ import annotations

import asyncio
import contextlib
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
from sleuth_reporter.asking import REPORTER_ISSUER, AgentClient
from sleuth_reporter.bus import ensure_streams
from sleuth_reporter.commands import Commands
from sleuth_reporter.handlers import build_router
from sleuth_reporter.mail import Mailer
from sleuth_reporter.metrics import HealthServer, Metrics, health_app
from sleuth_reporter.settings import Settings
from sleuth_reporter.store import Store
from sleuth_reporter.worker import ReportWorker

__all__ = ["Reporter", "build", "create_app"]

log = logging.getLogger(__name__)


@dataclass
class Reporter:
    """One reporter process: the FastStream app and what it runs."""

    settings: Settings
    app: FastStream
    broker: NatsBroker
    metrics: Metrics
    redis: Redis
    deps: Dependencies = field(repr=False)
    nc: Nats | None = None
    worker: ReportWorker | None = None
    audit: AuditLog | None = None
    commands: Commands | None = None
    _start_with: tuple[Store, IdentitySigner | None, Mailer] | None = field(default=None, repr=False)
    _http: uvicorn.Server | None = None
    _http_task: asyncio.Task[None] | None = field(default=None, repr=False)

    async def readiness(self) -> Readiness:
        return await self.deps.readiness(busy=self.worker.busy if self.worker else 0)

    def _signer(self) -> IdentitySigner | None:
        # Signs whom each report acts for and who reads it (the agent trusts nothing else). A key
        # that cannot be read fails the start.
        signer = signer_from_settings(self.settings.identity, issuer=REPORTER_ISSUER,
                                      ttl=self.settings.identity.job_ttl)
        if signer is None:
            log.warning("the reporter has no identity signing key (identity.signing_key_file): the agent "
                        "will refuse every report")
        return signer

    async def start(self) -> None:
        """Serve /healthz, /readyz and /metrics at once; connect to NATS (waiting as long as it
        takes), answer commands, and once Redis answers, make the queued reports. (The app's start:
        ``_before_broker``, the broker's subscribers — the commands —, ``_after_broker``.)"""
        await self.app.start()

    async def _before_broker(self) -> None:
        cfg = self.settings.reporter
        if cfg.port and self._http is None:
            config = uvicorn.Config(health_app(self.metrics, self.readiness), host=cfg.host, port=cfg.port,
                                    log_config=None, access_log=False, lifespan="off")
            self._http = HealthServer(config)
            self._http_task = asyncio.create_task(self._http.serve())
        signer = self._signer()
        mailer = Mailer(cfg.smtp)
        if self.settings.reporter.emails and not mailer.enabled:
            log.warning("reporter.emails names addresses but reporter.smtp has no host or sender: reports "
                        "go to chat only")
        store = Store(self.redis, self.settings.prefix, cfg.state_ttl)
        self.deps.watch_redis()
        await until_up(lambda: self._connect(store), self.deps.nats_retry)
        self._start_with = (store, signer, mailer)

    async def _after_broker(self) -> None:
        assert self.nc is not None and self._start_with is not None
        await self.nc.flush()  # started means the server routes requests to us
        store, signer, mailer = self._start_with
        cfg = self.settings.reporter
        await self.deps.redis_up()
        js = self.nc.jetstream(timeout=cfg.publish_timeout)
        worker = ReportWorker(self.nc, js, store, self.settings, self.metrics,
                              AgentClient(self.nc, js, self.settings, signer), mailer, audit=self.audit)
        await worker.start()
        self.worker = worker
        self.deps.set_up = True
        log.info("reporter ready: reports on %s", Subjects(self.settings.prefix).reports_all)

    async def _connect(self, store: Store) -> None:
        subjects = Subjects(self.settings.prefix)
        self.nc = self.deps.nc = await self.broker.connect()
        js = self.nc.jetstream(timeout=self.settings.reporter.publish_timeout)
        await ensure_streams(js, subjects, self.settings.jetstream.replicas)
        if self.audit is None:
            self.audit = AuditLog(subjects, "reporter", self.settings.audit, self.metrics.registry)
            await self.audit.start(self.nc, self.settings.jetstream.replicas)
        if self.commands is None:  # answered by the subscriber of ``handlers``, started next
            self.commands = Commands(self.nc, js, store, self.settings, self.metrics, self.audit)

    async def stop(self) -> None:
        if self.worker is not None:
            await self.worker.stop()
        if self._http is not None:
            self._http.should_exit = True
            if self._http_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._http_task
        if self.audit is not None:
            await self.audit.aclose()
        await self.deps.aclose()
        await self.redis.aclose()


def build(settings: Settings) -> Reporter:
    """Build without connecting anything."""
    redis = redis_client(settings.redis, decode_responses=True)
    deps = Dependencies(settings.nats, settings.redis, redis)
    broker = nats_broker(
        settings.nats,
        name="sleuth-reporter",
        max_reconnect_attempts=-1,
        reconnect_time_wait=settings.nats.retry_interval,
        error_cb=deps.nats_retry.nats_error_cb(),
        drain_timeout=2,
        log_level=logging.DEBUG,
    )
    metrics = Metrics()
    reporter = Reporter(settings, FastStream(broker), broker, metrics, redis, deps)
    broker.include_router(build_router(lambda: reporter.commands, Subjects(settings.prefix), crashes=metrics.crashes))
    # Before the broker's own start: that reuses the connection made (and waited for) here.
    reporter.app.on_startup(reporter._before_broker)
    reporter.app.after_startup(reporter._after_broker)
    reporter.app.on_shutdown(reporter.stop)
    return reporter


def create_app(settings: Settings) -> FastStream:
    """The reporter as a FastStream app (``await create_app(settings).run()``)."""
    return build(settings).app
