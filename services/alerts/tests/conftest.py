"""The alerts service in-process against real nats-server and Valkey, with the rest of the bus
played here: a fake authz-cache answering ``scope``, a fake agent answering jobs, and a reader of
the CHAT stream standing in for the gateway."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_alerts import Alerts, Settings, build
from sleuth_common.messages import (
    ChatPost,
    ClusterScope,
    Evidence,
    InvestigationJob,
    InvestigationResult,
    RootCause,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.subjects import Subjects

SCOPES = {"alice": {"demo": ("team-a",)}, "bob": {"demo": ("team-b",)}}

# Routes and the tokens Alertmanager sends them (set in the environment by ``start_alerts``).
# ``open`` names no token_env: closed while ``alerts.require_token`` is on (the default).
TOKENS = {
    "TEST_ALERTS_TOKEN_A": "tok-team-a",
    "TEST_ALERTS_TOKEN": "s3cret",
    "TEST_ALERTS_TOKEN_NOBODY": "tok-nobody",
}
ROUTES: list[dict[str, Any]] = [
    {
        "name": "team-a",
        "channel": "team-a-alerts",
        "token_env": "TEST_ALERTS_TOKEN_A",
        "run_as": {"user": "alice", "groups": ["team-a"]},
    },
    {
        "name": "secured",
        "channel": "ops",
        "token_env": "TEST_ALERTS_TOKEN",
        "run_as": {"user": "alice", "groups": ["team-a"]},
    },
    {"name": "nobody", "channel": "lost", "token_env": "TEST_ALERTS_TOKEN_NOBODY"},
    {"name": "open", "channel": "open-alerts", "run_as": {"user": "alice", "groups": ["team-a"]}},
]
AUTO = "<the route's token>"


def payload(*alerts: dict[str, Any], status: str = "firing") -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": '{}:{alertname="KubePodCrashLooping"}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "team-a",
        "groupLabels": {},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": list(alerts),
    }


def alert(
    pod: str = "checkout-api-7d9f8c6b5d-x2k4p",
    namespace: str = "team-a",
    *,
    name: str = "KubePodCrashLooping",
    cluster: str = "demo",
    severity: str = "warning",
    status: str = "firing",
    fp: str = "",
) -> dict[str, Any]:
    labels = {"alertname": name, "namespace": namespace, "pod": pod, "severity": severity}
    if cluster:
        labels["cluster"] = cluster
    return {
        "status": status,
        "labels": labels,
        "annotations": {"summary": f"Pod {namespace}/{pod} is crash looping."},
        "startsAt": "2026-11-30T08:50:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus/graph",
        "fingerprint": fp or f"{name}-{namespace}-{pod}-{cluster}"[:60],
    }


@dataclass
class Bus:
    """Fake authz-cache and agent; collects jobs and chat posts."""

    nc: NatsClient
    subjects: Subjects
    jobs: list[InvestigationJob] = field(default_factory=list)
    posts: list[ChatPost] = field(default_factory=list)
    answer: bool = True
    scopes: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=lambda: dict(SCOPES))
    """user → cluster → namespaces the fake authz-cache answers (by user name only)."""
    scope_requests: list[ScopeRequest] = field(default_factory=list)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _posted: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self) -> Bus:
        await self.nc.subscribe(self.subjects.authz_scope, queue="authz", cb=self._scope)
        js = self.nc.jetstream()
        jobs = await js.pull_subscribe(
            self.subjects.jobs_investigate, durable="agent", stream=self.subjects.stream_jobs
        )
        chat = await js.pull_subscribe(
            self.subjects.chat_outbound, durable="gateway", stream=self.subjects.stream_chat
        )
        self._tasks = [
            asyncio.create_task(self._pull(jobs, self._job)),
            asyncio.create_task(self._pull(chat, self._post)),
        ]
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
                msgs = await sub.fetch(10, timeout=0.3)
            except TimeoutError:
                continue
            for msg in msgs:
                await handle(msg)
                await msg.ack()

    async def _scope(self, msg: Msg) -> None:
        req = ScopeRequest.model_validate_json(msg.data)
        self.scope_requests.append(req)
        clusters = {c: ClusterScope(namespaces=ns) for c, ns in self.scopes.get(req.user, {}).items()}
        await msg.respond(ScopeReply(user=req.user, groups=req.groups, clusters=clusters).to_bytes())

    async def _job(self, msg: Msg) -> None:
        job = InvestigationJob.model_validate_json(msg.data)
        self.jobs.append(job)
        if not self.answer:
            return
        pod = job.alerts[0].labels.get("pod", "?") if job.alerts else "?"
        result = InvestigationResult(
            job_id=job.id,
            user=job.requester.user,
            status="diagnosed",
            root_cause=RootCause(
                family="oom_killed",
                resource="Deployment/team-a/checkout-api",
                summary="checkout-api is OOM-killed at 256Mi",
                confidence="high",
            ),
            evidence=(
                Evidence(
                    id="E01",
                    tool="kube.get_pod",
                    command=f"kubectl get pod -n team-a {pod}",
                    summary="last state OOMKilled",
                ),
            ),
            answer_markdown="## Problem\n\ncheckout-api restarts [E01].",
        )
        await self.nc.publish(job.reply_subject, result.to_bytes())

    async def _post(self, msg: Msg) -> None:
        self.posts.append(ChatPost.model_validate_json(msg.data))
        self._posted.set()

    async def wait_posts(self, n: int, within: float = 10.0) -> list[ChatPost]:
        async with asyncio.timeout(within):
            while len(self.posts) < n:
                self._posted.clear()
                await self._posted.wait()
        return self.posts


@dataclass
class Running:
    alerts: Alerts
    settings: Settings
    bus: Bus
    client: httpx.AsyncClient

    async def post(self, route: str, body: Any, token: str | None = AUTO) -> httpx.Response:
        """POST ``body`` as JSON with the route's bearer token (``token=None``: none; a string: that one)."""
        if token == AUTO:
            env = next((r.token_env for r in self.settings.alerts.routes if r.name == route), "")
            token = TOKENS.get(env)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.client.post(f"/v1/alertmanager/{route}", json=body, headers=headers)


