"""The agent started before NATS or Redis: /healthz answers at once, /readyz says what is
missing, and once it is up the agent is ready and answers jobs by itself (real nats-server and
Valkey started late on the port it was told)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import nats
import pytest
from nats.aio.msg import Msg

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_agent import Settings, build
from sleuth_agent.worker import ensure_jobs_stream
from sleuth_common.health import cancel_and_wait
from sleuth_common.messages import InvestigationJob, InvestigationResult, Requester
from sleuth_common.subjects import Subjects
from tests.readiness import alive, readiness_when

pytestmark = pytest.mark.connected

SUBJECTS = Subjects("sleuth")


def settings_for(nats_url: str, redis_url: str) -> Settings:
    return Settings(
        nats={"url": nats_url, "connect_timeout": 1.0, "retry_interval": 0.1},
        redis={"url": redis_url, "timeout": 0.5, "retry_interval": 0.1},
        authz={"request_timeout": 0.5},
        identity={"require_job_identity": False, "signing_key_env": ""},
        agent={"metrics_port": free_port()},
    )


@contextlib.asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    agent = build(settings)
    starting = asyncio.create_task(agent.start())
    url = f"http://127.0.0.1:{settings.agent.metrics_port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=5) as client:
            await alive(client)
            yield client
    finally:
        await cancel_and_wait(starting)
        await agent.stop()
        await agent.broker.stop()




async def answer_to_one_job(url: str) -> InvestigationResult:
    """Publish a job as the gateway does and wait for its answer (authz-cache is not running:
    the answer is the error it says so with, which is still an answered job)."""
    job = InvestigationJob(requester=Requester(user="alice", groups=("team-a",)), question="what is failing?")
    nc = await nats.connect(url)
    try:
        answered: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        async def on_done(msg: Msg) -> None:
            answered.set_result(msg.data)

        await nc.subscribe(SUBJECTS.jobs_done(job.id), cb=on_done)
        await ensure_jobs_stream(nc.jetstream(), SUBJECTS)
        await nc.jetstream().publish(SUBJECTS.jobs_investigate, job.to_bytes())
        return InvestigationResult.model_validate_json(await asyncio.wait_for(answered, 10))
    finally:
        await nc.close()


async def test_started_before_nats_it_waits_then_answers(valkey: ValkeyServer, tmp_path: Path) -> None:
    port = free_port()
    server = NatsServer(tmp_path / "nats", port=port, log_path=tmp_path / "nats.log")
    try:
        async with running(settings_for(f"nats://127.0.0.1:{port}", valkey.url)) as client:
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json() == {"ready": False, "nats": "disconnected", "redis": "ok", "busy": 0}

            server.start()
            await readiness_when(client, ready=True)
            assert (await client.get("/readyz")).status_code == 200
            result = await answer_to_one_job(server.url)
            assert result.status == "error" and "authorization is unavailable" in result.answer_markdown
    finally:
        server.stop()


async def test_started_before_redis_it_says_so_until_redis_is_up(nats_server: NatsServer, tmp_path: Path) -> None:
    port = free_port()
    valkey = ValkeyServer(tmp_path / "valkey", port=port, log_path=tmp_path / "valkey.log")
    try:
        async with running(settings_for(nats_server.url, f"redis://127.0.0.1:{port}/0")) as client:
            body = await readiness_when(client, nats="ok")
            assert body == {"ready": False, "nats": "ok", "redis": "unreachable", "busy": 0}
            assert (await client.get("/readyz")).status_code == 503

            valkey.start()
            await readiness_when(client, ready=True)
            result = await answer_to_one_job(nats_server.url)
            assert result.status == "error" and "authorization is unavailable" in result.answer_markdown
    finally:
        valkey.stop()
