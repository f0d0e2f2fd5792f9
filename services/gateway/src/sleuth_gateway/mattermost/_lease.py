"""A lease in Redis: one gateway replica at a time holds it (and listens to Mattermost).

The holder renews it every third of its TTL; a holder that dies stops renewing and another
replica takes it within ``ttl`` seconds; a holder that stops gives it back at once.
"""

from __future__ import annotations

import uuid

from redis.asyncio import Redis

__all__ = ["Lease"]

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class Lease:
    def __init__(self, redis: Redis, key: str, ttl: float, holder: str = "") -> None:
        self.key = key
        self.ttl = ttl
        self.holder = holder or uuid.uuid4().hex
        self._redis = redis
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)

    @property
    def _ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    async def acquire(self) -> bool:
        """Take the lease if nobody holds it (or this holder already does)."""
        if await self._redis.set(self.key, self.holder, nx=True, px=self._ms):
            return True
        return await self.renew()

    async def renew(self) -> bool:
        """Extend the lease; False when it is no longer this holder's."""
        return bool(await self._renew(keys=[self.key], args=[self.holder, self._ms]))

    async def release(self) -> None:
        await self._release(keys=[self.key], args=[self.holder])

    async def current(self) -> str | None:
        value = await self._redis.get(self.key)
        return value.decode() if isinstance(value, bytes) else value
