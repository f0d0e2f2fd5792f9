"""What tracing costs a question: p50 latency through the whole stack with every service
exporting spans (OTLP/HTTP to a local sink), against the same stack with tracing off.

Both stacks run at once and take turns, round by round, so machine noise falls on both."""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from sleuth.benches import emit
from sleuth.embedded.stack import Stack, StackPorts, StackSpec

REPO = Path(__file__).resolve().parents[3]
QUESTION = {"query": "what is failing in team-a?"}


class _Sink:
    """Accepts OTLP/HTTP exports and counts the bytes, as a collector elsewhere would."""

    def __init__(self) -> None:
        self.bytes = 0
        self.exports = 0
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                sink.bytes += len(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                sink.exports += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def _spec(tmp: str, name: str, env: dict[str, str]) -> StackSpec:
    state = Path(tmp) / name
    state.mkdir()
    return StackSpec(snapshot=REPO / "scenarios" / "demo", state_dir=state, ports=StackPorts.free(),
                     extra_env=env, extra_config={"gateway": {"rate_limit_capacity": 10000,
                                                              "rate_limit_refill_per_second": 1000,
                                                              "max_inflight_per_user": 0,
                                                              "max_requests_per_user": 0}})


async def _round(client: httpx.AsyncClient, concurrency: int) -> list[tuple[float, bool]]:
    async def one() -> tuple[float, bool]:
        t0 = time.perf_counter()
        r = await client.post("/v1/query", json=QUESTION)
        ok = r.status_code == 200 and r.json().get("result", {}).get("status") == "diagnosed"
        return time.perf_counter() - t0, ok

    return list(await asyncio.gather(*(one() for _ in range(concurrency))))


async def _compare(off: Stack, on: Stack, concurrency: int = 20, rounds: int = 4) -> dict[str, list]:
    results: dict[str, list] = {"off": [], "on": []}
    clients = {name: httpx.AsyncClient(base_url=s.gateway_url, timeout=60,
                                       headers={"Authorization": f"Bearer {s.token('alice')}"})
               for name, s in (("off", off), ("on", on))}
    try:
        for client in clients.values():
            await client.post("/v1/query", json=QUESTION)  # warm up
        for i in range(rounds):
            for name in (("off", "on") if i % 2 == 0 else ("on", "off")):
                results[name] += await _round(clients[name], concurrency)
    finally:
        for client in clients.values():
            await client.aclose()
    return results


def run() -> None:
    sink = _Sink()
    try:
        with tempfile.TemporaryDirectory(prefix="sleuth-bench-tracing-") as tmp:
            traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.url}
            with Stack(_spec(tmp, "off", {})) as off, Stack(_spec(tmp, "on", traced)) as on:
                results = asyncio.run(_compare(off, on))
    finally:
        sink.server.shutdown()
    p50 = {name: statistics.median(t for t, _ok in rs) for name, rs in results.items()}
    lost = {name: sum(1 for _t, ok in rs if not ok) for name, rs in results.items()}
    emit("question_p50_tracing_on", p50["on"] * 1e3, "ms", "the same question, tracing off (p50)",
         p50["off"] * 1e3, "ratio <= 1.15", questions=len(results["on"]), lost_on=lost["on"], lost_off=lost["off"],
         exported_kib=round(sink.bytes / 1024, 1), exports=sink.exports)
    print(json.dumps({"figure": "tracing_export_per_question", "value": round(sink.bytes / max(1, len(results["on"]) + 1)
                                                                              / 1024, 1), "unit": "KiB"}), flush=True)
