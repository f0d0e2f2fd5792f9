"""Per-user token bucket in Redis, shared by every gateway replica and entry point.

One Lua script reads, refills and takes a token atomically, using the Redis server's clock so
replicas with skewed clocks agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_gateway.errors import DependencyUnavailable

__all__ = ["Decision", "RateLimiter"]

_SCRIPT = """
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
end
if now > ts then
  tokens = math.min(capacity, tokens + (now - ts) * rate)
end
local allowed = 0
local retry = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
elseif rate > 0 then
  retry = (cost - tokens) / rate
else
  retry = -1
end
redis.call('HSET', key, 'tokens', tostring(tokens), 'ts', tostring(now))
local ttl = 86400
if rate > 0 then ttl = math.ceil(capacity / rate) + 1 end
redis.call('EXPIRE', key, ttl)
return {allowed, tostring(retry), tostring(tokens)}
"""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: float
    remaining: float


class RateLimiter:
    def __init__(self, redis: Redis, key_prefix: str, capacity: int, refill_per_second: float) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self._capacity = capacity
        self._rate = refill_per_second
        self._script = redis.register_script(_SCRIPT)

    def key(self, user: str) -> str:
        return f"{self._prefix}:ratelimit:{user}"

    async def take(self, user: str, cost: int = 1) -> Decision:
        try:
            allowed, retry, remaining = await self._script(
                keys=[self.key(user)], args=[self._capacity, self._rate, cost]
            )
        except RedisError as exc:
            raise DependencyUnavailable(
                "authorization is unavailable: the rate-limit store (Redis) is not answering; try again shortly"
            ) from exc
        retry_after = float(retry)
        if retry_after < 0:
            retry_after = 3600.0
        return Decision(allowed=int(allowed) == 1, retry_after=retry_after, remaining=float(remaining))
