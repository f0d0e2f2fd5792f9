"""The gateway in-process (uvicorn on a free port) against real nats-server and Valkey, with the other
side of the bus played here: a fake authz-cache answering ``authenticate`` and a fake agent that pulls
jobs from JetStream and publishes progress and a result."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import nats
import pytest
import uvicorn
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_common.messages import (
    AuthenticateReply,
    AuthenticateRequest,
    ClusterScope,
    Evidence,
    FeedbackReply,
    FeedbackRequest,
    InvestigationJob,
    InvestigationResult,
    JobProgress,
    RootCause,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.subjects import Subjects
from sleuth_gateway import Settings, create_app
from sleuth_gateway.server import server_config
from tests.sse import take_events

PREFIX = "sleuth"
TOKENS = {
    "t-alice": ("alice", ("team-a",)),
    "t-bob": ("bob", ("team-b",)),
    "t-carol": ("carol", ("sre",)),  # cluster-wide on every cluster (CLUSTER_ADMINS)
    # Sleuth's own identities (the embedded stack's, and service accounts of the sleuth namespace)
    # and a service account of a tenant, which is not Sleuth's.
    "t-sleuth-reader": ("sleuth-reader", ("sleuth:readers",)),
    "t-sleuth-authz": ("sleuth-authz", ("sleuth:authz",)),
    "t-sa-agent": ("system:serviceaccount:sleuth:agent", ("system:serviceaccounts", "system:serviceaccounts:sleuth")),
    "t-sa-group": ("robot", ("system:serviceaccounts:sleuth",)),
    "t-sa-elsewhere": ("system:serviceaccount:team-a:ci", ("system:serviceaccounts", "system:serviceaccounts:team-a")),
}
SCOPES: dict[str, tuple[str, ...]] = {"alice": ("team-a",), "bob": ("team-b",)}
"""Namespaces per user on every cluster FakeAuthz answers for; ``CLUSTER_ADMINS`` read them all."""
CLUSTER_ADMINS = {"carol": ("default", "team-a", "team-b")}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class FakeAuthz:
    """Answers ``authenticate`` for the demo tokens (counting them) and ``scope`` from ``SCOPES``
    for ``clusters``; a cluster in ``failing`` is in the reply's errors, as authz-cache does.
    ``scope_broken``: scope replies are malformed (authz-cache cannot say)."""

    def __init__(self, nc: NatsClient, subjects: Subjects) -> None:
        self.nc = nc
        self.subjects = subjects
        self.requests = 0
        self.clusters: tuple[str, ...] = ("demo",)
        self.failing: set[str] = set()
        self.scope_broken = False

    async def start(self) -> FakeAuthz:
        await self.nc.subscribe(self.subjects.authz_authenticate, queue="authz", cb=self._on_request)
        await self.nc.subscribe(self.subjects.authz_scope, queue="authz", cb=self._on_scope)
        await self.nc.flush()
        return self

    async def _on_scope(self, msg: Msg) -> None:
        if self.scope_broken:
            await msg.respond(b"{}")
            return
        req = ScopeRequest.model_validate_json(msg.data)
        clusters, errors = {}, {}
        for name in self.clusters:
            if name in self.failing:
                errors[name] = "the cluster's API did not answer"
            elif req.user in CLUSTER_ADMINS:
                clusters[name] = ClusterScope(namespaces=CLUSTER_ADMINS[req.user], cluster_wide=True)
            else:
                clusters[name] = ClusterScope(namespaces=SCOPES.get(req.user, ()))
        reply = ScopeReply(user=req.user, groups=req.groups, clusters=clusters, errors=errors)
        await msg.respond(reply.to_bytes())

    async def _on_request(self, msg: Msg) -> None:
        self.requests += 1
        req = AuthenticateRequest.model_validate_json(msg.data)
        if req.token in TOKENS:
            user, groups = TOKENS[req.token]
            reply = AuthenticateReply(authenticated=True, user=user, groups=groups)
        else:
            reply = AuthenticateReply(authenticated=False, error="unknown token")
        await msg.respond(reply.to_bytes())


def default_result(job: InvestigationJob) -> InvestigationResult:
    """A diagnosis in the requester's own namespace (their first group, as in the demo snapshot)."""
    ns = job.requester.groups[0] if job.requester.groups else "default"
    return InvestigationResult(
        job_id=job.id,
        user=job.requester.user,
        status="diagnosed",
        root_cause=RootCause(
            family="oom_killed",
            resource=f"Deployment/{ns}/api",
            summary="api is OOM-killed",
            confidence="high",
        ),
        evidence=(
            Evidence(
                id="E01",
                tool="kube.pods",
                command=f"kubectl get pods -n {ns} -l app=api",
                summary="api-7d9 restarted 12 times, last state OOMKilled",
                highlights=("OOMKilled",),
            ),
        ),
        answer_markdown=(
            f"## Problem\n\n`api` in **{ns}** keeps restarting.\n\n"
            "## Root cause\n\nOOM-killed at 256Mi [E01]. <script>alert('x')</script>"
        ),
    )


