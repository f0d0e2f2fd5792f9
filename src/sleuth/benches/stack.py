"""Whole-stack figures: cached scope lookup over the bus, and questions through the gateway."""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import nats

from sleuth.benches import emit
from sleuth.embedded.access import NatsPermissions
from sleuth.embedded.stack import Stack, StackPorts, StackSpec
from sleuth_common.messages import ScopeReply, ScopeRequest
from sleuth_common.subjects import Subjects

REPO = Path(__file__).resolve().parents[3]
BENCH_USER = NatsPermissions(publish=("bench.echo", "_INBOX.bench.>"), subscribe=("bench.echo", "_INBOX.bench.>"))
"""The floor's NATS user: a bare request/reply on a subject of its own."""


async def bench_scope_lookup(stack: Stack, n: int = 500) -> None:
    assert stack.nats is not None
    subjects = Subjects("sleuth")
    # Scope lookups as the agent (a service authz-cache answers); the bare round trip as the
    # bench user, who may use nothing but ``bench.echo`` and its own inbox.
    nc = await nats.connect(**stack.nats_options("agent"))
    echo_nc = await nats.connect(**stack.nats_options("bench"))
    try:
        async def echo(msg: Any) -> None:
            await msg.respond(msg.data)

        await echo_nc.subscribe("bench.echo", cb=echo)
        await echo_nc.flush()
        req = ScopeRequest(user="alice", groups=("team-a",)).to_bytes()
        await nc.request(subjects.authz_scope, req, timeout=5)  # warm the cache
        for _ in range(20):
            await echo_nc.request("bench.echo", req, timeout=5)
        t0 = time.perf_counter()
        for _ in range(n):
            await echo_nc.request("bench.echo", req, timeout=5)
        floor = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        for _ in range(n):
            reply = ScopeReply.model_validate_json((await nc.request(subjects.authz_scope, req, timeout=5)).data)
        value = (time.perf_counter() - t0) / n
        assert reply.cached, "scope lookups should be served from the cache"
        emit("cached_scope_lookup", value * 1e3, "ms", "bare NATS request/reply round trip", floor * 1e3,
             "ratio <= 3")
    finally:
        await nc.close()
        await echo_nc.close()


async def bench_questions(stack: Stack, concurrency: int = 20, rounds: int = 3) -> None:
    token = stack.token("alice")
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=60, headers=headers) as client:
        floor_t = []
        for _ in range(50):
            t0 = time.perf_counter()
            (await client.get("/v1/whoami")).raise_for_status()
            floor_t.append(time.perf_counter() - t0)
        await client.post("/v1/query", json={"query": "what is failing in team-a?"})  # warm up

        async def one() -> tuple[float, int, str]:
            t0 = time.perf_counter()
            r = await client.post("/v1/query", json={"query": "what is failing in team-a?"})
            status = r.json().get("result", {}).get("status", "") if r.status_code == 200 else ""
            return time.perf_counter() - t0, r.status_code, status

        results: list[tuple[float, int, str]] = []
        for _ in range(rounds):
            results += await asyncio.gather(*(one() for _ in range(concurrency)))
    lat = sorted(r[0] for r in results)
    lost = sum(1 for r in results if r[1] != 200 or r[2] != "diagnosed")
    p50 = statistics.median(lat)
    p95 = lat[int(0.95 * (len(lat) - 1))]
    emit("question_p50_20_concurrent", p50 * 1e3, "ms", "authenticated GET /v1/whoami", statistics.median(floor_t) * 1e3,
         "p50 < 1000 ms, none lost", p95_ms=round(p95 * 1e3, 1), questions=len(results), lost=lost)


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="sleuth-bench-") as tmp:
        t0 = time.perf_counter()
        spec = StackSpec(snapshot=REPO / "scenarios" / "demo", state_dir=Path(tmp), ports=StackPorts.free(),
                         agents=2, extra_config={"gateway": {"rate_limit_capacity": 10000,
                                                             "rate_limit_refill_per_second": 1000,
                                                             # 20 concurrent questions from one user
                                                             "max_inflight_per_user": 0,
                                                             "max_requests_per_user": 0}},
                         nats_users={"bench": BENCH_USER})
        with Stack(spec) as stack:
            print(json.dumps({"figure": "stack_startup", "value": round(time.perf_counter() - t0, 2), "unit": "s"}),
                  flush=True)
            asyncio.run(bench_scope_lookup(stack))
            asyncio.run(bench_questions(stack))