def make_settings(
    nats_url: str,
    redis_url: str,
    *,
    gateway: dict[str, Any] | None = None,
    identity: dict[str, Any] | None = None,
    **alerts: Any,
) -> Settings:
    """``alerts`` go to the ``alerts`` group; ``gateway`` (the channels) and ``identity`` as given."""
    routes = alerts.pop("routes", ROUTES)
    return Settings(
        prefix="sleuth",
        nats={"url": nats_url, "connect_timeout": 2.0},
        redis={"url": redis_url, "timeout": 1.0},
        authz={"request_timeout": 1.0},
        gateway=gateway or {},
        identity=identity or {},
        clusters=[{"name": "demo", "aliases": ["dev"]}, {"name": "prod-1"}],
        alerts={
            "port": free_port(),
            "window": 0.4,
            "tick": 0.1,
            "cooldown": 30.0,
            "routes": routes,
            **alerts,
        },
    )


@pytest.fixture
def start_alerts(
    nats_server: NatsServer, valkey: ValkeyServer, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Any]:
    for env, value in TOKENS.items():
        monkeypatch.setenv(env, value)

    @asynccontextmanager
    async def _start(*, answer: bool = True, **alerts: Any) -> AsyncIterator[Running]:
        settings = make_settings(nats_server.url, valkey.url, **alerts)
        nc = await nats.connect(nats_server.url)
        service = build(settings)
        bus = Bus(nc, Subjects("sleuth"), answer=answer)
        try:
            await service.start()
            await bus.start()
            url = f"http://127.0.0.1:{settings.alerts.port}"
            async with httpx.AsyncClient(base_url=url, timeout=10.0) as client:
                for _ in range(100):
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get("/readyz")).status_code == 200:
                            break
                    await asyncio.sleep(0.05)
                running = Running(service, settings, bus, client)
                yield running
                service = running.alerts  # a test may have restarted it
        finally:
            await bus.stop()
            await service.stop()
            await service.broker.stop()
            await nc.close()

    return _start
