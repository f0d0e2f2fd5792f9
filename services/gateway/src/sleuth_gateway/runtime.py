"""The gateway's live parts (bus, Redis and what is built on them), started by the app's lifespan."""

from __future__ import annotations

import logging

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_common.connect import redis_client
from sleuth_common.subjects import Subjects
from sleuth_gateway.auth import Authenticator
from sleuth_gateway.bus import Bus
from sleuth_gateway.channels import ChannelStore, ChatConsumer
from sleuth_gateway.conversation import ConversationStore
from sleuth_gateway.gate import ConcurrencyGate
from sleuth_gateway.metrics import Metrics
from sleuth_gateway.ratelimit import InflightLimiter, LoginThrottle, RateLimiter
from sleuth_gateway.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["Gateway"]


class Gateway:
    """Built by ``create_app`` without connecting; ``start()`` connects NATS and Redis."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.subjects = Subjects(settings.prefix)
        self.metrics = Metrics()
        self.bus = Bus(
            settings.nats,
            self.subjects,
            request_timeout=settings.authz.request_timeout,
            publish_timeout=settings.gateway.publish_timeout,
        )
        self.requests_per_user = ConcurrencyGate(settings.gateway.max_requests_per_user)
        self.redis: Redis | None = None
        self._authenticator: Authenticator | None = None
        self._ratelimiter: RateLimiter | None = None
        self._read_ratelimiter: RateLimiter | None = None
        self._inflight: InflightLimiter | None = None
        self._conversations: ConversationStore | None = None
        self._channels: ChannelStore | None = None
        self._chat: ChatConsumer | None = None

    @property
    def authenticator(self) -> Authenticator:
        assert self._authenticator is not None, "the gateway is not started"
        return self._authenticator

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
    def channels(self) -> ChannelStore:
        assert self._channels is not None, "the gateway is not started"
        return self._channels

    async def start(self) -> None:
        cfg = self.settings
        self.redis = redis_client(cfg.redis, decode_responses=True)
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
        )
        self._conversations = ConversationStore(
            self.redis, key_prefix, cfg.gateway.conversation_ttl, cfg.gateway.conversation_max_messages
        )
        self._channels = ChannelStore(self.redis, key_prefix, cfg.gateway.channel_max_messages)
        try:
            await self.redis.ping()
        except (RedisError, OSError) as exc:
            # Not fatal: requests answer 503 until Redis is back, and /healthz says so.
            log.warning("Redis is not answering at start-up: %s", exc)
        await self.bus.connect()
        self._chat = ChatConsumer(
            self.bus.nats, self.subjects, self._channels, {c.name for c in cfg.gateway.channels}
        )
        await self._chat.start()
        log.info("gateway ready", extra={"url": cfg.gateway.url()})

    async def stop(self) -> None:
        if self._chat is not None:
            await self._chat.stop()
        await self.bus.close()
        if self.redis is not None:
            await self.redis.aclose()
