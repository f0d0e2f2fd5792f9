"""The gateway's live parts (bus, Redis and what is built on them), started by the app's lifespan."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from sleuth_common.audit import AuditLog
from sleuth_common.connect import redis_client
from sleuth_common.health import Dependencies, cancel_and_wait, until_up
from sleuth_common.identity import CHAT_ISSUER, IdentitySigner, signer_from_settings
from sleuth_common.jobs_queue import JobsQueueState
from sleuth_common.messages import ChatPost
from sleuth_common.subjects import Subjects
from sleuth_gateway import audit
from sleuth_gateway.auth import Authenticator
from sleuth_gateway.bus import Bus
from sleuth_gateway.channels import ChannelStore, ChatConsumer
from sleuth_gateway.conversation import ConversationStore
from sleuth_gateway.gate import ConcurrencyGate
from sleuth_gateway.metrics import Metrics
from sleuth_gateway.pending import Deliverer, PendingStore, Resumer
from sleuth_gateway.ratelimit import InflightLimiter, LoginThrottle, RateLimiter
from sleuth_gateway.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["Deliver", "Gateway"]

Deliver = Callable[[ChatPost], Awaitable[bool]]
"""Posts a ``ChatPost`` to a chat system; True when posted now (False: already posted)."""


class Gateway:
    """Built by ``create_app`` without connecting; ``start()`` builds what requests use and
    connects NATS in the background (``/readyz`` says when it is done)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.subjects = Subjects(settings.prefix)
        self.metrics = Metrics()
        self.bus = Bus(
            settings.nats,
            self.subjects,
            request_timeout=settings.authz.request_timeout,
            hedge_after=settings.authz.hedge_after,
            publish_timeout=settings.gateway.publish_timeout,
            stream_replicas=settings.jetstream.replicas,
            jetstream=settings.jetstream,
        )
        self.requests_per_user = ConcurrencyGate(settings.gateway.max_requests_per_user)
        self.audit = AuditLog(self.subjects, "gateway", settings.audit, self.metrics.registry)
        self.redis: Redis | None = None
        self._deps: Dependencies | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._authenticator: Authenticator | None = None
        self._ratelimiter: RateLimiter | None = None
        self._read_ratelimiter: RateLimiter | None = None
        self._inflight: InflightLimiter | None = None
        self._conversations: ConversationStore | None = None
        self._channels: ChannelStore | None = None
        self._chat: ChatConsumer | None = None
        self._pending: PendingStore | None = None
        self._resumer: Resumer | None = None
        self._resuming: asyncio.Task[int] | None = None
        self.deliverers: dict[str, Deliverer] = {}
        """How a question's answer is delivered on its surface when a restarted gateway resumes
        it (``conversation``, ``mattermost``): registered by ``create_app`` and chat adapters."""
        self.chat_targets: dict[str, Deliver] = {}
        """Chat adapters by target prefix (``mattermost:``): where the CHAT stream's posts for
        other chat systems than the web chat go."""
        self.status: dict[str, Callable[[], str]] = {}
        """Parts shown by ``/readyz`` without deciding readiness (a chat adapter's state)."""
        self.chat_signer: IdentitySigner | None = None
        """Signs jobs for chat users the gateway mapped (issuer ``sleuth-chat``); loaded when a
        chat adapter is configured. A key that cannot be read fails the start."""
        if settings.gateway.mattermost.url:
            self.chat_signer = signer_from_settings(
                settings.identity, issuer=CHAT_ISSUER, ttl=settings.identity.job_ttl
            )

    async def refresh_metrics(self) -> None:
        """Read what ``/metrics`` shows live (the JOBS queue's gauges, at most every few seconds)."""
        await self.metrics.jobs_queue.refresh(self._deps.nc if self._deps is not None else None, self.subjects)

    async def jobs_queue(self) -> JobsQueueState | None:
        """The JOBS queue as last read (read again when the reading is older than a few seconds:
        questions share readings with each other and with ``/metrics``); ``None``: unreadable."""
        await self.refresh_metrics()
        return self.metrics.jobs_queue.state

    @property
    def authenticator(self) -> Authenticator:
        assert self._authenticator is not None, "the gateway is not started"
        return self._authenticator

    @property
    def deps(self) -> Dependencies:
        """NATS and Redis as ``/readyz`` reports them."""
        assert self._deps is not None, "the gateway is not started"
        return self._deps

    @property
    def ratelimiter(self) -> RateLimiter:
        """Questions and channel posts, per user."""
        assert self._ratelimiter is not None, "the gateway is not started"
        return self._ratelimiter

    @property
    def read_ratelimiter(self) -> RateLimiter:
        """Every other authenticated request, per user."""
        assert self._read_ratelimiter is not None, "the gateway is not started"
        return self._read_ratelimiter

    @property
    def inflight(self) -> InflightLimiter:
        """Questions running at once, per user, across replicas."""
        assert self._inflight is not None, "the gateway is not started"
        return self._inflight

    @property
    def conversations(self) -> ConversationStore:
        assert self._conversations is not None, "the gateway is not started"
        return self._conversations

    @property
    def pending(self) -> PendingStore:
        """Questions running, by job and by request id, for resuming them (sleuth_gateway.pending)."""
        assert self._pending is not None, "the gateway is not started"
        return self._pending

    @property
    def resumer(self) -> Resumer | None:
        return self._resumer

    def resume_pending(self) -> None:
        """Once connected: deliver the answers of questions that ran when this gateway (or another
        replica) went away. Call after every surface registered its deliverer."""
        self._resuming = asyncio.create_task(self._resume(), name="gateway-resume")

    async def _resume(self) -> int:
        if self._connecting is not None:
            await asyncio.shield(self._connecting)
        self._resumer = Resumer(self.pending, lambda job_id: self.bus.watch(job_id, kept=True), self.deliverers)
        return await self._resumer.start()

    @property
    def channels(self) -> ChannelStore:
        assert self._channels is not None, "the gateway is not started"
        return self._channels

    async def start(self) -> None:
        """Build what requests use and start connecting; returns at once. Until NATS answers
        (retried every ``nats.retry_interval`` seconds, for as long as it takes) and while Redis
        does not, requests that need them get 503. A configuration error is raised here."""
        cfg = self.settings
        self.redis = redis_client(cfg.redis, decode_responses=True)
        self._deps = Dependencies(cfg.nats, cfg.redis, self.redis)
        self.bus.prepare(self._deps.nats_retry)
        key_prefix = f"{cfg.prefix}:gateway"
        g = cfg.gateway
        self._ratelimiter = RateLimiter(self.redis, key_prefix, g.rate_limit_capacity, g.rate_limit_refill_per_second)
        self._read_ratelimiter = RateLimiter(
            self.redis, key_prefix, g.read_rate_limit_capacity, g.read_rate_limit_refill_per_second, "ratelimit-read"
        )
        # A question holds its slot at most until its deadline (plus publishing, and slack).
        hold = g.answer_timeout + g.publish_timeout + 30.0
        self._inflight = InflightLimiter(self.redis, key_prefix, g.max_inflight_per_user, hold)
        self._authenticator = Authenticator(
            self.bus,
            g.auth_cache_ttl,
            negative_ttl=g.auth_negative_ttl,
            throttle=LoginThrottle(self.redis, key_prefix, g.auth_failure_limit, g.auth_failure_window),
            lookups_per_address=g.max_sign_ins_per_address,
            on_sign_in=lambda who, entry: audit.signed_in(self, who.user, who.groups, entry),
        )
        self._conversations = ConversationStore(
            self.redis, key_prefix, cfg.gateway.conversation_ttl, cfg.gateway.conversation_max_messages
        )
        self._channels = ChannelStore(self.redis, key_prefix, cfg.gateway.channel_max_messages)
        self._pending = PendingStore(self.redis, key_prefix, cfg.jetstream.results_max_age)
        # Not waited for: requests answer 503 until Redis answers, and /readyz says so.
        self._deps.watch_redis()
        self._connecting = asyncio.create_task(self._connect(self._deps, self._channels), name="gateway-connect")

    async def _connect(self, deps: Dependencies, channels: ChannelStore) -> None:
        try:
            deps.nc = await until_up(self.bus.connect, deps.nats_retry)
            await self.audit.start(deps.nc, self.settings.jetstream.replicas)
            chat = ChatConsumer(
                deps.nc, self.subjects, channels, {c.name for c in self.settings.gateway.channels},
                self.chat_targets, self.conversations,
            )
            await until_up(chat.start, deps.nats_retry)
        except Exception:  # the task's edge: say why the gateway will not get ready
            log.exception("the gateway could not connect to NATS")
            raise
        self._chat = chat
        deps.set_up = True
        log.info("gateway ready", extra={"url": self.settings.gateway.url()})

    async def stop(self) -> None:
        if self._resuming is not None:
            await cancel_and_wait(self._resuming)
        if self._resumer is not None:
            await self._resumer.stop()
        if self._connecting is not None:
            await cancel_and_wait(self._connecting)
        if self._chat is not None:
            await self._chat.stop()
        await self.audit.aclose()
        await self.bus.close()
        if self._deps is not None:
            await self._deps.aclose()
        if self.redis is not None:
            await self.redis.aclose()
