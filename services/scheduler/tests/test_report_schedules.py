"""Report schedules (``schedule report every …``): at each run the scheduler asks the reporter
(``sleuth.reports.run``, request/reply) for a report of the channel instead of asking the agent a
question; the reporter posts the report itself, so a run fails only when the reporter refuses or
does not answer. Real nats-server and Valkey; a fake reporter answers on the subject."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from sleuth_common.messages import ReportReply, ReportRequest, ScheduleInfo
from sleuth_common.subjects import Subjects
from sleuth_scheduler.grammar import REPORT_QUESTION, GrammarError, parse

from .conftest import ALICE, BOB, CAROL, Running

pytestmark = pytest.mark.connected

CHANNEL = "web:team-a-alerts"
MONDAY_9 = datetime.fromisoformat("2026-03-30T09:00:00+00:00").timestamp()  # a Monday


def next_run(info: ScheduleInfo) -> float:
    return datetime.fromisoformat(info.next_runs[0]).timestamp()


@dataclass
class FakeReporter:
    """Answers ``sleuth.reports.run`` as ``behaviour`` says: ``ok``, ``refuse`` or ``silent``."""

    behaviour: str = "ok"

    def __post_init__(self) -> None:
        self.requests: list[ReportRequest] = []
        self.changed = asyncio.Event()

    async def on_msg(self, msg: Msg) -> None:
        req = ReportRequest.model_validate_json(msg.data)
        self.requests.append(req)
        self.changed.set()
        if self.behaviour == "ok":
            await msg.respond(ReportReply(text="Report started (`r1`)", id="r1").to_bytes())
        elif self.behaviour == "refuse":
            await msg.respond(ReportReply(ok=False, text="no members for this channel").to_bytes())

    async def wait(self, n: int, within: float = 10.0) -> list[ReportRequest]:
        async with asyncio.timeout(within):
            while len(self.requests) < n:
                self.changed.clear()
                await self.changed.wait()
        return self.requests


@pytest.fixture
def with_reporter(start_scheduler: Callable[..., Any]) -> Callable[..., Any]:
    @asynccontextmanager
    async def _start(behaviour: str = "ok", **scheduler: Any) -> AsyncIterator[tuple[Running, FakeReporter]]:
        async with start_scheduler(**{"publish_timeout": 1.0, **scheduler}) as r:
            reporter = FakeReporter(behaviour)
            nc: NatsClient = r.nc
            sub = await nc.subscribe(Subjects("sleuth").reports("run"), queue="reporter", cb=reporter.on_msg)
            await nc.flush()
            try:
                yield r, reporter
            finally:
                await sub.unsubscribe()

    return _start


@dataclass(frozen=True)
class Case:
    text: str
    spec: str | None
    """The timing understood; None = refused."""


CASES = [
    Case("report every monday at 09:00", "every monday at 09:00"),
    Case("REPORT every weekday", "every weekday at 09:00"),
    Case('report cron "0 8 * * 1"', 'cron "0 8 * * 1"'),
    Case("report every 6h", "every 6 hours"),
    Case("report every monday at 09:00 what is failing?", None),
    Case("report", None),
    Case("report report every day", None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_the_report_grammar(case: Case) -> None:
    if case.spec is None:
        with pytest.raises(GrammarError, match="report"):
            parse(case.text, now=MONDAY_9 - 3600)
        return
    parsed = parse(case.text, now=MONDAY_9 - 3600)
    assert (parsed.what, parsed.timing.text, parsed.question) == ("report", case.spec, REPORT_QUESTION)


def test_a_question_that_mentions_report_stays_a_question() -> None:
    parsed = parse("every day report on checkout", now=MONDAY_9)
    assert (parsed.what, parsed.question) == ("question", "report on checkout")


async def test_a_channel_report_schedule_asks_the_reporter(with_reporter: Callable[..., Any]) -> None:
    async with with_reporter() as (r, reporter):
        made = await r.ask("create", target=CHANNEL, members=(ALICE, CAROL), thread="root-1",
                           text="report every monday at 09:00")
        assert made.ok, made.text
        (s,) = made.schedules
        assert s.question == REPORT_QUESTION and s.spec == "every monday at 09:00"
        listed = await r.ask("list", target=CHANNEL, members=(ALICE, CAROL))
        assert listed.schedules[0].id == s.id and "best-practice report" in listed.text

        r.jump_to(next_run(s) + 1)
        await r.tick()
        (req,) = await reporter.wait(1)
        assert (req.op, req.user, req.groups, req.target, req.thread) == ("run", "alice", ("team-a",), CHANNEL, "root-1")
        assert set(req.members) == {ALICE, CAROL} and req.emails is None
        await asyncio.sleep(0.3)
        assert r.agent.jobs == [] and r.agent.posts == []  # the reporter posts the report, not the scheduler
        again = (await r.ask("list", target=CHANNEL)).schedules[0]
        assert again.failures == 0 and again.next_runs

        # someone joined: the next run's readers are the channel's now
        await r.ask("list", target=CHANNEL, members=(ALICE, CAROL, BOB))
        assert (await r.ask("run", id=s.id, target=CHANNEL)).text.endswith("the report will be posted here.")
        reqs = await reporter.wait(2)
        assert set(reqs[1].members) == {ALICE, BOB, CAROL}


async def test_a_private_report_schedule_sends_no_members(with_reporter: Callable[..., Any]) -> None:
    async with with_reporter() as (r, reporter):
        (s,) = (await r.ask("create", text='report cron "0 9 * * 1" in Europe/Berlin')).schedules
        r.jump_to(next_run(s) + 1)
        await r.tick()
        (req,) = await reporter.wait(1)
        assert (req.user, req.target, req.members) == ("alice", "conversation:alice", ())


@pytest.mark.parametrize("behaviour", ["refuse", "silent"])
async def test_a_refused_or_unanswered_report_is_a_failure(with_reporter: Callable[..., Any], behaviour: str) -> None:
    async with with_reporter(behaviour, max_failures=2) as (r, reporter):
        (s,) = (await r.ask("create", target=CHANNEL, members=(ALICE, CAROL), text="report every 6h")).schedules
        first = int(next_run(s))
        r.jump_to(first + 1)
        await r.tick()
        await reporter.wait(1)
        (post,) = await r.agent.wait_posts(1)
        reason = "refused the report" if behaviour == "refuse" else "did not answer"
        assert post.target == CHANNEL and reason in post.text and f"Schedule `{s.id}`" in post.text
        if behaviour == "refuse":
            assert "no members for this channel" in post.text
        assert (await r.ask("list", target=CHANNEL)).schedules[0].failures == 1

        r.jump_to(first + 6 * 3600 + 1)
        await r.tick()
        posts = await r.agent.wait_posts(3)
        assert posts[-1].meta["outcome"] == "disabled" and reason in posts[-1].text
        assert (await r.ask("list", target=CHANNEL)).schedules[0].disabled_reason
        assert r.agent.jobs == []
