"""The scheduler against real nats-server and Valkey, with the rest of the bus played here: a fake
agent pulling jobs from JOBS (and answering as told) and a reader of the CHAT stream standing in
for the gateway. Time is the scheduler's injectable clock (``Clock.offset`` moves it)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_common.config import IdentitySettings
from sleuth_common.identity import IdentityVerifier, generate_keypair, job_verifier_from_settings
from sleuth_common.messages import (
    ChatPost,
    InvestigationJob,
    InvestigationResult,
    Requester,
    RootCause,
    ScheduleReply,
    ScheduleRequest,
)
from sleuth_common.streams import ensure_streams
from sleuth_common.subjects import Subjects
from sleuth_scheduler import SCHEDULER_ISSUER, Clock, Scheduler, Settings, build

ALICE = Requester(user="alice", groups=("team-a",))
BOB = Requester(user="bob", groups=("team-b",))
CAROL = Requester(user="carol", groups=("platform-admins",))

NO_ENV = {"signing_key_env": "", "verify_keys_env": ""}


@dataclass(frozen=True)
class Keys:
    private: Path
    public: Path

    def verifier(self) -> IdentityVerifier:
        v = job_verifier_from_settings(IdentitySettings(job_issuers={SCHEDULER_ISSUER: [str(self.public)]}, **NO_ENV))
        assert v is not None
        return v


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    private, public = generate_keypair()
    k = Keys(tmp_path / "scheduler.key", tmp_path / "scheduler.pub")
    k.private.write_bytes(private)
    k.public.write_bytes(public)
    return k


@dataclass
class FakeAgent:
    """Pulls jobs like the real agent (durable ``agent`` on JOBS) and answers as ``behaviour``
    says: ``diagnosed``, ``error``, ``denied`` or ``silent`` (no answer). Also reads CHAT as the
    gateway would."""

    nc: NatsClient
    subjects: Subjects
    behaviour: str = "diagnosed"
    reader: NatsClient | None = None
    """The connection CHAT is read with (the gateway's); default ``nc``."""
    jobs: list[InvestigationJob] = field(default_factory=list)
    received: list[tuple[float, InvestigationJob]] = field(default_factory=list)
    """(real time it arrived, job)."""
    posts: list[ChatPost] = field(default_factory=list)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self, *, make_streams: bool = True) -> FakeAgent:
        js = self.nc.jetstream()
        chat_js = (self.reader or self.nc).jetstream()
        if make_streams:
            await ensure_streams(js, self.subjects, "jobs", "chat")
        jobs = await js.pull_subscribe(self.subjects.jobs_investigate, durable="agent", stream=self.subjects.stream_jobs)
        chat = await chat_js.pull_subscribe(self.subjects.chat_outbound, durable="gateway",
                                            stream=self.subjects.stream_chat)
        self._tasks = [asyncio.create_task(self._pull(jobs, self._job)),
                       asyncio.create_task(self._pull(chat, self._post))]
        return self

    async def stop(self) -> None:
        self._stopping.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(t, 5)

    async def _pull(self, sub: Any, handle: Callable[[Msg], Any]) -> None:
        while not self._stopping.is_set():
            try:
                msgs = await sub.fetch(200, timeout=0.2)
            except TimeoutError:
                continue
            for msg in msgs:
                await handle(msg)
                await msg.ack()

    async def _job(self, msg: Msg) -> None:
        job = InvestigationJob.model_validate_json(msg.data)
        self.jobs.append(job)
        self.received.append((time.time(), job))
        self._changed.set()
        if self.behaviour == "silent":
            return
        result = InvestigationResult(
            job_id=job.id, user=job.requester.user, status=self.behaviour,  # type: ignore[arg-type]
            root_cause=RootCause(family="oom_killed", resource="Deployment/team-a/checkout-api",
                                 summary="checkout-api is OOM-killed at 256Mi", confidence="high")
            if self.behaviour == "diagnosed" else None,
            answer_markdown="## Problem\n\ncheckout-api restarts [E01]." if self.behaviour == "diagnosed" else "",
        )
        await self.nc.publish(job.reply_subject, result.to_bytes())

    async def _post(self, msg: Msg) -> None:
        self.posts.append(ChatPost.model_validate_json(msg.data))
        self._changed.set()

    async def _until(self, done: Callable[[], bool], within: float) -> None:
        async with asyncio.timeout(within):
            while not done():
                self._changed.clear()
                await self._changed.wait()

    async def wait_jobs(self, n: int, within: float = 10.0) -> list[InvestigationJob]:
        await self._until(lambda: len(self.jobs) >= n, within)
        return self.jobs

    async def wait_posts(self, n: int, within: float = 10.0) -> list[ChatPost]:
        await self._until(lambda: len(self.posts) >= n, within)
        return self.posts


def make_settings(nats_url: str, redis_url: str, keys: Keys | None, **scheduler: Any) -> Settings:
    return Settings(
        prefix="sleuth",
        nats={"url": nats_url, "connect_timeout": 2.0, "retry_interval": 0.2},
        redis={"url": redis_url, "timeout": 1.0, "retry_interval": 0.2},
        identity={"signing_key_file": str(keys.private) if keys else "", **NO_ENV},
        scheduler={"port": free_port(), "tick": 3600.0, "jitter": 0.0, **scheduler},
    )


@dataclass
class Running:
    scheduler: Scheduler
    settings: Settings
    agent: FakeAgent
    nc: NatsClient
    clock: Clock

    async def ask(self, op: str, who: Requester = ALICE, target: str = "conversation:alice",
                  **kw: Any) -> ScheduleReply:
        req = ScheduleRequest(op=op, user=who.user, groups=who.groups, target=target, **kw)  # type: ignore[arg-type]
        msg = await self.nc.request(Subjects("sleuth").schedules(op), req.to_bytes(), timeout=5)
        return ScheduleReply.model_validate_json(msg.data)

    async def tick(self) -> None:
        assert self.scheduler.firer is not None
        await self.scheduler.firer.tick()

    def jump_to(self, t: float) -> None:
        """Move the scheduler's clock so that it reads ``t`` now."""
        self.clock.offset += t - self.clock()


@pytest.fixture
def start_scheduler(nats_server: NatsServer, valkey: ValkeyServer, keys: Keys) -> Callable[..., Any]:
    @asynccontextmanager
    async def _start(*, behaviour: str = "diagnosed", clock: Clock | None = None,
                     **scheduler: Any) -> AsyncIterator[Running]:
        settings = make_settings(nats_server.url, valkey.url, keys, **scheduler)
        clock = clock or Clock()
        nc = await nats.connect(nats_server.url)
        service = build(settings, clock=clock)
        agent = FakeAgent(nc, Subjects("sleuth"), behaviour)
        running = Running(service, settings, agent, nc, clock)
        try:
            await service.start()
            await agent.start()
            yield running
        finally:
            await agent.stop()
            # The scheduler running now: a test may have replaced the first (a restart); the one it
            # replaced it stopped itself. Left running, its tasks hung the loop's close.
            await running.scheduler.stop()
            await running.scheduler.broker.stop()
            await nc.close()

    return _start