Behaviour = Callable[[NatsClient, Subjects, InvestigationJob], Awaitable[None]]


async def answer_with_progress(nc: NatsClient, subjects: Subjects, job: InvestigationJob) -> None:
    for seq, (stage, message) in enumerate(
        [("plan", "finding the target"), ("collect", "reading pods and events")]
    ):
        await nc.publish(
            subjects.jobs_progress(job.id),
            JobProgress(job_id=job.id, seq=seq, stage=stage, message=message).to_bytes(),
        )
        await asyncio.sleep(0.05)
    await nc.publish(job.reply_subject, default_result(job).to_bytes())


async def stay_silent(nc: NatsClient, subjects: Subjects, job: InvestigationJob) -> None:
    return None


@dataclass
class FakeAgent:
    """Pulls jobs like the real agent (durable ``agent`` on the JOBS stream) and acts out ``behaviour``."""

    nc: NatsClient
    subjects: Subjects
    behaviour: Behaviour = answer_with_progress
    jobs: list[InvestigationJob] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    feedback: list[FeedbackRequest] = field(default_factory=list)
    """Feedback taken (``<prefix>.agent.feedback``): only from the asker of a job it answered."""
    _task: asyncio.Task[None] | None = None
    _feedback_sub: Any = None
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> FakeAgent:
        self._feedback_sub = await self.nc.subscribe(self.subjects.agent_feedback, queue="agent",
                                                     cb=self._on_feedback)
        js = self.nc.jetstream()
        sub = await js.pull_subscribe(
            self.subjects.jobs_investigate, durable="agent", stream=self.subjects.stream_jobs
        )
        self._task = asyncio.create_task(self._run(sub))
        return self

    async def _run(self, sub: Any) -> None:
        # A stop flag, not only cancellation: on Python 3.11 a cancel that lands while nats-py's
        # fetch sees its pull request expire (the server's 408 and the client's timeout at the
        # same instant) is swallowed inside asyncio.wait_for, and a loop that only stops when
        # cancelled then polls forever (this hung the suite until the 120 s pytest timeout).
        while not self._stopping.is_set():
            try:
                msgs = await sub.fetch(1, timeout=0.5)
            except NatsTimeoutError:
                continue
            for msg in msgs:
                self.raw.append(msg.data)
                job = InvestigationJob.model_validate_json(msg.data)
                self.jobs.append(job)
                await msg.ack()
                await self.behaviour(self.nc, self.subjects, job)

    async def _on_feedback(self, msg: Msg) -> None:
        req = FeedbackRequest.model_validate_json(msg.data)
        if any(j.id == req.job_id and j.requester.user == req.user for j in self.jobs):
            self.feedback.append(req)
            reply = FeedbackReply(ok=True, text=f"Thanks — answer `{req.job_id}` noted.")
        else:
            reply = FeedbackReply(ok=False, text=f"No answer `{req.job_id}` that you can give feedback on.",
                                  reason="unknown")
        await msg.respond(reply.to_bytes())

    async def stop(self) -> None:
        if self._feedback_sub is not None:
            sub, self._feedback_sub = self._feedback_sub, None
            with contextlib.suppress(NatsError):
                await sub.unsubscribe()
        self._stopping.set()
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        # The flag ends the loop within one fetch timeout even if the cancel is swallowed.
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(task, 5.0)


@dataclass
class Stack:
    url: str
    settings: Settings
    app: Any
    nc: NatsClient
    subjects: Subjects
    agent: FakeAgent
    authz: FakeAuthz | None
    client: httpx.AsyncClient

    @staticmethod
    def auth(token: str) -> dict[str, str]:
        return auth(token)

    async def sse(self, token: str, query: str, request_id: str = "") -> list[tuple[str, dict[str, Any]]]:
        """POST /v1/query?stream=1 (with ``X-Request-Id: request_id`` when given) and parse the
        Server-Sent Events."""
        events: list[tuple[str, dict[str, Any]]] = []
        headers = {**auth(token), **({"X-Request-Id": request_id} if request_id else {})}
        # Bounded as a whole (the client's timeout is per read): a stream that never ends fails
        # the test in seconds instead of hanging it.
        async with asyncio.timeout(self.settings.gateway.answer_timeout + 10.0), self.client.stream(
            "POST", "/v1/query?stream=1", json={"query": query}, headers=headers
        ) as resp:
            assert resp.status_code == 200, await resp.aread()
            assert resp.headers["content-type"].startswith("text/event-stream")
            assert resp.headers["x-request-id"]
            buf = ""
            async for chunk in resp.aiter_text():
                found, buf = take_events(buf + chunk)
                events.extend(found)
        return events


