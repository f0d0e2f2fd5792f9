"""A gateway started before NATS or Redis: alive at once, not ready (saying what it waits for,
once per retry interval in its log), then ready and answering by itself once they are up."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_common.subjects import Subjects
from sleuth_gateway import Settings, create_app
from tests.readiness import readiness_when

from .conftest import PREFIX, FakeAgent, FakeAuthz, auth, serve, wait_ready

pytestmark = pytest.mark.connected

ALICE = auth("t-alice")


def settings_for(nats_url: str, redis_url: str) -> Settings:
    return Settings(
        prefix=PREFIX,
        nats={"url": nats_url, "connect_timeout": 1.0, "retry_interval": 0.1},
        redis={"url": redis_url, "timeout": 0.5, "retry_interval": 0.1},
        authz={"request_timeout": 1.0},
        gateway={"port": free_port(), "answer_timeout": 5.0},
    )


def said(caplog: pytest.LogCaptureFixture, line: str) -> int:
    return [r.getMessage() for r in caplog.records].count(line)


async def ready_state(client: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
    resp = await client.get("/readyz")
    return resp.status_code, resp.json()




async def test_started_before_nats_it_waits_then_answers(
    valkey: ValkeyServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sleuth_common.health")
    port = free_port()
    settings = settings_for(f"nats://127.0.0.1:{port}", valkey.url)
    url = f"http://127.0.0.1:{settings.gateway.port}"
    server = NatsServer(tmp_path / "nats", port=port, log_path=tmp_path / "nats.log")
    try:
        async with serve(create_app(settings), settings, ready=False), httpx.AsyncClient(
            base_url=url, timeout=10.0
        ) as client:
            assert (await client.get("/healthz")).json()["status"] == "alive"
            status, body = await ready_state(client)
            assert status == 503 and body["ready"] is False
            assert body["nats"] == "disconnected" and body["redis"] == "ok"
            resp = await client.post("/v1/query", json={"query": "what is failing?"}, headers=ALICE)
            assert resp.status_code == 503, resp.text

            server.start()
            await wait_ready(url, within=5.0)
            assert said(caplog, f"nats at nats://127.0.0.1:{port} unreachable (Connection refused); "
                                "retrying every 0.1s") >= 1
            assert said(caplog, f"nats at nats://127.0.0.1:{port} is up") == 1

            subjects = Subjects(PREFIX)
            nc = await nats.connect(server.url)
            agent = FakeAgent(nc, subjects)
            try:
                await FakeAuthz(nc, subjects).start()
                await agent.start()  # binds to the JOBS stream the gateway made once connected
                resp = await client.post("/v1/query", json={"query": "what is failing in team-a?"}, headers=ALICE)
                assert resp.status_code == 200, resp.text
                assert [job.question for job in agent.jobs] == ["what is failing in team-a?"]
            finally:
                await agent.stop()
                await nc.close()
    finally:
        server.stop()


async def test_started_before_redis_it_waits_then_answers(
    nats_server: NatsServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sleuth_common.health")
    port = free_port()
    settings = settings_for(nats_server.url, f"redis://127.0.0.1:{port}/0")
    url = f"http://127.0.0.1:{settings.gateway.port}"
    valkey = ValkeyServer(tmp_path / "valkey", port=port, log_path=tmp_path / "valkey.log")
    nc = await nats.connect(nats_server.url)
    try:
        await FakeAuthz(nc, Subjects(PREFIX)).start()
        async with serve(create_app(settings), settings, ready=False), httpx.AsyncClient(
            base_url=url, timeout=10.0
        ) as client:
            assert (await client.get("/healthz")).status_code == 200
            await readiness_when(client, nats="ok")
            status, body = await ready_state(client)
            assert status == 503 and (body["ready"], body["nats"], body["redis"]) == (False, "ok", "unreachable")
            assert (await client.get("/v1/whoami", headers=ALICE)).status_code == 503

            valkey.start()
            await wait_ready(url, within=5.0)
            assert said(caplog, f"redis at redis://127.0.0.1:{port}/0 unreachable (Connection refused); "
                                "retrying every 0.1s") >= 1
            resp = await client.get("/v1/whoami", headers=ALICE)
            assert resp.status_code == 200 and resp.json()["user"] == "alice"
    finally:
        await nc.close()
        valkey.stop()
