"""Redis storage of resolved scopes and token reviews.

Keys (``P`` = the bus prefix; user names and tokens are hashed so no key needs escaping and no
token is ever stored):

- ``P:authz:scope:<sha256(user)>:<sha256(sorted groups)>`` → ScopeReply JSON, TTL ``authz.cache_ttl``
- ``P:authz:user:<sha256(user)>`` → set of that user's scope keys (for invalidation), same TTL
- ``P:authz:token:<sha256(token)>`` → ``{"user", "groups"}``, TTL ``authz_cache.token_cache_ttl``

In front of Redis sits a small per-process cache with a short TTL (``_LOCAL_TTL`` seconds at
most): a hot user's lookups cost no Redis round trip. ``invalidate`` reaches every replica (the
invalidate subject is not a queue group), so each drops its own copy too.

Every value carries an HMAC-SHA256 over the Redis key and the value (``v1.<mac>.<json>``), keyed
with a secret only authz-cache replicas hold (``authz_cache.cache_key_env``): a value written by
anyone else — a forged token entry that would log a made-up token in as an admin, or carol's
scope copied under alice's key — fails the check and is ignored (counted as
``cache_errors{op="forged"}``). Without a configured secret each process makes its own (safe;
replicas then do not share cache entries).

Every method fails open on the *cache only*: a Redis error is logged, counted, and reported as a
miss (or a no-op); the caller then resolves from the backends. After an error Redis is skipped for
a few seconds, so an unreachable Redis costs one timeout per window, not one per request.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_authz_cache.backend import TokenIdentity
from sleuth_authz_cache.metrics import Metrics
from sleuth_common.messages import ScopeReply

log = logging.getLogger(__name__)

__all__ = ["ScopeCache", "normalize_groups"]

_BACKOFF_SECONDS = 5.0
_LOCAL_TTL = 2.0
_LOCAL_MAX = 10_000


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def normalize_groups(groups: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Sorted, de-duplicated: the group set the cache is keyed by."""
    return tuple(sorted(set(groups)))


class ScopeCache:
    def __init__(
        self, redis: Redis, *, prefix: str, ttl: float, token_ttl: float, metrics: Metrics, secret: bytes = b""
    ) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self._redis = redis
        self._prefix = prefix
        self._ttl_ms = int(ttl * 1000)
        self._token_ttl_ms = int(token_ttl * 1000)
        self._metrics = metrics
        self._skip_until = 0.0
        self._local_ttl = min(ttl, _LOCAL_TTL)
        self._local: dict[str, tuple[float, ScopeReply]] = {}

    def _seal(self, key: str, value: str) -> str:
        mac = hmac.new(self._secret, f"{key}\n{value}".encode(), hashlib.sha256).hexdigest()
        return f"v1.{mac}.{value}"

    def _open(self, key: str, raw: bytes | str) -> str | None:
        """The value stored under ``key`` when its MAC verifies, else None (and counted)."""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        version, _, rest = text.partition(".")
        mac, _, value = rest.partition(".")
        expected = hmac.new(self._secret, f"{key}\n{value}".encode(), hashlib.sha256).hexdigest()
        if version != "v1" or not hmac.compare_digest(mac, expected):
            self._metrics.cache_errors.labels("forged").inc()
            log.warning("ignoring a cache entry that authz-cache did not write")
            return None
        return value

    def scope_key(self, user: str, groups: tuple[str, ...]) -> str:
        return f"{self._prefix}:authz:scope:{_h(user)}:{_h(chr(10).join(normalize_groups(groups)))}"

    def _user_key(self, user: str) -> str:
        return f"{self._prefix}:authz:user:{_h(user)}"

    def _token_key(self, token: str) -> str:
        return f"{self._prefix}:authz:token:{_h(token)}"

    # -- scopes -------------------------------------------------------------------------------

    async def get_scope(self, key: str) -> ScopeReply | None:
        if self._ttl_ms <= 0:
            return None
        hit = self._local.get(key)
        if hit is not None:
            if hit[0] > time.monotonic():
                return hit[1]
            del self._local[key]
        if self._skipping():
            return None
        try:
            raw = await self._redis.get(key)
        except RedisError as e:
            self._failed("get", e)
            return None
        if raw is None:
            return None
        value = self._open(key, raw)
        if value is None:
            return None
        try:
            reply = ScopeReply.model_validate_json(value)
        except ValueError:
            log.warning("discarding an unreadable cached scope")
            return None
        self._remember(key, reply)
        return reply

    def _remember(self, key: str, reply: ScopeReply) -> None:
        if self._local_ttl <= 0:
            return
        if len(self._local) >= _LOCAL_MAX:
            self._local.clear()
        self._local[key] = (time.monotonic() + self._local_ttl, reply)

    async def put_scope(self, key: str, user: str, reply: ScopeReply) -> None:
        if self._ttl_ms <= 0:
            return
        self._remember(key, reply)
        if self._skipping():
            return
        user_key = self._user_key(user)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.set(key, self._seal(key, reply.model_dump_json()), px=self._ttl_ms)
                pipe.sadd(user_key, key)
                pipe.pexpire(user_key, self._ttl_ms)
                await pipe.execute()
        except RedisError as e:
            self._failed("set", e)

    async def invalidate(self, user: str) -> int:
        """Delete every cached scope of ``user`` (all group sets). Returns how many were cached."""
        mine = self.scope_key(user, ()).rsplit(":", 1)[0] + ":"
        for key in [k for k in self._local if k.startswith(mine)]:
            del self._local[key]
        user_key = self._user_key(user)
        try:
            keys = await self._redis.smembers(user_key)
            await self._redis.delete(user_key, *keys)
        except RedisError as e:
            # Not skipped while backing off: an invalidation is worth one more try.
            self._failed("invalidate", e)
            return 0
        return len(keys)

    # -- tokens -------------------------------------------------------------------------------

    async def get_identity(self, token: str) -> TokenIdentity | None:
        if self._token_ttl_ms <= 0 or self._skipping():
            return None
        key = self._token_key(token)
        try:
            raw = await self._redis.get(key)
        except RedisError as e:
            self._failed("get", e)
            return None
        if raw is None:
            return None
        value = self._open(key, raw)
        if value is None:
            return None
        try:
            doc = json.loads(value)
            return TokenIdentity(True, str(doc["user"]), tuple(doc["groups"]))
        except (ValueError, KeyError, TypeError):
            return None

    async def put_identity(self, token: str, identity: TokenIdentity) -> None:
        if self._token_ttl_ms <= 0 or not identity.authenticated or self._skipping():
            return
        doc = json.dumps({"user": identity.user, "groups": list(identity.groups)})
        try:
            key = self._token_key(token)
            await self._redis.set(key, self._seal(key, doc), px=self._token_ttl_ms)
        except RedisError as e:
            self._failed("set", e)

    # -- failure handling ---------------------------------------------------------------------

    def _skipping(self) -> bool:
        return time.monotonic() < self._skip_until

    def _failed(self, op: str, err: RedisError) -> None:
        self._metrics.cache_errors.labels(op).inc()
        if not self._skipping():
            log.warning("redis %s failed, answering without the cache for %gs: %s", op, _BACKOFF_SECONDS, err)
        self._skip_until = time.monotonic() + _BACKOFF_SECONDS
