"""Cached identities and scopes are believed only when authz-cache wrote them (HMAC over key
and value): anyone else who can write Redis cannot log a made-up token in, or move an admin's
scope under another user's key."""

from __future__ import annotations

import hashlib
import json

import pytest
from redis.asyncio import Redis

from sleuth_authz_cache.backend import TokenIdentity
from sleuth_authz_cache.cache import ScopeCache
from sleuth_authz_cache.metrics import Metrics
from sleuth_common.messages import ClusterScope, ScopeReply

pytestmark = pytest.mark.connected


def cache(redis: Redis, secret: bytes = b"s3cret-shared-by-replicas") -> ScopeCache:
    return ScopeCache(redis, prefix="t", ttl=60, token_ttl=60, metrics=Metrics(), secret=secret)


async def test_a_forged_token_entry_logs_nobody_in(valkey) -> None:
    redis = Redis.from_url(valkey.url)
    try:
        made_up = "totally-made-up-token"
        key = f"t:authz:token:{hashlib.sha256(made_up.encode()).hexdigest()}"
        await redis.set(key, json.dumps({"user": "carol", "groups": ["system:masters"]}))
        assert await cache(redis).get_identity(made_up) is None
        await redis.set(key, "v1." + "0" * 64 + "." + json.dumps({"user": "carol", "groups": ["system:masters"]}))
        assert await cache(redis).get_identity(made_up) is None
        # What authz-cache itself wrote is read back, by any replica holding the secret.
        await cache(redis).put_identity("real-token", TokenIdentity(True, "alice", ("team-a",)))
        got = await cache(redis).get_identity("real-token")
        assert got is not None and got.user == "alice"
        assert await cache(redis, secret=b"another replica's key").get_identity("real-token") is None
    finally:
        await redis.aclose()


async def test_a_scope_moved_under_another_key_is_ignored(valkey) -> None:
    redis = Redis.from_url(valkey.url)
    try:
        c = cache(redis)
        carol_key, alice_key = c.scope_key("carol", ("platform-admins",)), c.scope_key("alice", ("team-a",))
        wide = ScopeReply(user="carol", clusters={"demo": ClusterScope(namespaces=("team-a", "team-b"), cluster_wide=True)})
        await c.put_scope(carol_key, "carol", wide)
        await redis.set(alice_key, await redis.get(carol_key))  # copied byte for byte
        assert await cache(redis).get_scope(alice_key) is None
        assert await cache(redis).get_scope(carol_key) == wide
    finally:
        await redis.aclose()
