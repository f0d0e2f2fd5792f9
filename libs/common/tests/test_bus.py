"""sleuth_common.bus: the error middleware answers every failure of a responder (in memory, with
TestNatsBroker), and the request helper turns each failure of the bus or the responder into the
typed error a caller can act on (against a real nats-server)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import nats
import pytest
from faststream.nats import NatsBroker, NatsRouter, TestNatsBroker
from nats.aio.msg import Msg
from prometheus_client import CollectorRegistry, Counter

from sleuth.embedded import NatsServer
from sleuth_common.bus import (
    BusError,
    PermanentBusError,
    TemporaryBusError,
    error_replies,
    request,
)
from sleuth_common.messages import (
    ERROR_HEADER,
    AuthenticateRequest,
    BusErrorReply,
    ClusterScope,
    ScopeReply,
    ScopeRequest,
)

TOKEN = "sha256~never-in-an-error-reply"
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW5vdC1zaG93bg"


def _responder(url: str = "nats://localhost:4222") -> tuple[NatsBroker, CollectorRegistry]:
    """A responder on ``t.scope``: answers, crashes (``boom``), refuses (``refused``) or says a
    dependency is down (``later``), behind the shared error middleware."""
    registry = CollectorRegistry()
    crashes = Counter("sleuth_handler_crashes", "crashes", ["service", "handler"], registry=registry)
    router = NatsRouter(middlewares=[error_replies(crashes, "tester")])

    @router.subscriber("t.scope", queue="q")
    async def scope(req: ScopeRequest) -> ScopeReply:
        if req.user == "boom":
            raise RuntimeError(f"crash while holding Bearer {JWT}")
        if req.user == "refused":
            raise PermanentBusError("that user name is not allowed here")
        if req.user == "later":
            raise TemporaryBusError("the cache is down")
        if req.user == "bad-model":
            ScopeReply.model_validate({"user": 5})  # the handler's own bug, not the asker's
        return ScopeReply(user=req.user, clusters={"c1": ClusterScope(namespaces=("team-a",))})

    broker = NatsBroker(url)
    broker.include_router(router)
    return broker, registry


def _crashes(registry: CollectorRegistry) -> float:
    return registry.get_sample_value("sleuth_handler_crashes_total", {"service": "tester", "handler": "scope"}) or 0.0


@dataclass(frozen=True)
class Case:
    name: str
    body: object
    error: str | None  # the Sleuth-Error header, None for a reply
    says: str
    crash: bool = False


CASES = [
    Case("answered", ScopeRequest(user="alice"), None, '"alice"'),
    Case("not the model", AuthenticateRequest(token=TOKEN), "permanent", "kind (literal_error), user (missing)"),
    Case("not JSON", b"\x00{" + TOKEN.encode(), "permanent", "malformed request: body (model_type)"),
    Case("refused by the handler", ScopeRequest(user="refused"), "permanent", "that user name is not allowed here"),
    Case("dependency down", ScopeRequest(user="later"), "temporary", "the cache is down"),
    Case("crash", ScopeRequest(user="boom"), "temporary", "failed while answering", crash=True),
    Case("the handler's own model", ScopeRequest(user="bad-model"), "temporary", "failed while answering",
         crash=True),
]


async def test_every_failure_of_a_handler_is_answered_in_memory(caplog: pytest.LogCaptureFixture) -> None:
    broker, registry = _responder()
    caplog.set_level(logging.INFO, logger="sleuth_common.bus")
    async with TestNatsBroker(broker) as br:
        for case in CASES:
            before = _crashes(registry)
            caplog.clear()
            msg = await br.request(case.body, "t.scope", timeout=5)
            assert msg.headers.get(ERROR_HEADER) == case.error, case.name
            assert case.says in msg.body.decode(), case.name
            for secret in (TOKEN, JWT):
                assert secret not in msg.body.decode() and secret not in caplog.text, case.name
            assert _crashes(registry) == before + (1 if case.crash else 0), case.name
            if case.crash:
                err = BusErrorReply.model_validate_json(msg.body)
                assert err.temporary and len(err.ref) == 8
                assert f"ref {err.ref}" in caplog.text and "in scope" in caplog.text, case.name  # the traceback


@pytest.mark.connected
async def test_request_raises_the_typed_error_of_each_failure(nats_server: NatsServer) -> None:
    real, registry = _responder(nats_server.url)
    await real.start()
    nc = await nats.connect(nats_server.url)
    try:
        # A responder that never answers, one that answers garbage.
        async def silent(msg: Msg) -> None:
            pass

        await nc.subscribe("t.silent", cb=silent)

        async def garbage(msg: Msg) -> None:
            await msg.respond(b'{"kind": "something else"}')

        await nc.subscribe("t.garbage", cb=garbage)
        await nc.flush()

        reply = await request(nc, "t.scope", ScopeRequest(user="alice"), ScopeReply, wait=5, service="the tester")
        assert reply.user == "alice"

        with pytest.raises(PermanentBusError) as refused:
            await request(nc, "t.scope", AuthenticateRequest(token=TOKEN), ScopeReply, wait=5, service="the tester")
        assert refused.value.reason == "invalid_request" and TOKEN not in str(refused.value)
        assert str(refused.value).startswith("the tester refused the request: malformed request: ")

        with pytest.raises(TemporaryBusError) as crashed:
            await request(nc, "t.scope", ScopeRequest(user="boom"), ScopeReply, wait=5, service="the tester")
        assert crashed.value.reason == "responder_error" and f"(ref {crashed.value.ref})" in str(crashed.value)
        assert _crashes(registry) == 1

        with pytest.raises(TemporaryBusError, match=r"^the tester is not running$") as nobody:
            await request(nc, "t.nobody", ScopeRequest(user="a"), ScopeReply, wait=5, service="the tester")
        assert nobody.value.reason == "no_responders"

        with pytest.raises(TemporaryBusError, match=r"did not answer within 0\.2s") as slow:
            await request(nc, "t.silent", ScopeRequest(user="a"), ScopeReply, wait=0.2, service="the tester")
        assert slow.value.reason == "timeout"

        with pytest.raises(PermanentBusError, match="sent a malformed reply") as garbled:
            await request(nc, "t.garbage", ScopeRequest(user="a"), ScopeReply, wait=5, service="the tester")
        assert garbled.value.reason == "malformed_reply"
    finally:
        await nc.close()
        await real.stop()

    with pytest.raises(TemporaryBusError) as closed:
        await request(nc, "t.scope", ScopeRequest(user="a"), ScopeReply, wait=5, service="the tester")
    assert closed.value.reason == "disconnected" and isinstance(closed.value, BusError)


@pytest.mark.connected
async def test_a_hedged_request_is_answered_by_the_live_replica_when_the_other_is_frozen(
        nats_server: NatsServer) -> None:
    """Two replicas in a queue group, one frozen (subscribed, never answering — as a SIGSTOPped
    authz-cache): without hedging about half the requests time out; with ``hedge_after`` every one is
    answered, well before ``wait``; and with both frozen the wait is still ``wait``, not twice."""
    import asyncio
    import time

    nc = await nats.connect(nats_server.url)
    frozen_seen = 0
    try:
        async def frozen(msg: Msg) -> None:
            nonlocal frozen_seen
            frozen_seen += 1

        async def live(msg: Msg) -> None:
            await msg.respond(ScopeReply(user=ScopeRequest.model_validate_json(msg.data).user).to_bytes())

        await nc.subscribe("t.hedge", queue="q", cb=frozen)
        await nc.subscribe("t.hedge", queue="q", cb=live)
        await nc.flush()

        async def ask(hedge: float) -> float | None:
            t0 = time.monotonic()
            try:
                reply = await request(nc, "t.hedge", ScopeRequest(user="u"), ScopeReply, wait=1.5,
                                      service="authz-cache", hedge_after=hedge)
            except TemporaryBusError:
                return None
            assert reply.user == "u"
            return time.monotonic() - t0

        plain = await asyncio.gather(*(ask(0) for _ in range(40)))
        assert 5 <= sum(t is None for t in plain) <= 35, "the queue group sends some requests to the frozen one"
        # a copy every 0.1 s (at most 15 within 1.5 s): each request misses the live replica with 2^-15
        hedged = await asyncio.gather(*(ask(0.1) for _ in range(40)))
        assert sum(t is None for t in hedged) <= 1 and all(t < 1.5 for t in hedged if t is not None), hedged
        assert frozen_seen > 10

        await nc.subscribe("t.allfrozen", queue="q", cb=frozen)
        await nc.flush()
        t0 = time.monotonic()
        with pytest.raises(TemporaryBusError, match=r"did not answer within 0\.6s"):
            await request(nc, "t.allfrozen", ScopeRequest(user="u"), ScopeReply, wait=0.6, service="authz-cache",
                          hedge_after=0.2)
        assert time.monotonic() - t0 < 1.0
    finally:
        await nc.close()
