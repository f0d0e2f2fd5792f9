"""Redis (Valkey) with one ACL user per service (sleuth.embedded.access), against a real Valkey
started with the ACL file the embedded stack writes: the ``default`` user is off, each service
reaches only its own keys and data commands, and at the memory cap writes fail instead of keys
being evicted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError

from sleuth.embedded import ValkeyServer
from sleuth.embedded.access import SERVICES, Credentials, redis_acl, redis_acl_file
from sleuth_agent.llm._budget import DailyLlmBudget
from sleuth_alerts.store import Store
from sleuth_authz_cache.backend import TokenIdentity
from sleuth_authz_cache.cache import ScopeCache
from sleuth_authz_cache.metrics import Metrics
from sleuth_common.messages.jobs import AlertRef
from sleuth_gateway.channels import ChannelStore
from sleuth_gateway.conversation import ConversationStore
from sleuth_gateway.ratelimit import InflightLimiter, LoginThrottle, RateLimiter

pytestmark = pytest.mark.connected

P = "sleuth"


@dataclass
class Acl:
    server: ValkeyServer
    creds: Credentials


@pytest.fixture(scope="module")
def acl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acl]:
    d = tmp_path_factory.mktemp("redis-acl")
    creds = Credentials.generate()
    srv = ValkeyServer(d / "valkey", log_path=d / "valkey.log", acl=redis_acl_file(creds.redis, P)).start()
    try:
        yield Acl(srv, creds)
    finally:
        srv.stop()


@pytest.fixture
async def as_user(acl: Acl) -> AsyncIterator[Any]:
    opened: list[Redis] = []

    def _client(user: str) -> Redis:
        r = Redis(host=acl.server.host, port=acl.server.port, username=user, password=acl.creds.redis[user],
                  decode_responses=True)
        opened.append(r)
        return r

    yield _client
    for r in opened:
        await r.aclose()


def _login(acl: Acl, username: str | None = None, password: str | None = None) -> Redis:
    """A client that asks once: redis-py counts a refused login as a connection error and by
    default retries it three times with backoff (about 3 s), which changes nothing about the
    server's answer."""
    return Redis(host=acl.server.host, port=acl.server.port, username=username, password=password,
                 retry=Retry(NoBackoff(), 0))


async def test_the_default_user_is_off(acl: Acl) -> None:
    anonymous = _login(acl)
    try:
        with pytest.raises(AuthenticationError):
            await anonymous.ping()
    finally:
        await anonymous.aclose()
    guess = _login(acl, username="default", password="")
    try:
        with pytest.raises((AuthenticationError, ResponseError)):
            await guess.ping()
    finally:
        await guess.aclose()
    wrong = _login(acl, username="gateway", password=acl.creds.redis["agent"])
    try:
        with pytest.raises(AuthenticationError):
            await wrong.ping()
    finally:
        await wrong.aclose()


@dataclass(frozen=True)
class Touch:
    user: str
    key: str
    why: str


FOREIGN = [
    Touch("gateway", f"{P}:authz:token:0123abcd", "a forged token-cache entry would log a made-up token in"),
    Touch("agent", f"{P}:authz:scope:u:g", "a forged scope would widen what a user sees"),
    Touch("alerts", f"{P}:authz:user:u", "scope index"),
    Touch("authz-cache", f"{P}:gateway:conversation:alice", "someone's conversation"),
    Touch("alerts", f"{P}:gateway:ratelimit:alice", "someone's rate limit"),
    Touch("gateway", f"{P}:agent:answered:j1", "an answered-mark: a job would be answered twice or never"),
    Touch("gateway", f"{P}:llm:calls:20260101:alice", "someone's AI budget"),
    Touch("agent", f"{P}:alerts:mark:team-a-alerts", "who investigates a channel's alerts"),
    Touch("reporter", f"{P}:scheduler:lock", "the scheduler lock"),
    Touch("scheduler", f"{P}:reporter:last", "report state"),
    Touch("gateway", "other:key", "keys outside Sleuth"),
]


@pytest.mark.parametrize("case", FOREIGN, ids=lambda c: f"{c.user}->{c.key}")
async def test_a_service_cannot_touch_another_services_keys(case: Touch, as_user: Any) -> None:
    r = as_user(case.user)
    with pytest.raises(NoPermissionError):
        await r.set(case.key, "forged")
    with pytest.raises(NoPermissionError):
        await r.get(case.key)
    with pytest.raises(ResponseError, match="No permissions"):  # scripts are checked call by call
        await r.eval("return redis.call('SET', KEYS[1], 'forged')", 1, case.key)
    with pytest.raises(ResponseError, match="No permissions"):  # … even on a key it does not declare
        await r.eval(f"return redis.call('GET', '{case.key}')", 0)


async def test_each_service_reaches_its_own_keys(as_user: Any) -> None:
    for user, rule in redis_acl(P).items():
        r = as_user(user)
        for pattern in rule.keys:
            key = pattern.replace("*", "probe")
            assert await r.set(key, "1", px=5000), (user, key)
            assert await r.get(key) == "1"


