"""The alerts service started before NATS or Redis: /healthz answers at once, /readyz says what
is missing, and once it is up the service is ready and works by itself (real nats-server and
Valkey started late on the port it was told)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import nats
import pytest

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_alerts import Alerts, Settings, build
from sleuth_common.health import cancel_and_wait
from sleuth_common.subjects import Subjects
from tests.readiness import alive, readiness_when

from .conftest import TOKENS, Bus, alert, make_settings, payload

pytestmark = pytest.mark.connected

TEAM_A = {"Authorization": f"Bearer {TOKENS['TEST_ALERTS_TOKEN_A']}"}


@pytest.fixture(autouse=True)
def _route_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    for env, value in TOKENS.items():
        monkeypatch.setenv(env, value)


def settings_for(nats_url: str, redis_url: str) -> Settings:
    settings = make_settings(nats_url, redis_url)
    return settings.model_copy(update={
        "nats": settings.nats.model_copy(update={"connect_timeout": 1.0, "retry_interval": 0.1}),
        "redis": settings.redis.model_copy(update={"timeout": 0.5, "retry_interval": 0.1}),
    })


@contextlib.asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[tuple[Alerts, asyncio.Task[None], httpx.AsyncClient]]:
    service = build(settings)
    starting = asyncio.create_task(service.start())
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.alerts.port}", timeout=10) as client:
            await alive(client)
            yield service, starting, client
    finally:
        await cancel_and_wait(starting)
        await service.stop()
        await service.broker.stop()




@contextlib.asynccontextmanager
async def bus(url: str) -> AsyncIterator[Bus]:
    """The fake authz-cache, agent and chat reader (on the streams the service made)."""
    nc = await nats.connect(url)
    fake = Bus(nc, Subjects("sleuth"))
    try:
        yield await fake.start()
    finally:
        await fake.stop()
        await nc.close()


async def test_started_before_nats_it_waits_then_stores_and_batches(valkey: ValkeyServer, tmp_path: Path) -> None:
    port = free_port()
    server = NatsServer(tmp_path / "nats", port=port, log_path=tmp_path / "nats.log")
    try:
        async with running(settings_for(f"nats://127.0.0.1:{port}", valkey.url)) as (_, _, client):
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json() == {"ready": False, "nats": "disconnected", "redis": "ok"}
            resp = await client.post("/v1/alertmanager/team-a", json=payload(alert()), headers=TEAM_A)
            assert resp.status_code == 503 and "not connected to NATS" in resp.json()["error"]

            server.start()
            await readiness_when(client, ready=True)
            async with bus(server.url) as fake:
                resp = await client.post("/v1/alertmanager/team-a", json=payload(alert()), headers=TEAM_A)
                assert resp.status_code == 200 and resp.json()["status"] == "stored"
                (post,) = await fake.wait_posts(1)
                assert "KubePodCrashLooping" in post.text
    finally:
        server.stop()


async def test_started_before_redis_it_stores_then_batches_once_redis_is_up(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    port = free_port()
    valkey = ValkeyServer(tmp_path / "valkey", port=port, log_path=tmp_path / "valkey.log")
    try:
        async with running(settings_for(nats_server.url, f"redis://127.0.0.1:{port}/0")) as (_, starting, client):
            body = await readiness_when(client, nats="ok")
            assert body == {"ready": False, "nats": "ok", "redis": "unreachable"}
            assert (await client.get("/readyz")).status_code == 503
            # The webhook needs NATS only: Alertmanager's posts are kept until they can be batched.
            resp = await client.post("/v1/alertmanager/team-a", json=payload(alert()), headers=TEAM_A)
            assert resp.status_code == 200 and resp.json()["status"] == "stored"
            assert not starting.done()  # the batcher waits for Redis

            async with bus(nats_server.url) as fake:
                valkey.start()
                await readiness_when(client, ready=True)
                await asyncio.wait_for(asyncio.shield(starting), 5)
                (post,) = await fake.wait_posts(1)
                assert "KubePodCrashLooping" in post.text
    finally:
        valkey.stop()
