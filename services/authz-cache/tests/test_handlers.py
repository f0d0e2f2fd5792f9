"""authz-cache bus handlers in memory (TestNatsBroker) over a fake backend.

Tests that need the cache run against a real Valkey (``connected``); the others point Redis at a
closed port, which is also how "Redis unavailable" is exercised.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from faststream.nats import TestNatsBroker

from sleuth_authz_cache.app import AuthzCache, build
from sleuth_common.messages import (
    AuthenticateReply,
    AuthenticateRequest,
    InvalidateRequest,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.messages.audit import AuditEvent, ClusterCount, ScopeResolved, parse_audit_event
from sleuth_common.messages.authz import CLUSTER_KINDS
from sleuth_common.messages.errors import BusErrorReply
from sleuth_common.subjects import Subjects


@dataclass
class Bus:
    parts: AuthzCache
    broker: Any
    subjects: Subjects
    audit: list[AuditEvent] = field(default_factory=list)

    async def events(self, kind: str, n: int) -> list[Any]:
        """The first ``n`` audit events of ``kind`` (published in the background), waited for."""
        async with asyncio.timeout(5):
            while len(found := [e for e in self.audit if e.kind == f"audit.{kind}"]) < n:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        return found

    async def scope(self, user: str, groups: tuple[str, ...] = ()) -> ScopeReply:
        msg = await self.broker.request(ScopeRequest(user=user, groups=groups), self.subjects.authz_scope, timeout=5)
        return ScopeReply.model_validate_json(msg.body)

    async def authenticate(self, token: str) -> AuthenticateReply:
        msg = await self.broker.request(AuthenticateRequest(token=token), self.subjects.authz_authenticate, timeout=5)
        return AuthenticateReply.model_validate_json(msg.body)

    async def invalidate(self, user: str) -> None:
        await self.broker.publish(InvalidateRequest(user=user), self.subjects.authz_invalidate)

    def counter(self, name: str, **labels: str) -> float:
        return self.parts.metrics.registry.get_sample_value(name, labels) or 0.0


@asynccontextmanager
async def running(settings, backend) -> AsyncIterator[Bus]:
    parts = build(settings, backend=backend)
    subjects = Subjects(settings.prefix)
    audit: list[AuditEvent] = []

    @parts.broker.subscriber(subjects.audit_all, stream=subjects.stream_audit)  # a reader of the AUDIT stream
    async def on_audit(body: dict[str, Any]) -> None:
        audit.append(parse_audit_event(body))

    try:
        async with TestNatsBroker(parts.broker) as br:
            yield Bus(parts, br, subjects, audit)
    finally:
        await parts.aclose()


# -- without a cache ---------------------------------------------------------------------------

async def test_scope_per_cluster_from_reviews(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        alice = await bus.scope("alice", ("team-a",))
        carol = await bus.scope("carol", ("platform-admins",))
        nobody = await bus.scope("mallory", ("outsiders",))

    assert set(alice.clusters) == {"demo", "prod-1"}
    assert alice.clusters["demo"].namespaces == ("team-a",)
    assert not alice.clusters["demo"].cluster_wide
    assert alice.allowed("demo", "team-a") and not alice.allowed("demo", "team-b")
    assert carol.clusters["demo"].cluster_wide
    assert "team-b" in carol.clusters["demo"].namespaces
    assert nobody.empty and not nobody.errors
    # carol's cluster-scope review passed, so no per-namespace reviews were made for her.
    assert not alice.cached and not carol.cached


async def test_nobody_gets_an_empty_scope_without_reviews(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        reply = await bus.scope("", ())

    assert reply.empty and reply.clusters == {} and not reply.errors
    assert sum(fake_backend.calls.values()) == 0


async def test_a_group_alone_gets_what_membership_grants(settings_factory, fake_backend, dead_redis_url):
    """A channel's ``group:`` member: what anyone in the group may read (reviews for the group)."""
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        admins = await bus.scope("", ("platform-admins",))
        team = await bus.scope("", ("team-a",))

    assert admins.clusters["demo"].cluster_wide
    assert team.clusters["demo"].namespaces == ("team-a",) and not team.clusters["demo"].cluster_wide


async def test_failed_cluster_is_left_out_and_named(settings_factory, fake_backend, dead_redis_url):
    fake_backend.clusters["prod-1"].fail = "timed out after 5s"
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        reply = await bus.scope("alice", ("team-a",))
        assert bus.counter("sleuth_authz_scope_requests_total", outcome="error") == 1
        assert bus.counter("sleuth_authz_reviews_total", cluster="prod-1", outcome="error") == 1

    assert set(reply.clusters) == {"demo"}
    assert reply.errors == {"prod-1": "timed out after 5s"}
    assert not reply.allowed("prod-1", "team-a")


