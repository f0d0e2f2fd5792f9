"""Answers that survive a restart and retries (sleuth_gateway.pending): the same request id is the
same job for the same person and nothing for anyone else; RESULTS keeps one answer per job for
its max age; a gateway that starts resumes what was pending, and nothing when nothing was.
Real nats-server and Valkey; the whole stack with a SIGKILLed gateway is in tests/test_e2e_stack.py."""

from __future__ import annotations

import asyncio
import time

import nats
import pytest
from nats.js.errors import NotFoundError
from redis.asyncio import Redis

from sleuth.embedded import NatsServer, ValkeyServer
from sleuth_common.config import NatsSettings
from sleuth_common.health import RetryLog
from sleuth_common.messages import InvestigationResult
from sleuth_common.streams import ensure_streams
from sleuth_common.subjects import Subjects
from sleuth_gateway.bus import Bus
from sleuth_gateway.pending import PendingJob, PendingStore, Resumer

from .conftest import auth

pytestmark = pytest.mark.connected

QUESTION = "what is failing in team-a?"


async def test_the_same_request_id_is_the_same_job_for_its_asker_and_nothing_for_anyone_else(start_stack):
    async with start_stack() as stack:
        rid = "retry-me-1"
        first = await stack.client.post("/v1/query", json={"query": QUESTION},
                                        headers={**auth("t-alice"), "X-Request-Id": rid})
        assert first.status_code == 200, first.text
        job = first.json()["job_id"]

        again = await stack.client.post("/v1/query", json={"query": QUESTION},
                                        headers={**auth("t-alice"), "X-Request-Id": rid})
        assert again.status_code == 200 and again.json()["job_id"] == job
        assert again.json()["answer"] == first.json()["answer"]
        events = await stack.sse("t-alice", QUESTION, request_id=rid)
        assert events[0] == ("accepted", {"job_id": job, "user": "alice", "request_id": rid, "resumed": True})
        assert events[-1][0] == "result" and events[-1][1]["job_id"] == job
        assert len(stack.agent.jobs) == 1  # one investigation for three requests

        other = await stack.client.post("/v1/query", json={"query": "and team-b?"},
                                        headers={**auth("t-alice"), "X-Request-Id": rid})
        assert other.status_code == 409 and "another question" in other.json()["error"]

        # Bob replaying alice's request id (and her question): his own job, scoped to him.
        bob = await stack.client.post("/v1/query", json={"query": QUESTION},
                                      headers={**auth("t-bob"), "X-Request-Id": rid})
        assert bob.status_code == 200, bob.text
        assert bob.json()["user"] == "bob" and bob.json()["job_id"] != job
        assert job not in bob.text and "team-a" not in bob.text
        assert [j.requester.user for j in stack.agent.jobs] == ["alice", "bob"]

        conv = (await stack.client.get("/v1/conversation", headers=auth("t-alice"))).json()["messages"]
        assert [m["role"] for m in conv] == ["user", "assistant"]  # asked once, answered once
        assert conv[1]["job_id"] == job


async def test_results_keep_one_answer_per_job_until_their_max_age(nats_server: NatsServer):
    subjects = Subjects("keep")
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await ensure_streams(js, subjects, "results", results_max_age=1.0)
        body = InvestigationResult(job_id="j1", user="alice", status="healthy", answer_markdown="fine").to_bytes()
        acks = [await js.publish(subjects.jobs_done("j1"), body, headers={"Nats-Msg-Id": "j1"}) for _ in range(2)]
        assert [a.duplicate for a in acks] == [None, True]
        assert (await js.stream_info(subjects.stream_results)).state.messages == 1
        kept = await js.get_last_msg(subjects.stream_results, subjects.jobs_done("j1"))
        assert kept.data == body
        t0 = time.monotonic()
        with pytest.raises(NotFoundError):
            async with asyncio.timeout(5):
                while True:
                    await js.get_last_msg(subjects.stream_results, subjects.jobs_done("j1"))
                    await asyncio.sleep(0.1)
        assert time.monotonic() - t0 > 0.5  # expired by age, not gone at once
    finally:
        await nc.close()


async def test_a_starting_gateway_resumes_what_was_pending_once_and_nothing_else(
    nats_server: NatsServer, valkey: ValkeyServer
):
    subjects = Subjects("resume")
    redis = Redis.from_url(valkey.url)
    bus = Bus(NatsSettings(url=nats_server.url), subjects, request_timeout=1.0, publish_timeout=2.0)
    bus.prepare(RetryLog("NATS", nats_server.url, 1.0))
    await bus.connect()  # makes RESULTS
    store = PendingStore(redis, "resume:gateway", results_max_age=60.0)
    watched: list[str] = []
    delivered: list[tuple[str, str | None]] = []

    late_watched = asyncio.Event()

    async def watch(job_id: str):
        watched.append(job_id)
        w = await bus.watch(job_id, kept=True)
        if job_id == "j-late":
            late_watched.set()
        return w

    async def deliver(job: PendingJob, result: InvestigationResult | None) -> None:
        delivered.append((job.job_id, result.answer_markdown if result else None))

    try:
        resumer = Resumer(store, watch, {"conversation": deliver})
        assert await resumer.start() == 0
        assert watched == [] and delivered == [] and await redis.keys("*") == []

        # Two questions were running: one answered while no gateway ran (kept), one not yet.
        answered = PendingJob("j-answered", "alice", ("team-a",), time.time() + 5, surface="conversation")
        late = PendingJob("j-late", "alice", ("team-a",), time.time() + 5, surface="conversation")
        elsewhere = PendingJob("j-mm", "bob", (), time.time() + 5, surface="mattermost")  # not run here
        for job in (answered, late, elsewhere):
            await store.record(job)
        result = InvestigationResult(job_id="j-answered", user="alice", status="healthy", answer_markdown="kept")
        await bus.nats.jetstream().publish(subjects.jobs_done("j-answered"), result.to_bytes())

        resumer = Resumer(store, watch, {"conversation": deliver})
        assert await resumer.start() == 2
        late_result = result.model_copy(update={"job_id": "j-late", "answer_markdown": "live"})
        await asyncio.wait_for(late_watched.wait(), 5)
        await bus.nats.publish(subjects.jobs_done("j-late"), late_result.to_bytes())
        async with asyncio.timeout(5):
            await resumer.wait()
        assert sorted(delivered) == [("j-answered", "kept"), ("j-late", "live")]
        assert await store.pending() == ["j-mm"]  # left for a replica that runs Mattermost

        assert await Resumer(store, watch, {"conversation": deliver}).start() == 0  # delivered: not again
    finally:
        await bus.close()
        await redis.aclose()
