"""`python -m sleuth_gateway --config FILE` serves, makes the JOBS stream, and stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import nats
import pytest
import yaml
from nats.js.api import RetentionPolicy, StorageType

from sleuth.embedded import free_port, wait_for_port
from sleuth_common.subjects import Subjects
from sleuth_gateway import ensure_streams

pytestmark = pytest.mark.connected


def test_the_module_runs_from_a_config_file(nats_server, valkey, tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "sleuth.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "nats": {"url": nats_server.url},
                "redis": {"url": valkey.url},
                "gateway": {"port": port},
                "agent": {"unknown": "sections are ignored"},
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth_gateway", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port("127.0.0.1", port, 20, proc)  # type: ignore[arg-type]
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        deadline = time.monotonic() + 10
        while (resp := httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)).status_code != 200:
            assert time.monotonic() < deadline, resp.text
            time.sleep(0.05)
        assert resp.json()["nats"] == "ok"
        assert (
            "sleuth_gateway_requests_total" in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        )
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=15)
    # uvicorn shuts the app down, then re-raises the SIGTERM it caught (the conventional exit status).
    assert proc.returncode in (0, -signal.SIGTERM), out.decode()
    assert b"Application shutdown complete" in out
    assert b"created JetStream stream" in out


async def test_ensure_streams_creates_a_work_queue_once(nats_server) -> None:
    subjects = Subjects("sleuth")
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await ensure_streams(js, subjects)
        await ensure_streams(js, subjects)  # idempotent
        info = await js.stream_info(subjects.stream_jobs)
        assert info.config.subjects == [subjects.jobs_investigate]
        assert info.config.retention == RetentionPolicy.WORK_QUEUE
        assert info.config.storage == StorageType.FILE
    finally:
        await nc.close()


async def test_streams_are_created_with_the_configured_replicas(nats_server) -> None:
    """``jetstream.replicas`` reaches the server: one copy on a single server, and a single server
    refuses three (a clustered NATS takes them)."""
    from nats.js.errors import APIError

    from sleuth_common.config import ServiceSettings, load_settings

    subjects = Subjects("r3")
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await ensure_streams(js, subjects, 1)
        assert (await js.stream_info(subjects.stream_jobs)).config.num_replicas == 1
        with pytest.raises(APIError, match="replicas > 1"):
            await ensure_streams(js, Subjects("r3b"), 3)
    finally:
        await nc.close()
    assert ServiceSettings().jetstream.replicas == 1
    assert load_settings(ServiceSettings, None, jetstream={"replicas": 3}).jetstream.replicas == 3
