"""Every bus service run as its process (``python -m …``) while NATS and Redis are not there
yet, as in a cluster where the pods start together: each stays alive (``/healthz`` 200), is not
ready (``/readyz`` 503 naming both), says so once per retry interval in its log, and stops at
once on SIGTERM. (Each service's tests show it getting ready by itself once they are up.)

How often a service said so is judged by the times its own log lines carry, not by how long the
test waited, so a busy machine (slow start-ups) changes nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

import httpx
import pytest
import yaml

from sleuth.embedded import free_port

pytestmark = pytest.mark.connected

INTERVAL = 0.3


@dataclass
class Service:
    module: str
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    out: IO[bytes] | None = None

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=2)

    def said(self, line: str) -> list[float]:
        """When the service logged ``line`` (the time its log line starts with), in order."""
        return [datetime.strptime(text[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
                for text in self.log.read_text(errors="replace").splitlines() if line in text]


def test_services_wait_for_nats_and_redis_and_stop_on_sigterm(tmp_path: Path) -> None:
    nats_port, redis_port = free_port(), free_port()
    services = [Service(m, free_port(), tmp_path / f"{m}.log")
                for m in ("sleuth_gateway", "sleuth_authz_cache", "sleuth_agent", "sleuth_alerts")]
    ports = {s.module: s.port for s in services}
    config = tmp_path / "sleuth.yaml"
    config.write_text(yaml.safe_dump({
        "nats": {"url": f"nats://127.0.0.1:{nats_port}", "connect_timeout": 1.0, "retry_interval": INTERVAL},
        "redis": {"url": f"redis://127.0.0.1:{redis_port}/0", "timeout": 0.5, "retry_interval": INTERVAL},
        "identity": {"require_job_identity": False},
        "gateway": {"port": ports["sleuth_gateway"]},
        "authz_cache": {"metrics_port": ports["sleuth_authz_cache"]},
        "agent": {"metrics_port": ports["sleuth_agent"]},
        "alerts": {"port": ports["sleuth_alerts"]},
    }))
    try:
        for s in services:
            s.out = s.log.open("wb")
            s.proc = subprocess.Popen([sys.executable, "-m", s.module, "--config", str(config)],
                                      stdout=s.out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        for s in services:
            while True:
                assert s.proc is not None and s.proc.poll() is None, s.log.read_text()
                try:
                    assert s.get("/healthz").json()["status"] == "alive", s.module
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, f"{s.module} did not answer /healthz:\n{s.log.read_text()}"
                    time.sleep(0.05)
        for s in services:
            ready = s.get("/readyz")
            assert ready.status_code == 503, s.module
            body = ready.json()
            assert (body["ready"], body["nats"], body["redis"]) == (False, "disconnected", "unreachable"), s.module

        def line(what: str) -> str:
            url = f"nats://127.0.0.1:{nats_port}" if what == "nats" else f"redis://127.0.0.1:{redis_port}/0"
            return f"{what} at {url} unreachable (Connection refused); retrying every {INTERVAL:g}s"

        deadline = time.monotonic() + 30
        while not all(len(s.said(line(what))) >= 2 for s in services for what in ("nats", "redis")):
            assert time.monotonic() < deadline, {s.module: s.log.read_text() for s in services}
            time.sleep(0.05)
        time.sleep(2 * INTERVAL)  # and a few more retries
        for s in services:
            s.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        for s in services:
            t0 = time.monotonic()
            code = s.proc.wait(timeout=10)  # type: ignore[union-attr]
            assert time.monotonic() - t0 < 5, f"{s.module} took long to stop"
            # uvicorn (the gateway) re-raises the SIGTERM it handled: the conventional status.
            assert code in (0, -signal.SIGTERM), f"{s.module} exited {code}:\n{s.log.read_text()}"
        for s in services:
            for what in ("nats", "redis"):
                said = s.said(line(what))
                # At most once per interval: n lines span at least n-1 intervals (the log's times
                # are to the millisecond).
                assert len(said) >= 2, f"{s.module}: {what}\n{s.log.read_text()}"
                assert len(said) - 1 <= (said[-1] - said[0] + 0.002) / INTERVAL, f"{s.module}: {what}\n{s.log.read_text()}"
            assert "Traceback" not in s.log.read_text(), s.module
    finally:
        for s in services:
            if s.proc is not None and s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait(5)
            if s.out is not None:
                s.out.close()