@pytest.mark.parametrize("command", [
    ("FLUSHALL",), ("FLUSHDB",), ("KEYS", "*"), ("CONFIG", "SET", "maxmemory", "0"), ("CONFIG", "GET", "*"),
    ("ACL", "LIST"), ("MONITOR",), ("SCAN", "0"), ("PUBLISH", "x", "y"), ("SHUTDOWN",),
    ("FUNCTION", "FLUSH"), ("FUNCTION", "LOAD", "#!lua name=x\nserver.register_function('f', function() return 1 end)"),
    ("SCRIPT", "FLUSH"), ("CLIENT", "KILL", "ID", "1"), ("INFO",), ("SWAPDB", "0", "1"),
], ids=lambda c: " ".join(c[:2]))
async def test_server_wide_commands_are_refused(command: tuple[str, ...], as_user: Any) -> None:
    for user in ("gateway", "authz-cache", "agent"):
        with pytest.raises(NoPermissionError):
            await as_user(user).execute_command(*command)


async def test_only_alerts_may_scan_and_only_its_own_keys_come_back(as_user: Any) -> None:
    await as_user("gateway").set(f"{P}:gateway:conversation:x", "1", px=5000)
    alerts = as_user("alerts")
    await alerts.set(f"{P}:alerts:cool:t:f1", "1", px=5000)
    found = [k async for k in alerts.scan_iter(match=f"{P}:alerts:*")]
    assert f"{P}:alerts:cool:t:f1" in found
    with pytest.raises(NoPermissionError):
        await as_user("gateway").scan(0)


# The services' own stores, each logged in as its service: the ACL lets them do their work.
async def test_gateway_stores_work_as_the_gateway(as_user: Any) -> None:
    r = as_user("gateway")
    prefix = f"{P}:gateway"
    assert (await RateLimiter(r, prefix, 5, 1.0).take("alice")).allowed
    inflight = InflightLimiter(r, prefix, 1, 30.0)
    slot = await inflight.acquire("alice")
    assert slot is not None and await inflight.acquire("alice") is None
    await inflight.release("alice", slot)
    throttle = LoginThrottle(r, prefix, 1, 60)
    await throttle.failed("10.0.0.1")
    assert await throttle.wait("10.0.0.1") > 0
    channels = ChannelStore(r, prefix, 10)
    assert await channels.append("team-a-alerts", {"id": "p1", "text": "hi"})
    assert [m["id"] for m in await channels.messages("team-a-alerts")] == ["p1"]
    conversations = ConversationStore(r, prefix, 60, 10)
    await conversations.append("alice", {"role": "user", "content": "hi"})
    assert len(await conversations.messages("alice")) == 1
    await conversations.clear("alice")


async def test_authz_cache_works_as_authz_cache(as_user: Any) -> None:
    cache = ScopeCache(as_user("authz-cache"), prefix=P, ttl=30, token_ttl=30, metrics=Metrics())
    await cache.put_identity("tok", TokenIdentity(True, "alice", ("team-a",)))
    assert await cache.get_identity("tok") == TokenIdentity(True, "alice", ("team-a",))
    await cache.invalidate("alice")


async def test_agent_works_as_the_agent(as_user: Any) -> None:
    r = as_user("agent")
    budget = DailyLlmBudget(r, P, 10)
    await budget.take("alice")
    assert await budget.used("alice") == 1
    assert await r.set(f"{P}:agent:answered:j1", "1", nx=True, ex=60)
    assert await r.exists(f"{P}:agent:answered:j1")


async def test_alerts_store_works_as_alerts(as_user: Any) -> None:
    store = Store(as_user("alerts"), P)
    alert = AlertRef(labels={"alertname": "KubePodCrashLooping"}, fingerprint="f1")
    assert await store.add("team-a-alerts", "demo", alert, now=100.0, window=1.0, cooldown=60.0) == "queued"
    window = (await store.due_windows(200.0))[0]
    batch_id = await store.close(window, 200.0)
    assert batch_id and (await store.batch(batch_id)) is not None
    await store.mark("team-a-alerts", "alice", ("team-a",), 100.0)
    assert (await store.get_mark("team-a-alerts")) is not None
    assert await store.cooling("team-a-alerts") == 1


# ---------------------------------------------------------------------------- the memory cap
async def test_at_the_memory_cap_writes_fail_and_nothing_is_evicted(tmp_path: Path) -> None:
    """noeviction: an answered-mark (a key with a TTL) survives a full Redis; the write that does
    not fit is refused with an error the service reports."""
    creds = Credentials.generate()
    srv = ValkeyServer(tmp_path / "valkey", log_path=tmp_path / "valkey.log", acl=redis_acl_file(creds.redis, P),
                       maxmemory="4mb", maxmemory_policy="noeviction").start()
    agent = Redis(host=srv.host, port=srv.port, username="agent", password=creds.redis["agent"])
    try:
        await agent.set(f"{P}:agent:answered:j1", "1", ex=3600)
        blob = b"x" * 256 * 1024
        with pytest.raises(ResponseError, match="maxmemory"):
            for i in range(64):  # 16 MiB, four times the cap
                await agent.set(f"{P}:agent:filler:{i}", blob, ex=3600)
        assert await agent.get(f"{P}:agent:answered:j1") == b"1"
        assert await agent.exists(f"{P}:agent:filler:0")
    finally:
        await agent.aclose()
        srv.stop()


def test_every_service_has_a_redis_user_with_its_own_prefix() -> None:
    rules = redis_acl(P)
    assert set(rules) == set(SERVICES)
    owned = [pattern for rule in rules.values() for pattern in rule.keys]
    assert len(owned) == len(set(owned))  # no key pattern shared between two services
    assert all(p.startswith(f"{P}:") and p.endswith(":*") for p in owned)
    assert all("~*" not in rule.commands and "+@all" not in rule.commands for rule in rules.values())
