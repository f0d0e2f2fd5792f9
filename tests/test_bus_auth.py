"""The bus is authenticated and each service may use only its own subjects (DESIGN §1), against a
real nats-server run from the config the embedded stack writes (sleuth.embedded.access).

A test-only ``spy`` user subscribed to ``>`` tells whether a message was delivered at all; a
refusal is also reported to the client that tried ("permissions violation")."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig

from sleuth.cli import main
from sleuth.embedded import NatsServer
from sleuth.embedded.access import (
    AUDIT_USER,
    SERVICES,
    Credentials,
    NatsPermissions,
    nats_authorization,
    nats_permissions,
)
from sleuth.embedded.stack import Stack, StackPorts, StackSpec
from sleuth_common.streams import ensure_streams
from sleuth_common.subjects import Subjects

pytestmark = pytest.mark.connected

S = Subjects("sleuth")
SPY = NatsPermissions(publish=(), subscribe=(">",))


@dataclass
class Bus:
    server: NatsServer
    creds: Credentials

    def options(self, user: str) -> dict[str, Any]:
        return {"servers": [self.server.url], "user": user, "password": self.creds.nats[user],
                "inbox_prefix": f"_INBOX.{user}", "allow_reconnect": False}


@dataclass
class Login:
    nc: Client
    errors: list[Exception]

    async def refusal(self) -> str:
        """The permissions violation the server reported to this client (waits up to 2 s)."""
        for _ in range(100):
            for e in self.errors:
                if "permissions violation" in str(e).lower():
                    return str(e)
            await asyncio.sleep(0.02)
        return ""


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bus]:
    d = tmp_path_factory.mktemp("bus-auth")
    creds = Credentials.generate(["spy"])
    srv = NatsServer(d / "nats", log_path=d / "nats.log",
                     authorization=nats_authorization(creds.nats, "sleuth", {"spy": SPY})).start()
    try:
        yield Bus(srv, creds)
    finally:
        srv.stop()


@pytest.fixture
async def login(bus: Bus) -> AsyncIterator[Any]:
    opened: list[Client] = []

    async def _login(user: str) -> Login:
        errors: list[Exception] = []

        async def on_error(e: Exception) -> None:
            errors.append(e)

        nc = await nats.connect(**bus.options(user), error_cb=on_error)
        opened.append(nc)
        return Login(nc, errors)

    yield _login
    for nc in opened:
        with contextlib.suppress(Exception):
            await nc.close()


@pytest.fixture
async def streams(login: Any) -> None:
    """JOBS and CHAT made by the gateway, ALERTS by the alerts service (as at start-up)."""
    await ensure_streams((await login("gateway")).nc.jetstream(timeout=2), S, "jobs", "chat")
    await ensure_streams((await login("alerts")).nc.jetstream(timeout=2), S, "alerts")


async def _delivered(sub: Any, wait: float) -> bool:
    try:
        await sub.next_msg(timeout=wait)
    except NatsTimeoutError:
        return False
    return True


async def _arrived(receiver: Login, sub: Any) -> bool:
    """Whether anything has reached ``sub`` (a subscription of ``receiver``) of what the server
    handled before now. A round trip on the receiver's connection settles it: the server writes
    a message it delivered to that connection before the PONG answering a later PING, and the
    client queues the message before it reads the PONG. So once the publisher's flush (or the
    refusal it was sent) is back, a delivery has either happened by then or never will."""
    await receiver.nc.flush()
    return sub.pending_msgs > 0


async def _eventually(condition: Any, within: float = 2.0) -> bool:
    for _ in range(int(within / 0.02)):
        if condition():
            return True
        await asyncio.sleep(0.02)
    return bool(condition())


# ------------------------------------------------------------------------------- logging in
async def test_a_client_without_credentials_is_refused(bus: Bus) -> None:
    with pytest.raises(nats.errors.Error, match=r"(?i)authorization"):
        await nats.connect(bus.server.url, allow_reconnect=False)
    with pytest.raises(nats.errors.Error, match=r"(?i)authorization"):
        await nats.connect(bus.server.url, user="gateway", password="guessed", allow_reconnect=False)


# ------------------------------------------------------------------------------- publishing
@dataclass(frozen=True)
class Pub:
    user: str
    subject: str
    allowed: bool
    why: str


PUBLISH = [
    Pub("agent", S.jobs_investigate, False, "an agent cannot make up a job"),
    Pub("authz-cache", S.jobs_investigate, False, "nor can authz-cache"),
    Pub("reporter", S.jobs_investigate, True, "the reporter asks the agent for each report (origin report)"),
    Pub("reporter", S.authz_scope, False, "the agent resolves scope, not the reporter"),
    Pub("scheduler", S.authz_scope, False, "nor the scheduler"),
    Pub("gateway", S.jobs_investigate, True, "chat and API questions"),
    Pub("alerts", S.jobs_investigate, True, "alert investigations"),
    Pub("scheduler", S.jobs_investigate, True, "saved questions"),
    Pub("scheduler", S.reports("run"), True, "scheduled reports"),
    Pub("scheduler", S.reports("status"), False, "the scheduler starts reports, it does not ask about them"),
    Pub("alerts", S.reports("run"), False, "only the gateway and the scheduler ask for reports"),
    Pub("agent", S.chat_outbound, False, "the agent answers the asker, it does not post as the bot"),
    Pub("authz-cache", S.chat_outbound, False, "authz-cache posts nothing"),
    Pub("gateway", S.chat_outbound, False, "the gateway consumes CHAT, nobody asks it to post to itself"),
    Pub(AUDIT_USER, S.chat_outbound, False, "the audit reader writes nothing"),
    Pub("alerts", S.chat_outbound, True, "alert answers"),
    Pub("scheduler", S.chat_outbound, True, "scheduled answers"),
    Pub("reporter", S.chat_outbound, True, "reports"),
    Pub("agent", S.authz_authenticate, False, "only the gateway may ask who a token is"),
    Pub("alerts", S.authz_authenticate, False, "no token oracle for the alerts service"),
    Pub("gateway", S.authz_authenticate, True, "logins"),
    Pub("gateway", S.authz_scope, True, "`access`, `diagnostics` and whoami show the asker's own scope"),
    Pub("agent", S.authz_invalidate, False, "only the gateway's `refresh`"),
    Pub("gateway", S.authz_inventory, False, "every tenant's object names are for the agent's filter only"),
    Pub("alerts", S.authz_inventory, False, "every tenant's object names are for the agent's filter only"),
    Pub("agent", S.authz_inventory, True, "the filter's names index"),
    Pub("gateway", S.jobs_done("j1"), False, "only the agent publishes results"),
    Pub("alerts", S.jobs_done("j1"), False, "only the agent publishes results"),
    Pub("agent", S.jobs_done("j1"), True, "results"),
    Pub("gateway", S.jobs_progress("j1"), False, "only the agent reports progress"),
    Pub("gateway", S.alerts_result("j1"), False, "only the agent answers an alert batch"),
    Pub("agent", S.alerts_result("j1"), True, "an alert batch's answer"),
    Pub("gateway", S.alerts_ingest, False, "only the webhook feeds ALERTS"),
    Pub("agent", S.alerts_channels("on"), False, "only the gateway sends `alerts on`"),
    Pub("agent", "_INBOX.gateway.x.y", False, "nobody writes into another service's replies"),
    Pub("authz-cache", "_INBOX.gateway.x.y", True, "authz-cache answers the gateway"),
    Pub("authz-cache", "_INBOX.audit.x", False, "the audit reader asks authz-cache nothing"),
    Pub(AUDIT_USER, S.audit("x"), False, "the audit reader cannot forge audit events"),
    Pub("agent", S.audit("tool_call"), True, "every service audits"),
    Pub("agent", "other.subject", False, "nothing outside the table"),
    Pub("agent", S.incidents_recorded, True, "incident memory: agents tell each other"),
    Pub("gateway", S.incidents_recorded, False, "nobody else can plant an incident"),
    # `kb` and feedback say who asks: only the gateway, which authenticated them, may ask an agent
    Pub("gateway", S.agent_kb, True, "`kb` for a person the gateway authenticated"),
    Pub("alerts", S.agent_kb, False, "nobody else may add runbooks in someone's name"),
    Pub("scheduler", S.agent_feedback, False, "nobody else may give feedback in someone's name"),
    Pub("gateway", S.agent_feedback, True, "feedback for a person the gateway authenticated"),
    Pub("agent", S.agent_kb_reply("_INBOX.gateway", "r1"), True, "the answer to `kb`, into its own inbox branch"),
    Pub("agent", S.agent_feedback_reply("_INBOX.gateway", "r1"), True, "the answer to feedback, likewise"),
]


@pytest.mark.parametrize("case", PUBLISH, ids=lambda c: f"{c.user}->{c.subject}")
async def test_who_may_publish_what(case: Pub, login: Any) -> None:
    spy = await login("spy")
    sub = await spy.nc.subscribe(case.subject)
    await spy.nc.flush()
    who = await login(case.user)
    await who.nc.publish(case.subject, b"{}")
    await who.nc.flush()
    if case.allowed:
        assert await _delivered(sub, 2.0), case.why
        assert not who.errors
    else:
        assert "publish" in await who.refusal(), case.why
        assert not await _arrived(spy, sub), case.why


# ------------------------------------------------------------------------------ subscribing
@dataclass(frozen=True)
class Sub:
    user: str
    pattern: str
    publisher: str
    subject: str
    allowed: bool
    why: str


SUBSCRIBE = [
    Sub("alerts", f"{S.prefix}.jobs.done.>", "agent", S.jobs_done("j1"), False, "alerts reads its own answers only"),
    Sub("alerts", S.jobs_done_all, "agent", S.jobs_done("j1"), False, "alerts reads its own answers only"),
    Sub("gateway", S.jobs_done_all, "agent", S.jobs_done("j1"), True, "the gateway delivers every answer"),
    Sub("gateway", S.authz_authenticate, "gateway", S.authz_authenticate, False, "only authz-cache answers"),
    Sub("agent", S.authz_scope, "agent", S.authz_scope, False, "only authz-cache answers"),
    Sub("authz-cache", S.authz_authenticate, "gateway", S.authz_authenticate, True, "authz-cache answers"),
    Sub("agent", "_INBOX.gateway.>", "authz-cache", "_INBOX.gateway.a.b", False, "the gateway's replies"),
    Sub("agent", "_INBOX.>", "authz-cache", "_INBOX.gateway.a.b", False, "everyone's replies"),
    Sub("agent", S.jobs_investigate, "gateway", S.jobs_investigate, False, "jobs only through the durable"),
    Sub(AUDIT_USER, f"{S.prefix}.audit.>", "agent", S.audit("job_finished"), True, "what the audit user is for"),
    Sub(AUDIT_USER, S.jobs_done_all, "agent", S.jobs_done("j1"), False, "nothing but audit"),
    Sub("reporter", S.alerts_channels_all, "gateway", S.alerts_channels("on"), False, "alerts' commands"),
    Sub("agent", S.incidents_recorded, "agent", S.incidents_recorded, True, "every agent keeps an incident index"),
    Sub("gateway", S.incidents_recorded, "agent", S.incidents_recorded, False, "incidents name the asker's objects"),
    Sub(AUDIT_USER, f"{S.prefix}.incidents.>", "agent", S.incidents_recorded, False, "not an audit event"),
    Sub("alerts", S.agent_kb, "gateway", S.agent_kb, False, "only agents answer `kb`"),
    Sub("gateway", S.agent_feedback, "gateway", S.agent_feedback, False, "only agents take feedback"),
]


@pytest.mark.parametrize("case", SUBSCRIBE, ids=lambda c: f"{c.user}<-{c.pattern}")
async def test_who_may_subscribe_to_what(case: Sub, login: Any) -> None:
    who = await login(case.user)
    sub = await who.nc.subscribe(case.pattern)
    await who.nc.flush()
    publisher = await login(case.publisher)
    if not case.allowed:
        assert "subscription" in await who.refusal(), case.why
    await publisher.nc.publish(case.subject, b"{}")
    await publisher.nc.flush()
    assert not publisher.errors
    if case.allowed:
        assert await _delivered(sub, 2.0), case.why
    else:
        assert not await _arrived(who, sub), case.why


# --------------------------------------------------------------------------- request/reply
async def _responder(login: Any, user: str, subject: str) -> tuple[Login, list[Msg]]:
    """``user`` answering every request on ``subject``; the list holds the requests it has
    answered (the answer handed to its connection, whether the server lets it through or not)."""
    seen: list[Msg] = []
    resp = await login(user)

    async def answer(msg: Msg) -> None:
        await msg.respond(b'{"ok": true}')
        seen.append(msg)

    await resp.nc.subscribe(subject, cb=answer)
    await resp.nc.flush()
    return resp, seen


async def test_authz_cache_answers_the_gateway_in_its_inbox(login: Any) -> None:
    await _responder(login, "authz-cache", S.authz_authenticate)
    gateway = await login("gateway")
    reply = await gateway.nc.request(S.authz_authenticate, b"{}", timeout=2)
    assert reply.data == b'{"ok": true}'
    assert not gateway.errors


async def test_the_reporter_answers_the_scheduler_in_its_inbox(login: Any) -> None:
    """A scheduled report: the scheduler asks, the reporter answers into the scheduler's inbox."""
    await _responder(login, "reporter", S.reports("run"))
    scheduler = await login("scheduler")
    reply = await scheduler.nc.request(S.reports("run"), b"{}", timeout=2)
    assert reply.data == b'{"ok": true}'
    assert not scheduler.errors


