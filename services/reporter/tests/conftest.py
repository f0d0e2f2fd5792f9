"""The reporter in-process against real nats-server and Valkey and a real SMTP server (aiosmtpd),
with the rest of the bus played here: a fake agent that checks each report job's signed identity
and answers with a report, and a reader of the CHAT stream standing in for the gateway."""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from aiosmtpd.controller import Controller
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_common.config import IdentitySettings
from sleuth_common.identity import Identity, IdentityVerifier, generate_keypair, job_verifier_from_settings
from sleuth_common.messages import (
    SEVERITIES,
    ChatPost,
    Finding,
    InvestigationJob,
    InvestigationResult,
    ReportReply,
    ReportRequest,
    ReportResult,
    Requester,
)
from sleuth_common.streams import ensure_streams
from sleuth_common.subjects import Subjects
from sleuth_reporter import Reporter, Settings, build

SUBJECTS = Subjects("sleuth")
ALICE = Requester(user="alice", groups=("team-a",))
CAROL = Requester(user="carol", groups=("platform-admins",))
TEAM_A = Requester(user="", groups=("team-a",))
CHANNEL = "web:team-a-alerts"
ADDRESSES = ["team-a@example.com", "lead@example.com"]


# -- a real SMTP server ---------------------------------------------------------------------------
class Mailbox:
    """aiosmtpd's handler: keeps every message; ``refuse`` answers that many DATA commands with
    ``refusal`` (a temporary failure, 451, unless set otherwise) first."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.envelopes: list[list[str]] = []
        self.refuse = 0
        self.refusal = "451 4.3.0 try again later"
        self.tries = 0
        self.arrived = asyncio.Event()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.tries += 1
        if self.refuse > 0:
            self.refuse -= 1
            return self.refusal
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(msg, EmailMessage)
        self.messages.append(msg)
        self.envelopes.append(list(envelope.rcpt_tos))
        return "250 OK"


@dataclass
class Smtp:
    port: int
    box: Mailbox
    controller: Controller | None = None

    def start(self) -> None:
        self.controller = Controller(self.box, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None


@pytest.fixture
def smtp() -> Iterator[Smtp]:
    server = Smtp(free_port(), Mailbox())
    server.start()
    try:
        yield server
    finally:
        server.stop()


# -- the rest of the bus --------------------------------------------------------------------------
def findings(n: int, namespace: str = "team-a") -> tuple[Finding, ...]:
    out = []
    for i in range(n):
        sev = SEVERITIES[i % len(SEVERITIES)]
        out.append(Finding(rule=f"rule_{i % 3}", severity=sev, cluster="demo", namespace=namespace, kind="Deployment",
                           name=f"app-{i}", why=f"app-{i} has problem {i}.", fix=f"kubectl scale deploy/app-{i} -n "
                           f"{namespace} --replicas=2"))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return tuple(sorted(out, key=lambda f: order[f.severity]))


def report_result(user: str, n: int = 14) -> ReportResult:
    fs = findings(n)
    return ReportResult(
        user=user, clusters=("demo",), namespaces={"demo": ("team-a",)}, rules=("rule_0", "rule_1", "rule_2"),
        findings=fs, counts={s: sum(1 for f in fs if f.severity == s) for s in SEVERITIES},
        answer_markdown=f"**Best-practice report** for {user}: {n} finding(s).", shown=min(12, n),
    )


def answer(job: InvestigationJob, report: ReportResult) -> InvestigationResult:
    return InvestigationResult(job_id=job.id, user=job.requester.user,
                               status="diagnosed" if report.findings else "healthy",
                               answer_markdown=report.answer_markdown, report=report)


Behaviour = Callable[[InvestigationJob], Awaitable[InvestigationResult | None]]


async def default_behaviour(job: InvestigationJob) -> InvestigationResult | None:
    return answer(job, report_result(job.requester.user))


@dataclass
class Bus:
    """A fake agent (durable ``agent`` on JOBS) that verifies each job's assertion as the real
    one does (issuer ``sleuth-reporter``), and a CHAT reader (durable ``gateway``)."""

    nc: NatsClient
    verifier: IdentityVerifier
    behaviour: Behaviour = default_behaviour
    jobs: list[InvestigationJob] = field(default_factory=list)
    identities: list[Identity] = field(default_factory=list)
    posts: list[ChatPost] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self, *, agent: bool = True) -> Bus:
        """``agent=False``: read CHAT only (a real agent takes the jobs)."""
        js = self.nc.jetstream()
        await ensure_streams(js, SUBJECTS, "jobs", "chat")
        chat = await js.pull_subscribe(SUBJECTS.chat_outbound, durable="gateway", stream=SUBJECTS.stream_chat)
        self._tasks = [asyncio.create_task(self._pull(chat, self._post))]
        if agent:
            jobs = await js.pull_subscribe(SUBJECTS.jobs_investigate, durable="agent", stream=SUBJECTS.stream_jobs)
            self._tasks.append(asyncio.create_task(self._pull(jobs, self._job)))
        return self

    async def stop(self) -> None:
        self._stopping.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(t, 5)

    async def _pull(self, sub: Any, handle: Callable[[Msg], Awaitable[None]]) -> None:
        while not self._stopping.is_set():
            try:
                msgs = await sub.fetch(10, timeout=0.3)
            except TimeoutError:
                continue
            for msg in msgs:
                await msg.ack()
                await handle(msg)

    async def _job(self, msg: Msg) -> None:
        job = InvestigationJob.model_validate_json(msg.data)
        self.jobs.append(job)
        self.identities.append(self.verifier.verify(job.identity))
        self._changed.set()

        async def reply() -> None:
            result = await self.behaviour(job)
            if result is not None:
                await self.nc.publish(job.reply_subject, result.to_bytes())

        self._tasks.append(asyncio.create_task(reply()))

    async def _post(self, msg: Msg) -> None:
        self.posts.append(ChatPost.model_validate_json(msg.data))
        self._changed.set()

    async def until(self, check: Callable[[], object], within: float = 10.0) -> None:
        """Until ``check()`` holds (looked at on every post and job, and every 50 ms for what
        arrives elsewhere: mail, metrics)."""
        async with asyncio.timeout(within):
            while not check():
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), 0.05)

    def post(self, post_id: str) -> ChatPost:
        found = [p for p in self.posts if p.id == post_id]
        assert len(found) == 1, [p.id for p in self.posts]
        return found[0]


async def eventually(check: Callable[[], Awaitable[object]], within: float = 5.0) -> None:
    """Until the async ``check()`` holds, looked at every 50 ms (state kept in Redis)."""
    async with asyncio.timeout(within):
        while not await check():  # noqa: ASYNC110 (polls another process's state: no event to wait on)
            await asyncio.sleep(0.05)


async def state_of(nc: NatsClient, report_id: str) -> str:
    reply = await ask(nc, "status", id=report_id)
    return reply.report.state if reply.report is not None else ""


async def ask(nc: NatsClient, op: str = "run", **fields: Any) -> ReportReply:
    fields.setdefault("user", ALICE.user)
    fields.setdefault("groups", ALICE.groups)
    fields.setdefault("target", CHANNEL)
    if op == "run":
        fields.setdefault("members", (ALICE, TEAM_A, CAROL) if not fields["target"].startswith("conversation:")
                          else ())
    req = ReportRequest(op=op, **fields)
    msg = await nc.request(SUBJECTS.reports(op), req.to_bytes(), timeout=5)
    return ReportReply.model_validate_json(msg.data)


# -- the reporter ---------------------------------------------------------------------------------
@dataclass
class Keys:
    private: Path
    public: Path

    def verifier(self) -> IdentityVerifier:
        v = job_verifier_from_settings(IdentitySettings(job_issuers={"sleuth-reporter": [str(self.public)]},
                                                        verify_keys_env=""))
        assert v is not None
        return v


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    private, public = generate_keypair()
    (tmp_path / "reporter.key").write_bytes(private)
    (tmp_path / "reporter.pub").write_bytes(public)
    return Keys(tmp_path / "reporter.key", tmp_path / "reporter.pub")


def reporter_config(nats_url: str, redis_url: str, keys: Keys, smtp_port: int, **reporter: Any) -> dict[str, Any]:
    return {
        "prefix": "sleuth",
        "nats": {"url": nats_url, "connect_timeout": 2.0, "retry_interval": 0.5},
        "redis": {"url": redis_url, "timeout": 1.0},
        "identity": {"signing_key_file": str(keys.private), "signing_key_env": ""},
        "reporter": {
            "port": free_port(),
            "emails": {CHANNEL: ADDRESSES},
            "smtp": {"host": "127.0.0.1", "port": smtp_port, "starttls": False,
                     "sender": "Sleuth <sleuth@example.com>", "timeout": 2.0},
            "report_timeout": 5.0, "answer_grace": 1.0, "ack_wait": 1.5, "in_progress_interval": 0.3,
            "email_attempts": 3, "email_backoff": 0.2, **reporter,
        },
    }


@dataclass
class Running:
    reporter: Reporter
    settings: Settings
    bus: Bus
    nc: NatsClient

    async def get(self, path: str) -> httpx.Response:
        cfg = self.settings.reporter
        async with httpx.AsyncClient(base_url=f"http://{cfg.host}:{cfg.port}", timeout=5) as client:
            return await client.get(path)


async def wait_ready(settings: Settings, within: float = 15.0) -> None:
    url = f"http://{settings.reporter.host}:{settings.reporter.port}/readyz"
    async with httpx.AsyncClient(timeout=2) as client:
        async with asyncio.timeout(within):
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(url)).status_code == 200:
                        return
                await asyncio.sleep(0.05)


@pytest.fixture
def start_reporter(nats_server: NatsServer, valkey: ValkeyServer, keys: Keys, smtp: Smtp) -> Callable[..., Any]:
    @asynccontextmanager
    async def _start(*, behaviour: Behaviour = default_behaviour, run: bool = True,
                     **reporter: Any) -> AsyncIterator[Running]:
        settings = Settings(**reporter_config(nats_server.url, valkey.url, keys, smtp.port, **reporter))
        nc = await nats.connect(nats_server.url)
        bus = await Bus(nc, keys.verifier(), behaviour).start()
        service = build(settings)
        try:
            if run:
                await service.start()
                await wait_ready(settings)
            yield Running(service, settings, bus, nc)
        finally:
            await bus.stop()
            await service.stop()
            await service.broker.stop()
            await nc.close()

    return _start