async def pile_up(nc: NatsClient, subjects: Subjects, agent: FakeAgent, jobs: int) -> None:
    """Stop ``agent`` and leave ``jobs`` jobs in JOBS that nobody takes: its durable consumer made
    anew (as a stuck agent's would be), so no pull request of the stopped one can take a job."""
    await agent.stop()
    js = nc.jetstream()
    await js.delete_consumer(subjects.stream_jobs, subjects.agent_durable)
    await js.add_consumer(subjects.stream_jobs, durable_name=subjects.agent_durable,
                          filter_subject=subjects.jobs_investigate, ack_policy=AckPolicy.EXPLICIT)
    for _ in range(jobs):
        await js.publish(subjects.jobs_investigate, b"{}")


async def seen_by_gateway(gw: Any, pending: int) -> None:
    """Wait until ``gw`` reads ``pending`` jobs waiting (a reading can fail on a loaded machine)."""
    gw.metrics.jobs_queue.min_interval = 0.0
    async with asyncio.timeout(10):
        while (state := await gw.jobs_queue()) is None or state.pending != pending:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


def make_settings(nats_url: str, redis_url: str, *, redis_timeout: float = 0.5, authz_timeout: float = 1.0,
                  **gateway: Any) -> Settings:
    """Short Redis and authz-cache timeouts, so tests of their failures end quickly."""
    return Settings(
        prefix=PREFIX,
        nats={"url": nats_url, "connect_timeout": 2.0},
        redis={"url": redis_url, "timeout": redis_timeout},
        authz={"request_timeout": authz_timeout},
        gateway={"port": free_port(), "answer_timeout": 5.0, **gateway},
    )


async def wait_ready(url: str, within: float = 10.0) -> httpx.Response:
    """Poll ``url``/readyz until it answers 200; the last answer."""
    async with httpx.AsyncClient(base_url=url, timeout=2.0) as client, asyncio.timeout(within):
        while True:
            with contextlib.suppress(httpx.TransportError):
                resp = await client.get("/readyz")
                if resp.status_code == 200:
                    return resp
            await asyncio.sleep(0.02)


@asynccontextmanager
async def serve(app: Any, settings: Settings, *, ready: bool = True) -> AsyncIterator[uvicorn.Server]:
    """Run ``app`` with uvicorn in this event loop, configured as the gateway runs it, until the
    block ends; with ``ready``, once ``/readyz`` says it is connected and set up."""
    config = server_config(app, settings.gateway, lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(500):
            if server.started or task.done():
                break
            await asyncio.sleep(0.02)
        if task.done():
            task.result()
            raise RuntimeError("the gateway did not start")
        assert server.started
        if ready:
            await wait_ready(f"http://127.0.0.1:{settings.gateway.port}")
        yield server
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@pytest.fixture
def start_stack(nats_server: NatsServer, valkey: ValkeyServer) -> Callable[..., Any]:
    """``async with start_stack(authz=True, behaviour=..., **gateway_settings) as stack`` (and
    ``redis_timeout``/``authz_timeout`` in place of make_settings' short ones)."""

    @asynccontextmanager
    async def _start(*, authz: bool = True, agent: str = "answer", redis_timeout: float = 0.5,
                     authz_timeout: float = 1.0, **gateway: Any) -> AsyncIterator[Stack]:
        behaviour = {"answer": answer_with_progress, "silent": stay_silent}[agent]
        settings = make_settings(nats_server.url, valkey.url, redis_timeout=redis_timeout,
                                 authz_timeout=authz_timeout, **gateway)
        subjects = Subjects(PREFIX)
        nc = await nats.connect(nats_server.url)
        fake_authz = await FakeAuthz(nc, subjects).start() if authz else None
        app = create_app(settings)
        fake_agent = FakeAgent(nc, subjects, behaviour)
        try:
            async with serve(app, settings):
                # The gateway made the JOBS stream at start-up; the agent binds to it.
                await fake_agent.start()
                url = f"http://127.0.0.1:{settings.gateway.port}"
                async with httpx.AsyncClient(base_url=url, timeout=15.0) as client:
                    yield Stack(url, settings, app, nc, subjects, fake_agent, fake_authz, client)
                await fake_agent.stop()
        finally:
            await fake_agent.stop()
            await nc.close()

    return _start
