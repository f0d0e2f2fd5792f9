"""Alert ingest: Alertmanager payloads accepted per second by the alerts webhook, with batching.

Alertmanager groups alerts: each payload here carries 20 alerts (unique fingerprints, so each one
is new work for the batcher), posted by 16 concurrent senders to a real alerts process backed by
nats-server (JetStream) and Valkey. "Accepted" means answered 200, which the service gives only
after JetStream stored the payload. The floor is the same payloads published straight to the
same JetStream stream from one client (no HTTP, no validation). Memory is the alerts process's
resident set before the run, after it, and once the batcher has put every alert in its window.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import nats
import yaml

from sleuth.benches import emit
from sleuth.embedded.procs import ManagedProcess, NatsServer, ValkeyServer, free_port, wait_for_port

PER_PAYLOAD = 20
PAYLOADS = 600
SENDERS = 16


def _payload(i: int) -> dict[str, Any]:
    alerts = [
        {
            "status": "firing",
            "labels": {
                "alertname": "KubePodCrashLooping",
                "cluster": f"c{j % 3}",
                "namespace": "team-a",
                "pod": f"api-{i}-{j}",
                "severity": "warning",
            },
            "annotations": {"summary": "Pod is crash looping."},
            "startsAt": "2026-11-30T08:41:07Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus/graph",
            "fingerprint": f"{i:06x}{j:04x}",
        }
        for j in range(PER_PAYLOAD)
    ]
    return {
        "version": "4",
        "groupKey": f"bench/{i}",
        "truncatedAlerts": 0,
        "status": "firing",
        "receiver": "bench",
        "groupLabels": {},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager",
        "alerts": alerts,
    }


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _floor(nats_url: str, bodies: list[bytes]) -> float:
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="FLOOR_ALERTS", subjects=["floor.alerts.ingest"])
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(SENDERS)

        async def one(i: int, body: bytes) -> None:
            async with sem:
                await js.publish("floor.alerts.ingest", body, headers={"Nats-Msg-Id": f"f{i}"})

        await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies)))
        return len(bodies) * PER_PAYLOAD / (time.perf_counter() - t0)
    finally:
        await nc.close()


async def _webhook(url: str, bodies: list[bytes]) -> float:
    limits = httpx.Limits(max_connections=SENDERS, max_keepalive_connections=SENDERS)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
        for body in bodies[:10]:  # warm up (also stored, counted below as accepted)
            (await client.post("/v1/alertmanager/bench", content=body,
                               headers={"Content-Type": "application/json"})).raise_for_status()
        rest = bodies[10:]
        sem = asyncio.Semaphore(SENDERS)
        accepted = 0

        async def one(body: bytes) -> None:
            nonlocal accepted
            async with sem:
                r = await client.post(
                    "/v1/alertmanager/bench", content=body, headers={"Content-Type": "application/json"}
                )
                if r.status_code == 200:
                    accepted += PER_PAYLOAD

        t0 = time.perf_counter()
        await asyncio.gather(*(one(b) for b in rest))
        elapsed = time.perf_counter() - t0
        if accepted < len(rest) * PER_PAYLOAD:
            raise RuntimeError(f"only {accepted} of {len(rest) * PER_PAYLOAD} alerts were accepted")
        return accepted / elapsed


async def _queued(url: str) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=5) as client:
        text = (await client.get("/metrics")).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("sleuth_alerts_received_total")
    )


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="sleuth-bench-alerts-") as tmp:
        state = Path(tmp)
        nats_srv = NatsServer(state / "nats", log_path=state / "nats.log").start()
        valkey = ValkeyServer(state / "valkey", log_path=state / "valkey.log").start()
        port = free_port()
        config = {
            "prefix": "sleuth",
            "nats": {"url": nats_srv.url},
            "redis": {"url": valkey.url},
            "logging": {"level": "WARNING"},
            "alerts": {
                "host": "127.0.0.1",
                "port": port,
                "window": 600,
                "cooldown": 1800,
                "routes": [{"name": "bench", "channel": "bench-alerts"}],
                # The bench measures ingest, not the route's bearer token (loopback, own servers).
                "require_token": False,
            },
            "clusters": [{"name": f"c{i}"} for i in range(3)],
        }
        cfg = state / "sleuth.yaml"
        cfg.write_text(yaml.safe_dump(config))
        proc = ManagedProcess(
            "alerts",
            [sys.executable, "-m", "sleuth_alerts", "--config", str(cfg)],
            log_path=state / "alerts.log",
        ).start()
        try:
            wait_for_port("127.0.0.1", port, 30, proc.proc)
            assert proc.proc is not None
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while httpx.get(f"{url}/readyz", timeout=2).status_code != 200:  # connected, streams made
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the alerts service did not get ready:\n{proc.log_tail()}")
                time.sleep(0.05)
            bodies = [json.dumps(_payload(i)).encode() for i in range(PAYLOADS)]
            floor = asyncio.run(_floor(nats_srv.url, bodies))
            before = _rss_mib(proc.proc.pid)
            value = asyncio.run(_webhook(url, bodies))
            after = _rss_mib(proc.proc.pid)
            total = PAYLOADS * PER_PAYLOAD
            deadline = time.monotonic() + 120
            while asyncio.run(_queued(url)) < total and time.monotonic() < deadline:
                time.sleep(0.5)
            drained = _rss_mib(proc.proc.pid)
            emit(
                "alert_ingest",
                value,
                "alerts/s",
                "JetStream publish of the same payloads",
                floor,
                "value >= 1000 alerts/s",
                per_payload=PER_PAYLOAD,
                senders=SENDERS,
                alerts=total,
                rss_before_mib=round(before, 1),
                rss_after_mib=round(after, 1),
                rss_batched_mib=round(drained, 1),
                batched=asyncio.run(_queued(url)),
            )
        finally:
            proc.stop()
            valkey.stop()
            nats_srv.stop()


if __name__ == "__main__":
    run()