async def test_cluster_without_namespace_list_permission_errors_for_tenants_only(
    settings_factory, fake_backend, dead_redis_url
):
    fake_backend.clusters["demo"].fail_namespace_list = True
    async with running(settings_factory(dead_redis_url, clusters=("demo",)), fake_backend) as bus:
        alice = await bus.scope("alice", ("team-a",))
        carol = await bus.scope("carol", ("platform-admins",))

    assert alice.clusters == {} and "list namespaces" in alice.errors["demo"]
    assert carol.clusters["demo"].cluster_wide and carol.clusters["demo"].namespaces == ()
    assert carol.errors == {}


async def test_audit_events_count_never_name(settings_factory, fake_backend, dead_redis_url):
    """scope_resolved and token_reviewed: who and counts per cluster, never a namespace or a token."""
    fake_backend.clusters["prod-1"].fail = "cannot connect: refused"
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        await bus.scope("alice", ("team-a",))
        fake_backend.clusters["prod-1"].fail = None  # else an unknown token is "unavailable", not refused
        assert (await bus.authenticate("demo-bob-token")).authenticated
        assert not (await bus.authenticate("not-a-token-xyz")).authenticated
        [event] = await bus.events("scope_resolved", 1)
        accepted, refused = await bus.events("token_reviewed", 2)
        assert bus.counter("sleuth_audit_events_total", outcome="published") == 3

    assert isinstance(event, ScopeResolved) and event.service == "authz-cache"
    assert (event.user, event.groups, event.decision, event.reason) == ("alice", ("team-a",), "error",
                                                                        "cluster_unavailable")
    assert event.clusters == (ClusterCount(name="demo", namespaces=1), ClusterCount(name="prod-1", error=True))
    assert event.counts == {"clusters": 1, "namespaces": 1, "errors": 1}
    assert event.cached is False and event.duration_ms >= 0
    assert "team-a\"" not in event.model_dump_json().replace('"groups":["team-a"]', "")
    assert (accepted.decision, accepted.user) == ("allowed", "bob") and "team-b" in accepted.groups
    assert accepted.counts == {"groups": len(accepted.groups)}
    assert (refused.decision, refused.reason, refused.user) == ("refused", "invalid_token", "")
    assert not any("token" in e.model_dump_json().replace("token_reviewed", "").replace("invalid_token", "")
                   for e in bus.audit)


async def test_scope_answers_when_redis_is_down(settings_factory, fake_backend, dead_redis_url):
    # cache_ttl 0.2 s: the per-process front cache holds a scope no longer than that.
    async with running(settings_factory(dead_redis_url, cache_ttl=0.2), fake_backend) as bus:
        first = await bus.scope("alice", ("team-a",))
        second = await bus.scope("alice", ("team-a",))
        await asyncio.sleep(0.3)
        third = await bus.scope("alice", ("team-a",))
        assert bus.counter("sleuth_authz_cache_errors_total", op="get") >= 1

    assert first.clusters["demo"].namespaces == ("team-a",) == second.clusters["demo"].namespaces
    assert third.clusters["demo"].namespaces == ("team-a",)
    assert not first.cached and second.cached and not third.cached
    # Redis down: resolved from the cluster, held only by the short local cache, never widened.
    assert fake_backend.resolutions("demo") == 2


