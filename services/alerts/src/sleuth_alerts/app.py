"""Wiring: settings → NATS (the FastStream broker's connection), Redis, streams, the batcher,
the channel commands and the webhook server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import uvicorn
from faststream import FastStream
from faststream.nats import NatsBroker
from nats.aio.client import Client as Nats
from nats.js import JetStreamContext
from redis.asyncio import Redis

from sleuth_alerts.batcher import Batcher
from sleuth_alerts.bus import ensure_streams
from sleuth_alerts.channels import ChannelCommands
from sleuth_alerts.handlers import build_router
from sleuth_alerts.metrics import Metrics
from sleuth_alerts.settings import Settings
from sleuth_alerts.store import Store
from sleuth_alerts.webhook import WebhookServer, webhook_app
from sleuth_common.audit import AuditLog
from sleuth_common.connect import nats_broker, redis_client
from sleuth_common.health import Dependencies, Readiness, until_up
from sleuth_common.httpserver import uvicorn_limits
from sleuth_common.messages import web_channel
from sleuth_common.subjects import Subjects
from sleuth_common.tracing import traced_asgi

__all__ = ["Alerts", "build", "create_app"]

log = logging.getLogger(__name__)


@dataclass
class Alerts:
    """One alerts process: the FastStream app and what it runs."""

    settings: Settings
    app: FastStream
    broker: NatsBroker
    metrics: Metrics
    redis: Redis
    deps: Dependencies = field(repr=False)
    clock: Callable[[], float] = time.time
    store: Store | None = None
    nc: Nats | None = None
    js: JetStreamContext | None = None
    batcher: Batcher | None = None
    audit: AuditLog | None = None
    _http: uvicorn.Server | None = None
    _http_task: asyncio.Task[None] | None = field(default=None, repr=False)

    async def readiness(self) -> Readiness:
        return await self.deps.readiness()

    def log_route_access(self) -> None:
        """Say at start which routes refuse every post, and which accept anyone's."""
        cfg = self.settings.alerts
        for route in cfg.routes:
            if not route.token_env and cfg.require_token:
                log.warning(
                    "alert route %r is closed: it names no token_env and alerts.require_token is on, "
                    "so every post to it gets 401",
                    route.name,
                )
            elif not route.token_env:
                log.warning(
                    "alert route %r accepts unauthenticated posts (no token_env, alerts.require_token "
                    "is off): anyone who can reach %s:%d may post alerts to it",
                    route.name,
                    cfg.host,
                    cfg.port,
                )
            elif route.token() is None:
                log.warning(
                    "alert route %r: environment variable %s is empty; every post will get 401",
                    route.name,
                    route.token_env,
                )
            if route.run_as is not None and web_channel(route.target) is None:
                log.info(
                    "alert route %r: run_as is not used for %s (only `alerts on` there tells Sleuth who "
                    "reads the channel): alerts are listed, not investigated, until someone says it",
                    route.name,
                    route.target,
                )
            elif route.run_as is None:
                log.info(
                    "alert route %r names no run_as identity: alerts are listed, not investigated, "
                    "until someone says `alerts on` in %s",
                    route.name,
                    route.target,
                )

    async def start(self) -> None:
        """Serve the webhook, /healthz, /readyz and /metrics at once; connect to NATS (waiting as
        long as it takes), after which posts are stored and channel commands answered; then, once
        Redis answers, batch them. Until NATS is there a post gets 503, which Alertmanager retries.
        (The app's start: ``_before_broker``, the broker's subscribers, ``_after_broker``.)"""
        await self.app.start()

    async def _before_broker(self) -> None:
        self.log_route_access()
        cfg = self.settings.alerts
        if self._http is None:
            config = uvicorn.Config(
                traced_asgi(webhook_app(self.settings, self.metrics, lambda: self.js, self.readiness, self.audit)),
                host=cfg.host,
                port=cfg.port,
                log_config=None,
                access_log=False,
                lifespan="off",
                **uvicorn_limits(header_timeout=cfg.header_timeout, max_connections=cfg.max_connections),
            )
            self._http = WebhookServer(config)
            self._http_task = asyncio.create_task(self._http.serve())
        self.deps.watch_redis()
        await until_up(self._connect, self.deps.nats_retry)

    async def _after_broker(self) -> None:
        """The channel commands' subscriber is started: answer them, then batch once Redis answers."""
        assert self.nc is not None and self.store is not None
        await self.nc.flush()  # started means the server routes requests to us
        self.deps.set_up = True
        cfg = self.settings.alerts
        log.info("alerts ready: webhook on http://%s:%d/v1/alertmanager/<route>", cfg.host, cfg.port)
        # The batcher keeps its windows in Redis: without it there is nothing to batch into.
        await self.deps.redis_up()
        batcher = Batcher(self.nc, self.store, self.settings, self.metrics, clock=self.clock, audit=self.audit)
        await batcher.start()
        self.batcher = batcher

    async def _connect(self) -> None:
        """The connection and the streams posts go to (the broker's start then subscribes the
        channel commands on it)."""
        subjects = Subjects(self.settings.prefix)
        self.nc = self.deps.nc = await self.broker.connect()
        js = self.nc.jetstream(timeout=self.settings.alerts.publish_timeout)
        await ensure_streams(js, subjects, self.settings.jetstream.replicas)
        if self.audit is not None:
            await self.audit.start(self.nc, self.settings.jetstream.replicas)
        self.js = js

    async def stop(self) -> None:
        if self._http is not None:
            self._http.should_exit = True
            if self._http_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._http_task
        if self.batcher is not None:
            await self.batcher.stop()
        if self.audit is not None:
            await self.audit.aclose()
        await self.deps.aclose()
        await self.redis.aclose()


def build(settings: Settings, *, clock: Callable[[], float] = time.time) -> Alerts:
    """Build without connecting anything."""
    redis = redis_client(settings.redis)
    deps = Dependencies(settings.nats, settings.redis, redis)
    broker = nats_broker(
        settings.nats,
        name="sleuth-alerts",
        max_reconnect_attempts=-1,
        reconnect_time_wait=settings.nats.retry_interval,
        error_cb=deps.nats_retry.nats_error_cb(),
        drain_timeout=2,
        log_level=logging.DEBUG,
    )
    metrics = Metrics()
    cfg = settings.alerts
    store = Store(redis, settings.prefix, batch_ttl=cfg.batch_ttl(), posted_ttl=cfg.batch_retention_margin)
    audit = AuditLog(Subjects(settings.prefix), "alerts", settings.audit, metrics.registry)
    broker.include_router(
        build_router(ChannelCommands(store, settings, clock, audit), Subjects(settings.prefix),
                     crashes=metrics.crashes)
    )
    alerts = Alerts(settings, FastStream(broker), broker, metrics, redis, deps, clock=clock, store=store, audit=audit)
    # Before the broker's own start (which subscribes the commands on the connection made, and
    # waited for, here); after it, what needs Redis.
    alerts.app.on_startup(alerts._before_broker)
    alerts.app.after_startup(alerts._after_broker)
    alerts.app.on_shutdown(alerts.stop)
    return alerts


def create_app(settings: Settings) -> FastStream:
    """The alerts service as a FastStream app (``await create_app(settings).run()``)."""
    return build(settings).app