async def test_the_reporter_answers_no_other_services_inbox(login: Any) -> None:
    resp, seen = await _responder(login, "reporter", S.reports("run"))
    spy = await login("spy")
    alerts_inbox = await spy.nc.subscribe("_INBOX.alerts.x")
    await spy.nc.flush()
    gateway = await login("gateway")
    await gateway.nc.publish(S.reports("run"), b"{}", reply="_INBOX.alerts.x")
    await gateway.nc.flush()
    assert "publish" in await resp.refusal()
    assert await _eventually(lambda: len(seen) == 1)
    await resp.nc.flush()
    assert not await _arrived(spy, alerts_inbox)


async def test_a_reply_steered_onto_another_subject_is_refused(login: Any) -> None:
    """A requester picks its reply subject; authz-cache may answer into an inbox only, so a
    request whose reply subject is the bot's outbox (or a job's result) goes nowhere."""
    resp, seen = await _responder(login, "authz-cache", S.authz_authenticate)
    spy = await login("spy")
    outbox = await spy.nc.subscribe(S.chat_outbound)
    result = await spy.nc.subscribe(S.jobs_done("j9"))
    await spy.nc.flush()
    gateway = await login("gateway")
    await gateway.nc.publish(S.authz_authenticate, b"{}", reply=S.chat_outbound)
    await gateway.nc.publish(S.authz_authenticate, b"{}", reply=S.jobs_done("j9"))
    await gateway.nc.flush()
    assert "publish" in await resp.refusal()
    assert await _eventually(lambda: len(seen) == 2)  # the requests arrived; their answers did not leave
    await resp.nc.flush()  # the server has handled both answers
    assert not await _arrived(spy, outbox)
    assert not await _arrived(spy, result)