async def test_invalidate_drops_the_local_copy_too(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        await bus.scope("alice", ("team-a",))
        assert (await bus.scope("alice", ("team-a",))).cached
        await bus.invalidate("alice")
        after = await bus.scope("alice", ("team-a",))

    assert not after.cached
    assert fake_backend.resolutions("demo") == 2


async def test_concurrent_misses_collapse_into_one_resolution(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        replies = await asyncio.gather(*(bus.scope("alice", ("team-a", "system:authenticated")) for _ in range(20)))

    assert all(r.clusters["demo"].namespaces == ("team-a",) for r in replies)
    assert fake_backend.resolutions("demo") == 1
    assert fake_backend.resolutions("prod-1") == 1


async def test_different_group_sets_resolve_separately(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        a, b = await asyncio.gather(bus.scope("alice", ("team-a",)), bus.scope("alice", ("team-b",)))

    assert a.clusters["demo"].namespaces == ("team-a",)
    assert b.clusters["demo"].namespaces == ("team-b",)


async def test_namespace_reviews_respect_review_concurrency(settings_factory, fake_backend, dead_redis_url):
    fake_backend.clusters["demo"].namespaces = [f"ns-{i}" for i in range(30)]
    fake_backend.clusters["demo"].readers = {"ns-7": {"team-x"}, "ns-21": {"team-x"}}
    settings = settings_factory(dead_redis_url, clusters=("demo",), review_concurrency=3)
    async with running(settings, fake_backend) as bus:
        reply = await bus.scope("eve", ("team-x",))

    assert reply.clusters["demo"].namespaces == ("ns-21", "ns-7")
    assert fake_backend.calls[("demo", "review_namespace")] == 30
    assert fake_backend.max_active_namespace_reviews == 3


# -- per-kind answers: cluster-scoped kinds and Secrets -----------------------------------------

ALL_KINDS = tuple(CLUSTER_KINDS)


async def test_cluster_kinds_and_secret_namespaces_per_user(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url, clusters=("demo",)), fake_backend) as bus:
        alice = (await bus.scope("alice", ("team-a",))).clusters["demo"]
        bob = (await bus.scope("bob", ("team-b",))).clusters["demo"]
        carol = (await bus.scope("carol", ("platform-admins",))).clusters["demo"]
        nobody = (await bus.scope("mallory", ("outsiders",))).clusters["demo"]

    assert (alice.cluster_kinds, alice.secret_namespaces) == (("storageclasses",), ("team-a",))
    assert (bob.cluster_kinds, bob.secret_namespaces) == (("storageclasses",), ())
    assert carol.cluster_wide and carol.cluster_kinds == ALL_KINDS and carol.secret_namespaces == carol.namespaces
    assert (nobody.cluster_kinds, nobody.secret_namespaces) == ((), ())
    calls = fake_backend.calls
    # carol: one `list */*` and one cluster-scope `get secrets` instead of a review per kind and namespace
    assert calls[("demo", "list */*")] == 1 and calls[("demo", "get /secrets")] == 1
    assert calls[("demo", "list /nodes")] == 3  # alice, bob, mallory: one review per kind each
    assert calls[("demo", "get /secrets ns")] == 2  # alice's and bob's one namespace each; none for mallory


async def test_cluster_wide_without_wildcards_is_reviewed_per_kind_and_namespace(
    settings_factory, fake_backend, dead_redis_url
):
    demo = fake_backend.clusters["demo"]
    demo.cluster_readers = {"sre"}
    demo.kind_readers = {"nodes": {"sre"}, "storageclasses": {"sre"}, "persistentvolumes": {"sre"}}
    demo.secret_readers = {"monitoring": {"sre"}}
    async with running(settings_factory(dead_redis_url, clusters=("demo",)), fake_backend) as bus:
        sre = (await bus.scope("dana", ("sre",))).clusters["demo"]

    assert sre.cluster_wide and sre.namespaces == tuple(sorted(demo.namespaces))
    assert sre.cluster_kinds == ("nodes", "persistentvolumes", "storageclasses")  # CLUSTER_KINDS order
    assert sre.secret_namespaces == ("monitoring",)
    assert fake_backend.calls[("demo", "list */*")] == 1
    assert fake_backend.calls[("demo", "get /secrets")] == 1
    assert fake_backend.calls[("demo", "get /secrets ns")] == len(demo.namespaces)


async def test_a_failed_kind_review_fails_the_cluster_and_is_not_cached(settings_factory, fake_backend, dead_redis_url):
    fake_backend.clusters["prod-1"].fail_review = "list storage.k8s.io/csidrivers"
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        broken = await bus.scope("alice", ("team-a",))
        fake_backend.clusters["prod-1"].fail_review = None
        healed = await bus.scope("alice", ("team-a",))

    assert set(broken.clusters) == {"demo"} and "csidrivers" in broken.errors["prod-1"]
    assert broken.clusters["demo"].cluster_kinds == ("storageclasses",)
    assert not healed.cached and healed.clusters["prod-1"].secret_namespaces == ("team-a",)


async def test_all_reviews_of_a_resolution_share_review_concurrency(settings_factory, fake_backend, dead_redis_url):
    fake_backend.clusters["demo"].namespaces = [f"ns-{i}" for i in range(20)]
    fake_backend.clusters["demo"].readers = {f"ns-{i}": {"team-x"} for i in range(20)}
    fake_backend.clusters["demo"].secret_readers = {"ns-3": {"team-x"}}
    settings = settings_factory(dead_redis_url, clusters=("demo",), review_concurrency=4)
    async with running(settings, fake_backend) as bus:
        reply = await bus.scope("eve", ("team-x",))

    assert len(reply.clusters["demo"].namespaces) == 20 and reply.clusters["demo"].secret_namespaces == ("ns-3",)
    assert fake_backend.max_active_reviews == 4


# -- authenticate ------------------------------------------------------------------------------

async def test_authenticate_known_token(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        alice = await bus.authenticate("demo-alice-token")
        bob = await bus.authenticate("demo-bob-token")

    assert alice.authenticated and alice.user == "alice" and alice.error == ""
    assert alice.groups == ("team-a", "system:authenticated")
    # A review that left out system:authenticated gets it, as Kubernetes would have added it.
    assert bob.groups == ("team-b", "system:authenticated")


async def test_an_authenticated_reply_carries_a_fresh_signed_identity_for_the_agent(
    settings_factory, fake_backend, dead_redis_url, monkeypatch
):
    from sleuth_common.identity import IdentityVerifier, generate_keypair, load_public_key

    private, public = generate_keypair()
    monkeypatch.setenv("T_AUTHZ_KEY", private.decode())
    base = settings_factory(dead_redis_url)
    settings = base.model_copy(update={"identity": base.identity.model_copy(update={"signing_key_env": "T_AUTHZ_KEY"})})
    async with running(settings, fake_backend) as bus:
        first = await bus.authenticate("demo-alice-token")
        second = await bus.authenticate("demo-alice-token")
        refused = await bus.authenticate("not-a-token")

    verifier = IdentityVerifier(issuer_keys={"sleuth-authz": [load_public_key(public)]}, audience="sleuth-agent")
    who = verifier.verify(first.assertion)
    assert (who.user, who.groups, who.issuer) == ("alice", ("team-a", "system:authenticated"), "sleuth-authz")
    assert second.assertion and second.assertion != first.assertion  # one per reply (one per job)
    assert refused.assertion == ""
    assert "assertion" not in repr(first)


async def test_authenticate_bad_token(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        reply = await bus.authenticate("not-a-token")
        empty = await bus.authenticate("")

    assert not reply.authenticated and reply.user == "" and reply.error == "invalid token"
    assert not empty.authenticated and empty.error == "invalid token"


async def test_authenticate_tries_clusters_in_turn(settings_factory, fake_backend, dead_redis_url):
    fake_backend.clusters["demo"].tokens = {}
    fake_backend.clusters["prod-1"].tokens = {"prod-token": ("dave", ("sre",))}
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        reply = await bus.authenticate("prod-token")

    assert reply.authenticated and reply.user == "dave"


async def test_authenticate_unavailable_when_no_cluster_answers(settings_factory, fake_backend, dead_redis_url):
    for c in fake_backend.clusters.values():
        c.fail = "cannot connect: refused"
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        reply = await bus.authenticate("demo-alice-token")

    assert not reply.authenticated and reply.unavailable
    assert reply.error.startswith("authorization is unavailable: ")
    assert "demo" in reply.error and "prod-1" in reply.error


async def test_authenticate_unavailable_when_a_silent_cluster_might_know_the_token(
    settings_factory, fake_backend, dead_redis_url
):
    fake_backend.clusters["prod-1"].fail = "timed out after 5s"
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        unknown = await bus.authenticate("not-a-token")
        known = await bus.authenticate("demo-alice-token")

    assert unknown.error.startswith("authorization is unavailable: ") and unknown.unavailable
    assert known.authenticated and not known.unavailable  # the first cluster knew it; the silent one was never asked


async def test_no_clusters_configured(settings_factory, fake_backend, dead_redis_url):
    async with running(settings_factory(dead_redis_url, clusters=()), fake_backend) as bus:
        auth = await bus.authenticate("demo-alice-token")
        scope = await bus.scope("alice", ("team-a",))

    assert auth.error.startswith("authorization is unavailable")
    assert scope.empty and scope.clusters == {}


# -- with a real Valkey --------------------------------------------------------------------------

@pytest.mark.connected
async def test_cache_hit_then_miss_after_ttl(settings_factory, fake_backend, valkey):
    async with running(settings_factory(valkey.url, cache_ttl=0.4), fake_backend) as bus:
        first = await bus.scope("alice", ("team-a", "system:authenticated"))
        second = await bus.scope("alice", ("system:authenticated", "team-a", "team-a"))  # same set
        assert bus.counter("sleuth_authz_scope_requests_total", outcome="hit") == 1
        await asyncio.sleep(0.6)
        third = await bus.scope("alice", ("team-a", "system:authenticated"))
        audit = await bus.events("scope_resolved", 3)

    assert not first.cached and second.cached and not third.cached
    assert second.clusters == first.clusters and second.user == "alice"
    assert fake_backend.resolutions("demo") == 2
    assert [e.cached for e in audit] == [False, True, False]


@pytest.mark.connected
async def test_errors_are_never_cached(settings_factory, fake_backend, valkey):
    fake_backend.clusters["prod-1"].fail = "HTTP 503: unavailable"
    async with running(settings_factory(valkey.url), fake_backend) as bus:
        broken = await bus.scope("alice", ("team-a",))
        fake_backend.clusters["prod-1"].fail = None
        healed = await bus.scope("alice", ("team-a",))
        cached = await bus.scope("alice", ("team-a",))

    assert broken.errors and not broken.cached
    assert not healed.errors and not healed.cached and healed.clusters["prod-1"].namespaces == ("team-a",)
    assert cached.cached and cached.clusters == healed.clusters


@pytest.mark.connected
async def test_invalidate_drops_every_group_set_of_the_user(settings_factory, fake_backend, valkey):
    async with running(settings_factory(valkey.url, clusters=("demo",)), fake_backend) as bus:
        await bus.scope("alice", ("team-a",))
        await bus.scope("alice", ("team-a", "team-b"))
        await bus.scope("bob", ("team-b",))
        assert (await bus.scope("alice", ("team-a",))).cached

        # the refresh: alice lost team-a in the cluster meanwhile
        fake_backend.clusters["demo"].readers["team-a"] = set()
        await bus.invalidate("alice")

        a1 = await bus.scope("alice", ("team-a",))
        a2 = await bus.scope("alice", ("team-a", "team-b"))
        b = await bus.scope("bob", ("team-b",))

    assert not a1.cached and a1.clusters["demo"].namespaces == ()
    assert not a2.cached and a2.clusters["demo"].namespaces == ("team-b",)
    assert b.cached  # other users keep their cache


@pytest.mark.connected
async def test_invalidate_during_resolution_keeps_the_stale_result_out(settings_factory, fake_backend, valkey):
    fake_backend.delay = 0.2
    async with running(settings_factory(valkey.url, clusters=("demo",)), fake_backend) as bus:
        pending = asyncio.create_task(bus.scope("alice", ("team-a",)))
        await asyncio.sleep(0.05)
        await bus.invalidate("alice")
        await pending
        after = await bus.scope("alice", ("team-a",))

    assert not after.cached
    assert fake_backend.resolutions("demo") == 2


@pytest.mark.connected
async def test_successful_token_reviews_are_cached_by_hash(settings_factory, fake_backend, valkey):
    import redis.asyncio as aioredis

    async with running(settings_factory(valkey.url), fake_backend) as bus:
        one = await bus.authenticate("demo-alice-token")
        two = await bus.authenticate("demo-alice-token")
        bad1 = await bus.authenticate("nope")
        bad2 = await bus.authenticate("nope")

    assert one == two and one.authenticated
    assert fake_backend.calls[("demo", "token_review")] == 1 + 2  # alice once; the bad token twice
    assert not bad1.authenticated and not bad2.authenticated
    client = aioredis.Redis.from_url(valkey.url)
    try:
        keys = [k.decode() async for k in client.scan_iter("*")]
        values = [await client.get(k) for k in keys if ":token:" in k]
    finally:
        await client.aclose()
    assert any(":token:" in k for k in keys)
    assert not any("demo-alice-token" in k for k in keys)
    assert all(b"demo-alice-token" not in (v or b"") for v in values)


# -- failures are answered (sleuth_common.bus) -------------------------------------------------

async def test_a_malformed_request_or_a_crash_is_answered_never_a_timeout(
    settings_factory, fake_backend, dead_redis_url, monkeypatch, caplog
):
    token = "sha256~a-token-that-must-not-travel-back"
    async with running(settings_factory(dead_redis_url), fake_backend) as bus:
        refused = await bus.broker.request({"kind": "authz.authenticate.request", "token": [token]},
                                           bus.subjects.authz_authenticate, timeout=5)
        assert refused.headers["Sleuth-Error"] == "permanent" and token not in refused.body.decode()

        async def broken(user: str, groups: tuple[str, ...]) -> Any:
            raise RuntimeError("a bug")

        monkeypatch.setattr(bus.parts.service, "scope", broken)
        crashed = await bus.broker.request(ScopeRequest(user="alice"), bus.subjects.authz_scope, timeout=5)
        err = BusErrorReply.model_validate_json(crashed.body)
        assert crashed.headers["Sleuth-Error"] == "temporary" and err.temporary and err.ref in caplog.text
        assert bus.counter("sleuth_handler_crashes_total", service="authz-cache", handler="scope") == 1
    assert token not in caplog.text
