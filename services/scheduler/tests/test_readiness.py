"""The scheduler started before NATS and Redis: ``/healthz`` answers at once, ``/readyz`` names what
is missing, and once both are up it is ready and answers commands by itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import nats
import pytest

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_common.health import cancel_and_wait
from sleuth_common.messages import ScheduleReply, ScheduleRequest
from sleuth_scheduler import build
from tests.readiness import alive, readiness_when

from .conftest import Keys, make_settings

pytestmark = pytest.mark.connected


async def test_started_before_nats_and_redis_it_waits_then_works(tmp_path: Path, keys: Keys) -> None:
    nats_port, redis_port = free_port(), free_port()
    server = NatsServer(tmp_path / "nats", port=nats_port, log_path=tmp_path / "nats.log")
    valkey = ValkeyServer(tmp_path / "valkey", port=redis_port, log_path=tmp_path / "valkey.log")
    settings = make_settings(f"nats://127.0.0.1:{nats_port}", f"redis://127.0.0.1:{redis_port}/0", keys)
    service = build(settings)
    starting = asyncio.create_task(service.start())
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.scheduler.port}", timeout=5) as client:
            await alive(client)
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert (ready.json()["nats"], ready.json()["redis"]) == ("disconnected", "unreachable")
            server.start()
            await readiness_when(client, nats="ok")
            assert not starting.done()  # firing waits for Redis
            valkey.start()
            await readiness_when(client, ready=True)
            await asyncio.wait_for(asyncio.shield(starting), 5)
            nc = await nats.connect(server.url)
            try:
                req = ScheduleRequest(op="list", user="alice", target="conversation:alice")
                reply = ScheduleReply.model_validate_json(
                    (await nc.request("sleuth.schedules.list", req.to_bytes(), timeout=5)).data)
                assert reply.ok and reply.schedules == ()
            finally:
                await nc.close()
    finally:
        await cancel_and_wait(starting)
        await service.stop()
        await service.broker.stop()
        valkey.stop()
        server.stop()
