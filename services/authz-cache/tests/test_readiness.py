"""authz-cache started before NATS or Redis: /healthz answers at once, /readyz says what is
missing, and once it is up authz-cache is ready and answers by itself (real nats-server and
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
from sleuth_authz_cache.app import build
from sleuth_authz_cache.health import make_server
from sleuth_authz_cache.settings import Settings
from sleuth_common.health import cancel_and_wait
from sleuth_common.messages import ScopeReply, ScopeRequest
from sleuth_common.subjects import Subjects
from tests.readiness import readiness_when

from .conftest import FakeBackend

pytestmark = pytest.mark.connected

SUBJECTS = Subjects("t")


def settings_for(nats_url: str, redis_url: str) -> Settings:
    return Settings(
        prefix="t",
        nats={"url": nats_url, "connect_timeout": 1.0, "retry_interval": 0.1},
        redis={"url": redis_url, "timeout": 0.5, "retry_interval": 0.1},
        clusters=[{"name": "demo"}, {"name": "prod-1"}],
    )


@contextlib.asynccontextmanager
async def running(settings: Settings, backend: FakeBackend) -> AsyncIterator[httpx.AsyncClient]:
    """authz-cache as ``__main__`` runs it: the health server first, then the wait for NATS."""
    parts = build(settings, backend=backend)
    port = free_port()
    server = make_server(parts.deps, parts.metrics.registry, "127.0.0.1", port)
    serving = asyncio.create_task(server.serve())
    starting = asyncio.create_task(parts.start())
    try:
        async with asyncio.timeout(5):
            while not server.started:  # noqa: ASYNC110 (uvicorn sets a flag)
                await asyncio.sleep(0.01)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            yield client
    finally:
        await cancel_and_wait(starting)
        await parts.app.stop()
        server.should_exit = True
        await serving
        await parts.aclose()




async def ask_scope(url: str, user: str, groups: tuple[str, ...]) -> ScopeReply:
    nc = await nats.connect(url)
    try:
        msg = await nc.request(SUBJECTS.authz_scope, ScopeRequest(user=user, groups=groups).to_bytes(), timeout=5)
        return ScopeReply.model_validate_json(msg.data)
    finally:
        await nc.close()


async def test_started_before_nats_it_waits_then_answers(
    valkey: ValkeyServer, fake_backend: FakeBackend, tmp_path: Path
) -> None:
    port = free_port()
    server = NatsServer(tmp_path / "nats", port=port, log_path=tmp_path / "nats.log")
    try:
        async with running(settings_for(f"nats://127.0.0.1:{port}", valkey.url), fake_backend) as client:
            assert (await client.get("/healthz")).json() == {"status": "alive"}
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json() == {"ready": False, "nats": "disconnected", "redis": "ok"}

            server.start()
            assert await readiness_when(client, ready=True) == {"ready": True, "nats": "ok", "redis": "ok"}
            reply = await ask_scope(server.url, "alice", ("team-a",))
            assert reply.clusters["demo"].namespaces == ("team-a",)
    finally:
        server.stop()


async def test_started_before_redis_it_answers_then_caches(
    nats_server: NatsServer, fake_backend: FakeBackend, tmp_path: Path
) -> None:
    port = free_port()
    valkey = ValkeyServer(tmp_path / "valkey", port=port, log_path=tmp_path / "valkey.log")
    try:
        async with running(settings_for(nats_server.url, f"redis://127.0.0.1:{port}/0"), fake_backend) as client:
            body = await readiness_when(client, nats="ok")
            assert body == {"ready": False, "nats": "ok", "redis": "unreachable"}
            assert (await client.get("/readyz")).status_code == 503
            # Not ready, yet answering: without the cache (as when Redis goes away later).
            reply = await ask_scope(nats_server.url, "alice", ("team-a",))
            assert reply.clusters["demo"].namespaces == ("team-a",) and not reply.cached

            valkey.start()
            await readiness_when(client, ready=True)
            await ask_scope(nats_server.url, "alice", ("team-a",))
            assert (await ask_scope(nats_server.url, "alice", ("team-a",))).cached
    finally:
        valkey.stop()
