"""A schedule's runs, end to end on the bus with a moved clock: the job the agent receives (origin,
unattended, requester, audience, a signed identity naming the readers), the post with its header
and readers, one run per occurrence, outages, failures that disable, and a claim whose replica
died."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
import pytest

from sleuth_common.channels import audience_claims
from sleuth_common.messages import ScheduleInfo
from sleuth_scheduler import SCHEDULER_ISSUER, build
from sleuth_scheduler.firing import job_id

from .conftest import ALICE, CAROL, Keys, Running

pytestmark = pytest.mark.connected

CHANNEL = "web:team-a-alerts"


def next_run(info: ScheduleInfo) -> float:
    return datetime.fromisoformat(info.next_runs[0]).timestamp()


def counter(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


async def scraped(r: Running) -> str:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{r.settings.scheduler.port}") as client:
        return (await client.get("/metrics")).text


async def test_a_channel_run_job_and_post(start_scheduler: Callable[..., Any], keys: Keys) -> None:
    async with start_scheduler() as r:
        (s,) = (await r.ask("create", target=CHANNEL, members=(ALICE, CAROL), thread="root-1",
                            text="every 5 minutes what is failing in team-a?")).schedules
        at = next_run(s)
        r.jump_to(at + 1)
        await r.tick()
        (job,) = await r.agent.wait_jobs(1)
        assert job.id == job_id(s.id, int(at))
        assert (job.origin, job.unattended, job.requester, job.audience) == ("schedule", True, ALICE, (CAROL,))
        assert (job.question, job.chat_target) == ("what is failing in team-a?", CHANNEL)
        assert job.reply_subject == f"sleuth.jobs.done.{job.id}"
        assert job.deadline > time.time() + 60
        who = keys.verifier().verify(job.identity)
        assert (who.issuer, who.user, set(who.groups), who.job) == (SCHEDULER_ISSUER, "alice", {"team-a"}, job.id)
        assert set(who.members) == set(audience_claims(job.audience)) == {"carol|platform-admins"}

        (post,) = await r.agent.wait_posts(1)
        assert post.id == f"schedule-{job.id}" and post.target == CHANNEL and post.origin == "schedule"
        head, _, body = post.text.partition("\n")
        assert head == f"⏰ Schedule `{s.id}` (every 5 minutes UTC): what is failing in team-a?"
        assert "checkout-api restarts [E01]" in body and "oom_killed" in body
        assert json.loads(post.meta["readers"]) == ["alice|team-a", "carol|platform-admins"]
        assert (post.meta["schedule"], post.meta["thread"], post.meta["job"]) == (s.id, "root-1", job.id)

        # the same moment again, and again on the next tick: nothing more
        await r.tick()
        await r.tick()
        await asyncio.sleep(0.3)
        assert len(r.agent.jobs) == 1
        # the next occurrence, once
        r.jump_to(at + 300 + 1)
        await r.tick()
        await r.tick()
        await r.agent.wait_jobs(2)
        await asyncio.sleep(0.3)
        assert [j.id for j in r.agent.jobs] == [job_id(s.id, int(at)), job_id(s.id, int(at) + 300)]
        text = await scraped(r)
        assert counter(text, 'sleuth_scheduler_runs_total{outcome="published"}') == 2
        assert counter(text, 'sleuth_scheduler_runs_total{outcome="diagnosed"}') == 2
        assert counter(text, "sleuth_scheduler_schedules_active") == 1


async def test_a_private_run_is_fitted_to_its_owner_alone(start_scheduler: Callable[..., Any], keys: Keys) -> None:
    async with start_scheduler() as r:
        (s,) = (await r.ask("create", text="every day at 09:00 in Europe/Berlin how is checkout?")).schedules
        r.jump_to(next_run(s) + 1)
        await r.tick()
        (job,) = await r.agent.wait_jobs(1)
        assert job.audience == () and job.chat_target == "conversation:alice"
        assert keys.verifier().verify(job.identity).members == ()
        (post,) = await r.agent.wait_posts(1)
        assert json.loads(post.meta["readers"]) == ["alice|team-a"]
        assert post.text.startswith(f"⏰ Schedule `{s.id}` (every day at 09:00 Europe/Berlin): how is checkout?")


async def test_an_outage_within_grace_runs_the_missed_occurrence_once(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        (s,) = (await r.ask("create", text="every 5 minutes q")).schedules
        first = int(next_run(s))
        # nobody ticked for 3 occurrences; the newest is 100 s old (grace 900 s)
        r.jump_to(first + 2 * 300 + 100)
        await r.tick()
        await r.tick()
        (job,) = await r.agent.wait_jobs(1)
        await asyncio.sleep(0.3)
        assert len(r.agent.jobs) == 1 and job.id == job_id(s.id, first + 600)
        assert counter(await scraped(r), 'sleuth_scheduler_runs_total{outcome="skipped"}') == 2
        r.jump_to(first + 900 + 1)
        await r.tick()
        await r.agent.wait_jobs(2)
        assert r.agent.jobs[1].id == job_id(s.id, first + 900)


async def test_an_outage_longer_than_grace_skips_and_counts(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        (s,) = (await r.ask("create", text="every day at 09:00 q")).schedules
        first = int(next_run(s))
        r.jump_to(first + 3600)  # an hour late; grace is 15 minutes
        await r.tick()
        await asyncio.sleep(0.3)
        assert r.agent.jobs == []
        assert counter(await scraped(r), 'sleuth_scheduler_runs_total{outcome="skipped"}') == 1
        listed = (await r.ask("list")).schedules[0]
        assert next_run(listed) == first + 86400
        r.jump_to(first + 86400 + 5)
        await r.tick()
        (job,) = await r.agent.wait_jobs(1)
        assert job.id == job_id(s.id, first + 86400)


async def test_restarted_after_an_outage_runs_it_once(start_scheduler: Callable[..., Any]) -> None:
    """The replica is down over an occurrence and comes back within grace (a new process: the
    state is all in Redis)."""
    async with start_scheduler() as r:
        (s,) = (await r.ask("create", text="every 5 minutes q")).schedules
        first = int(next_run(s))
        await r.scheduler.stop()
        await r.scheduler.broker.stop()
        r.scheduler = build(r.settings, clock=r.clock)
        r.jump_to(first + 120)
        await r.scheduler.start()
        (job,) = await r.agent.wait_jobs(1)  # the start's own first tick
        assert job.id == job_id(s.id, first)
        await r.agent.wait_posts(1)


async def test_failed_runs_disable_the_schedule_and_tell_its_owner(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler(behaviour="error") as r:
        (s,) = (await r.ask("create", target=CHANNEL, members=(ALICE, CAROL), text="every 5 minutes q")).schedules
        first = int(next_run(s))
        for i in range(3):
            r.jump_to(first + i * 300 + 1)
            await r.tick()
            await r.agent.wait_posts(i + 1 + (1 if i == 2 else 0))
        notice = r.agent.posts[-1]
        assert notice.meta["outcome"] == "disabled" and notice.meta["owner"] == "alice"
        assert f"I stopped your schedule `{s.id}`" in notice.text and "@alice" in notice.text
        assert "ended with an error" in notice.text and f"resume {s.id}" in notice.text
        shown = (await r.ask("list")).schedules[0]
        assert shown.disabled_reason and shown.failures == 3 and shown.next_runs == ()
        text = await scraped(r)
        assert counter(text, "sleuth_scheduler_disabled_total") == 1
        assert counter(text, 'sleuth_scheduler_runs_total{outcome="error"}') == 3
        r.jump_to(first + 3 * 300 + 1)
        await r.tick()
        await asyncio.sleep(0.3)
        assert len(r.agent.jobs) == 3  # disabled: nothing runs

        r.agent.behaviour = "diagnosed"
        resumed = await r.ask("resume", id=s.id)
        assert resumed.ok and resumed.schedules[0].disabled_reason == "" and resumed.schedules[0].failures == 0
        r.jump_to(next_run(resumed.schedules[0]) + 1)
        await r.tick()
        await r.agent.wait_jobs(4)


async def test_no_answer_by_the_deadline_is_a_failure(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler(behaviour="silent", max_failures=2) as r:
        (s,) = (await r.ask("create", text="every 5 minutes q")).schedules
        first = int(next_run(s))
        r.jump_to(first + 1)
        await r.tick()
        await r.agent.wait_jobs(1)
        r.jump_to(first + 120 + 30 + 2)  # investigation_timeout + answer_grace
        await r.tick()
        (post,) = await r.agent.wait_posts(1)
        assert post.id == f"schedule-{r.agent.jobs[0].id}"
        assert "did not finish: no answer arrived before the deadline" in post.text
        r.jump_to(first + 300 + 1)
        await r.tick()
        r.jump_to(first + 300 + 152)
        await r.tick()
        posts = await r.agent.wait_posts(3)
        assert "no answer arrived before the deadline" in posts[-1].text and posts[-1].meta["outcome"] == "disabled"


async def test_run_now_and_pause(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        (s,) = (await r.ask("create", text="every day at 09:00 q")).schedules
        assert (await r.ask("pause", id=s.id)).ok
        reply = await r.ask("run", id=s.id)
        assert reply.ok and "now" in reply.text and "private conversation" in reply.text
        (job,) = await r.agent.wait_jobs(1)
        assert job.id.startswith(f"s-{s.id}-r")
        await r.agent.wait_posts(1)
        r.jump_to(next_run(s) + 1)  # paused: its time passes without a run
        await r.tick()
        await asyncio.sleep(0.3)
        assert len(r.agent.jobs) == 1


async def test_a_claim_whose_replica_died_is_published_by_another(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        (s,) = (await r.ask("create", text="every 5 minutes q")).schedules
        store, firer = r.scheduler.store, r.scheduler.firer
        assert store is not None and firer is not None
        at = int(next_run(s))
        r.jump_to(at + 1)
        stored = await store.get(s.id)
        assert stored is not None
        # a replica claims the occurrence, then dies before publishing
        run = firer._run(stored, at, manual=False)
        assert await store.claim(stored, at, at + 300, at + 300, skipped=0, run=run, now=r.clock())
        await r.tick()
        await asyncio.sleep(0.3)
        assert r.agent.jobs == []  # claimed: no other replica fires it again
        r.jump_to(at + 1 + 30 + 1)  # claim_timeout later
        await r.tick()
        (job,) = await r.agent.wait_jobs(1)
        assert job.id == job_id(s.id, at)
        await r.agent.wait_posts(1)


async def test_health_and_readiness(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r, httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{r.settings.scheduler.port}") as client:
        assert (await client.get("/healthz")).json() == {"status": "alive"}
        ready = await client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["nats"] == "ok" and ready.json()["redis"] == "ok"
        assert "sleuth_scheduler_lateness_seconds_bucket" in (await client.get("/metrics")).text