# -------------------------------------------------------------------------------- JetStream
async def test_only_the_agent_consumes_jobs(login: Any, streams: None) -> None:
    gateway = await login("gateway")
    gjs = gateway.nc.jetstream(timeout=1)
    await gjs.publish(S.jobs_investigate, b'{"job": 1}', stream=S.stream_jobs)

    # The gateway can neither make a consumer of its own on JOBS nor pull from the agent's.
    with pytest.raises(NatsTimeoutError):
        await gjs.pull_subscribe(S.jobs_investigate, durable="sneaky", stream=S.stream_jobs)
    assert "$js.api.consumer" in (await gateway.refusal()).lower()
    gateway.errors.clear()
    with pytest.raises(NatsTimeoutError):
        await gateway.nc.request(f"$JS.API.CONSUMER.MSG.NEXT.{S.stream_jobs}.agent", b'{"batch": 1}', timeout=0.5)
    assert await gateway.refusal()
    gateway.errors.clear()
    # Nor read, purge or delete the stream.
    for api in (f"$JS.API.STREAM.MSG.GET.{S.stream_jobs}", f"$JS.API.STREAM.PURGE.{S.stream_jobs}",
                f"$JS.API.STREAM.DELETE.{S.stream_jobs}", f"$JS.API.DIRECT.GET.{S.stream_jobs}"):
        with pytest.raises(NatsTimeoutError):
            await gateway.nc.request(api, b'{"seq": 1}', timeout=0.3)
        assert await gateway.refusal(), api
        gateway.errors.clear()

    agent = await login("agent")
    ajs = agent.nc.jetstream(timeout=2)
    config = ConsumerConfig(durable_name=S.agent_durable, ack_policy=AckPolicy.EXPLICIT,
                            filter_subject=S.jobs_investigate)
    sub = await ajs.pull_subscribe(S.jobs_investigate, durable=S.agent_durable, stream=S.stream_jobs, config=config)
    msgs = await sub.fetch(1, timeout=2)
    assert msgs[0].data == b'{"job": 1}'
    await msgs[0].ack_sync(timeout=2)
    assert not agent.errors
    assert (await gjs.stream_info(S.stream_jobs)).state.messages == 0  # acked: gone from the work queue


