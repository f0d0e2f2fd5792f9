"""Per-user daily cap on LLM calls (``limits.daily_llm_calls``), counted in Redis so that every
agent replica shares it. A day is a UTC calendar day."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

__all__ = ["DailyCapReached", "DailyLlmBudget"]

log = logging.getLogger(__name__)


class DailyCapReached(Exception):
    def __init__(self, cap: int) -> None:
        super().__init__(f"daily cap of {cap} LLM calls reached")
        self.cap = cap


class DailyLlmBudget:
    def __init__(
        self, redis: Redis | None, prefix: str, cap: int, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.cap = cap
        self.clock = clock

    def _key(self, user: str) -> str:
        day = time.strftime("%Y%m%d", time.gmtime(self.clock()))
        return f"{self.prefix}:llm:calls:{day}:{user}"

    async def used(self, user: str) -> int:
        if self.redis is None or self.cap <= 0:
            return 0
        try:
            return int(await self.redis.get(self._key(user)) or 0)
        except (RedisError, OSError, ValueError) as exc:
            log.warning("cannot read the LLM budget (%s); not limiting", exc)
            return 0

    async def take(self, user: str) -> None:
        """Count one call; raise ``DailyCapReached`` when it would exceed the cap. A Redis outage
        does not stop investigations (the cap is for cost, not for safety)."""
        if self.redis is None or self.cap <= 0:
            return
        key = self._key(user)
        try:
            n = int(await self.redis.incr(key))
            if n == 1:
                await self.redis.expire(key, 2 * 86400)
        except (RedisError, OSError) as exc:
            log.warning("cannot count the LLM call (%s); not limiting", exc)
            return
        if n > self.cap:
            raise DailyCapReached(self.cap)
