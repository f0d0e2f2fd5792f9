"""Limits kept in Redis, shared by every gateway replica and entry point.

- ``RateLimiter``: a per-user token bucket (one for questions and posts, one for reads). One Lua
  script reads, refills and takes a token atomically, using the Redis server's clock so replicas
  with skewed clocks agree.
- ``InflightLimiter``: how many questions one user has running at once. Each running question
  holds a slot (a member of a sorted set scored by when it lapses); a replica that dies with
  slots taken leaves them to lapse instead of locking the user out.
- ``LoginThrottle``: refused sign-ins per client address in a fixed window.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import uuid
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_gateway.errors import DependencyUnavailable

log = logging.getLogger(__name__)

__all__ = ["Decision", "InflightLimiter", "LoginThrottle", "RateLimiter", "client_key"]

_UNAVAILABLE = "authorization is unavailable: the rate-limit store (Redis) is not answering; try again shortly"

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
    def __init__(
        self, redis: Redis, key_prefix: str, capacity: int, refill_per_second: float, name: str = "ratelimit"
    ) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self._capacity = capacity
        self._rate = refill_per_second
        self._name = name
        self._script = redis.register_script(_SCRIPT)

    def key(self, user: str) -> str:
        return f"{self._prefix}:{self._name}:{user}"

    async def take(self, user: str, cost: int = 1) -> Decision:
        try:
            allowed, retry, remaining = await self._script(
                keys=[self.key(user)], args=[self._capacity, self._rate, cost]
            )
        except RedisError as exc:
            raise DependencyUnavailable(_UNAVAILABLE) from exc
        retry_after = float(retry)
        if retry_after < 0:
            retry_after = 3600.0
        return Decision(allowed=int(allowed) == 1, retry_after=retry_after, remaining=float(remaining))


_ACQUIRE = """
-- KEYS: the user's slots ; ARGV: limit, slot id, seconds the slot is held at most
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3])) + 1)
return 1
"""

class InflightLimiter:
    """At most ``limit`` questions running per user; a slot lapses after ``hold`` seconds at the latest."""

    def __init__(self, redis: Redis, key_prefix: str, limit: int, hold: float) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self.limit = limit
        self._hold = hold
        self._acquire = redis.register_script(_ACQUIRE)

    def key(self, user: str) -> str:
        return f"{self._prefix}:inflight:{user}"

    async def acquire(self, user: str) -> str | None:
        """A slot id, or ``None`` when the user already has ``limit`` questions running."""
        slot = uuid.uuid4().hex
        if self.limit <= 0:
            return slot
        try:
            taken = await self._acquire(keys=[self.key(user)], args=[self.limit, slot, self._hold])
        except RedisError as exc:
            raise DependencyUnavailable(_UNAVAILABLE) from exc
        return slot if int(taken) == 1 else None

    async def release(self, user: str, slot: str) -> None:
        """Give the slot back (again is harmless). A slot not given back (Redis down) lapses."""
        if self.limit <= 0:
            return
        # Shielded: a request cancelled while it releases (its client went away) still releases.
        await asyncio.shield(self._release(user, slot))

    async def _release(self, user: str, slot: str) -> None:
        try:
            await self._redis.zrem(self.key(user), slot)
        except RedisError as exc:
            log.warning("a question slot was left to lapse: %s", exc, extra={"user": user})


_FAILED = """
-- KEYS: the address's counter ; ARGV: window seconds
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
"""


def client_key(address: str) -> str:
    """What refused sign-ins are counted by: the IPv4 address, or the /64 of an IPv6 address
    (one host easily holds a whole /64)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address or "unknown"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class LoginThrottle:
    """Refused sign-ins per client address: at ``limit`` within ``window`` seconds, stop asking."""

    def __init__(self, redis: Redis, key_prefix: str, limit: int, window: int) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self._limit = limit
        self._window = max(1, window)
        self._failed = redis.register_script(_FAILED)

    def key(self, address: str) -> str:
        return f"{self._prefix}:authfail:{client_key(address)}"

    async def wait(self, address: str) -> float:
        """Seconds until ``address`` may try again; 0 when it may now."""
        if self._limit <= 0:
            return 0.0
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.get(self.key(address))
                pipe.ttl(self.key(address))
                count, ttl = await pipe.execute()
        except RedisError as exc:
            raise DependencyUnavailable(
                "authorization is unavailable: the sign-in throttle (Redis) is not answering; try again shortly"
            ) from exc
        if count is None or int(count) < self._limit:
            return 0.0
        return float(ttl) if ttl and int(ttl) > 0 else float(self._window)

    async def failed(self, address: str) -> None:
        """Count a refused sign-in from ``address`` (best effort: the refusal stands either way)."""
        if self._limit <= 0:
            return
        try:
            await self._failed(keys=[self.key(address)], args=[self._window])
        except RedisError as exc:
            log.warning("a refused sign-in was not counted: %s", exc)