async def test_the_gateway_reads_stream_state_and_changes_nothing(login: Any, streams: None) -> None:
    """`diagnostics`: message and consumer counts of every stream, never a change."""
    gateway = await login("gateway")
    gjs = gateway.nc.jetstream(timeout=1)
    for stream in (S.stream_jobs, S.stream_chat, S.stream_alerts):
        assert (await gjs.stream_info(stream)).config.name == stream
        await gjs.consumers_info(stream)
    assert not gateway.errors
    with pytest.raises(NatsTimeoutError):
        await gjs.purge_stream(S.stream_alerts)
    assert await gateway.refusal()


async def test_a_service_cannot_use_another_services_consumer(login: Any, streams: None) -> None:
    alerts = await login("alerts")
    ajs = alerts.nc.jetstream(timeout=1)
    with pytest.raises(NatsTimeoutError):  # the gateway's CHAT consumer
        await ajs.pull_subscribe(S.chat_outbound, durable="gateway", stream=S.stream_chat)
    assert await alerts.refusal()
    agent = await login("agent")
    with pytest.raises(NatsTimeoutError):  # the agent may not make the ALERTS stream's consumers
        await agent.nc.jetstream(timeout=1).pull_subscribe(
            S.alerts_ingest, durable="alerts-batcher", stream=S.stream_alerts)
    assert await agent.refusal()


