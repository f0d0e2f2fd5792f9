"""Several replicas at once: every occurrence fires exactly once.

- Two real ``python -m sleuth_scheduler`` processes, their clocks sped up 100× (the test-only
  ``clock_speed``/``clock_epoch`` settings, the same in both), over a few hundred occurrences;
  one of them is killed (SIGKILL) and started again half-way. Counted: occurrences that never
  reached the agent (missed), and ones that reached it twice (duplicates).
- 1,000 schedules due in the same minute, two in-process replicas at real speed: how late each
  job is (from its occurrence plus its schedule's jitter to the agent receiving it). Printed, and
  held only to a generous bound (``make bench`` is where timing is judged).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
import yaml

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_common.messages import Requester, ScheduleReply, ScheduleRequest
from sleuth_common.subjects import Subjects
from sleuth_scheduler import Clock, build
from sleuth_scheduler.timing import jitter_of

from .conftest import FakeAgent, Keys, make_settings

pytestmark = [pytest.mark.connected, pytest.mark.timeout(120)]

SPEED = 200.0
"""Service seconds per real second in the two-process test: a 5-minute schedule fires every 1.5 s."""


async def ask(nc: Any, req: ScheduleRequest) -> ScheduleReply:
    msg = await nc.request(Subjects("sleuth").schedules(req.op), req.to_bytes(), timeout=10)
    return ScheduleReply.model_validate_json(msg.data)


def occurrence_of(job_id: str) -> tuple[str, int]:
    _, sid, occ = job_id.split("-")
    return sid, int(occ)


class Process:
    """One ``python -m sleuth_scheduler --config FILE`` with its own health port."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config, self.log, self.port = config, log, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        env = {**os.environ, "SLEUTH_SCHEDULER__PORT": str(self.port)}
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "sleuth_scheduler", "--config", str(self.config)],
                                         stdout=out, stderr=subprocess.STDOUT, env=env)
        return self

    async def ready(self, within: float = 20.0) -> None:
        async with asyncio.timeout(within), httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}") as c:
            while True:
                assert self.proc is not None and self.proc.poll() is None, self.log.read_text()[-2000:]
                with contextlib.suppress(httpx.HTTPError):
                    if (await c.get("/readyz")).status_code == 200:
                        return
                await asyncio.sleep(0.1)

    async def counters(self) -> dict[str, float]:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}") as c:
            text = (await c.get("/metrics")).text
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith('sleuth_scheduler_runs_total{outcome="'):
                out[line.split('"')[1]] = float(line.split()[-1])
        return out

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextlib.asynccontextmanager
async def agent_on(url: str) -> AsyncIterator[FakeAgent]:
    nc = await nats.connect(url)
    agent = FakeAgent(nc, Subjects("sleuth"))
    try:
        yield await agent.start()
    finally:
        await agent.stop()
        await nc.close()


async def test_two_processes_fire_every_occurrence_once(nats_server: NatsServer, valkey: ValkeyServer, keys: Keys,
                                                        tmp_path: Path) -> None:
    epoch = time.time()
    cfg = {
        "prefix": "sleuth",
        "nats": {"url": nats_server.url, "retry_interval": 0.2},
        "redis": {"url": valkey.url, "retry_interval": 0.2},
        "logging": {"level": "INFO"},
        "identity": {"signing_key_file": str(keys.private), "signing_key_env": ""},
        # service seconds, but the tick is real (0.02 s = 4 s at this speed)
        "scheduler": {"tick": 0.02, "clock_speed": SPEED, "clock_epoch": epoch, "claim_timeout": 150,
                      "max_per_user": 100},
    }
    config = tmp_path / "scheduler.yaml"
    config.write_text(yaml.safe_dump(cfg))
    clock = Clock(speed=SPEED, epoch=epoch)
    a, b = Process(config, tmp_path / "a.log"), Process(config, tmp_path / "b.log")
    async with agent_on(nats_server.url) as agent:
        try:
            a.start()
            b.start()
            await asyncio.gather(a.ready(), b.ready())
            owners = [Requester(user=f"user{i}", groups=("team-a",)) for i in range(60)]
            made = await asyncio.gather(*(ask(agent.nc, ScheduleRequest(
                op="create", user=o.user, groups=o.groups, target=f"conversation:{o.user}",
                text="every 5 minutes what is failing?")) for o in owners))
            assert all(m.ok for m in made), [m.text for m in made if not m.ok]
            schedules = {m.schedules[0].id: m.schedules[0] for m in made}
            await asyncio.sleep(4)
            before_kill = await b.counters()
            b.kill()  # mid-run: whatever it had claimed or published is another replica's now
            b.start()
            await b.ready()
            await asyncio.sleep(4)
            end = clock()
            await asyncio.sleep(1.5)  # answers of the last runs in flight
            counters = [before_kill, await a.counters(), await b.counters()]
        finally:
            for p in (a, b):
                p.terminate()
            for p in (a, b):
                p.stop()

    received = Counter(j.id for j in agent.jobs)
    fired: dict[str, set[int]] = {sid: set() for sid in schedules}
    for job in received:
        sid, occ = occurrence_of(job)
        fired[sid].add(occ)
    jitter = 30.0  # the default
    anchors = {sid: int(datetime.fromisoformat(s.next_runs[0]).timestamp()) for sid, s in schedules.items()}
    # every occurrence due (time + jitter) a little before the end must have fired by now
    expected = {sid: {t for t in range(anchor, int(end), 300) if t + jitter_of(sid, jitter) < end - 30}
                for sid, anchor in anchors.items()}
    missed = sum(len(expected[sid] - fired[sid]) for sid in schedules)
    wrong = sum(1 for sid, occs in fired.items() for t in occs if t < anchors[sid] or (t - anchors[sid]) % 300)
    duplicates = sum(n - 1 for n in received.values() if n > 1)
    republished = sum(c.get("duplicate", 0) for c in counters)
    occurrences = sum(len(v) for v in expected.values())
    print(f"\ntwo scheduler processes, 60 schedules every 5 min at {SPEED:g}x, one killed and restarted: "
          f"{occurrences} occurrences due, {len(received)} jobs received, missed {missed}, duplicates {duplicates} "
          f"(publishes the JOBS stream dropped as already stored: {republished:g})")
    assert occurrences >= 200
    assert (missed, duplicates, wrong) == (0, 0, 0)
    posts = Counter(p.id for p in agent.posts)
    assert all(n == 1 for n in posts.values())
    assert len(posts) >= occurrences


async def test_lateness_with_1000_schedules_due_together(nats_server: NatsServer, valkey: ValkeyServer,
                                                         keys: Keys) -> None:
    jitter = 5.0
    clock = Clock()
    # the schedules are made at hh:mm:01, so they all first run at hh:(mm+1):00 + 5 min
    now = clock()
    clock.offset += (math.floor(now / 60) + 1) * 60 + 1 - now
    settings = make_settings(nats_server.url, valkey.url, keys, jitter=jitter, tick=1.0, max_per_user=5)
    replicas = [build(settings.model_copy(update={"scheduler": settings.scheduler.model_copy(
        update={"port": free_port()})}), clock=clock) for _ in range(2)]
    async with agent_on(nats_server.url) as agent:
        try:
            for r in replicas:
                await r.start()
            owners = [f"u{i:04d}" for i in range(1000)]
            gate = asyncio.Semaphore(50)

            async def make(user: str) -> ScheduleReply:
                async with gate:
                    return await ask(agent.nc, ScheduleRequest(op="create", user=user, target=f"conversation:{user}",
                                                               text="every 5 minutes what is failing?"))

            made = await asyncio.gather(*(make(u) for u in owners))
            assert all(m.ok for m in made)
            ids = {m.schedules[0].id for m in made}
            firsts = {m.schedules[0].next_runs[0] for m in made}
            assert len(firsts) == 1, firsts
            first = datetime.fromisoformat(firsts.pop()).timestamp()
            clock.offset += first - 1 - clock()  # a second before the first is due
            await agent.wait_jobs(1000, within=40)
            await asyncio.sleep(0.5)
        finally:
            for r in replicas:
                await r.stop()
                await r.broker.stop()

    late = sorted(t + clock.offset - (occurrence_of(j.id)[1] + jitter_of(occurrence_of(j.id)[0], jitter))
                  for t, j in agent.received)
    assert len(agent.jobs) == 1000 and {occurrence_of(j.id)[0] for j in agent.jobs} == ids
    p50, p99 = late[len(late) // 2], late[int(len(late) * 0.99) - 1]
    print(f"\nlateness of 1,000 schedules due in the same minute (2 replicas, tick 1 s, jitter {jitter:g} s): "
          f"p50 {p50:.3f} s, p99 {p99:.3f} s, max {late[-1]:.3f} s")
    assert late[0] > -0.1  # none early
    assert p99 < 15.0