# ------------------------------------------------------------------------------- the table
def test_every_service_has_a_user_and_kube_mcp_has_none() -> None:
    perms = nats_permissions("sleuth")
    assert set(perms) == {*SERVICES, AUDIT_USER}
    assert "kube-mcp" not in perms
    for user, p in perms.items():
        assert not any(s in {">", "$JS.API.>", "_INBOX.>"} for s in (*p.publish, *p.subscribe)), user
        own_inboxes = [s for s in p.subscribe if s.startswith("_INBOX.")]
        assert own_inboxes in ([], [f"_INBOX.{user}.>"]), user


def test_a_prefix_moves_every_subject() -> None:
    for user, p in nats_permissions("acme.sl").items():
        for subject in (*p.publish, *p.subscribe):
            assert "sleuth" not in subject.lower(), (user, subject)
            assert subject.startswith(("acme.sl.", "_INBOX.", "$JS.")), (user, subject)


# ------------------------------------------------------------------ the stack and operators
def test_each_service_process_gets_only_its_own_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, demo_snapshot: Path
) -> None:
    from sleuth.embedded.procs import ManagedProcess

    monkeypatch.setattr(ManagedProcess, "start", lambda self: self)
    stack = Stack(StackSpec(snapshot=demo_snapshot, state_dir=tmp_path, ports=StackPorts.free()))
    envs = {name: stack._service(name, f"sleuth_{name}", {"OTHER": "x"}, health=None).env or {}
            for name in ("gateway", "authz-cache", "alerts", "agent-1", "kube-mcp")}
    secrets_of = {u: {stack.credentials.nats[u], stack.credentials.redis[u]} for u in SERVICES}
    for name, env in envs.items():
        user = "agent" if name.startswith("agent") else name
        values = set(env.values())
        for other, secret in secrets_of.items():
            assert (other == user) is bool(values & secret), (name, other)
        assert env["OTHER"] == "x"
    assert envs["gateway"]["SLEUTH_NATS__USER"] == "gateway"
    assert envs["agent-1"]["SLEUTH_REDIS__USERNAME"] == "agent"
    assert not any(k.startswith(("SLEUTH_NATS", "SLEUTH_REDIS")) for k in envs["kube-mcp"])


def test_the_operators_nats_config_reads_passwords_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["access", "nats"]) == 0
    block = capsys.readouterr().out
    assert "password: $SLEUTH_NATS_PASSWORD_GATEWAY" in block and "password: \"" not in block
    srv = NatsServer(tmp_path / "nats", log_path=tmp_path / "nats.log", authorization=block)
    passwords = {f"SLEUTH_NATS_PASSWORD_{u.upper().replace('-', '_')}": f"pw-{u}" for u in (*SERVICES, AUDIT_USER)}
    srv.env = {**passwords, "PATH": os.environ.get("PATH", "")}
    srv.start()
    try:
        async def check() -> None:
            nc = await nats.connect(srv.url, user="gateway", password="pw-gateway", allow_reconnect=False)
            await nc.close()
            with pytest.raises(nats.errors.Error):
                await nats.connect(srv.url, user="gateway", password="pw-agent", allow_reconnect=False)

        asyncio.run(check())
    finally:
        srv.stop()
