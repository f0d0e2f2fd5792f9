"""Schedule and report commands through the gateway (real nats-server and Valkey; the scheduler
and reporter played here on their request subjects): what each surface sends — who asks, where
later posts go, who reads them — and where a schedule's answers land (the asker's private
conversation, once)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nats.aio.msg import Msg

from sleuth_common.messages import ChatPost, Requester
from sleuth_common.messages.reports import ReportReply, ReportRequest
from sleuth_common.messages.schedules import ScheduleReply, ScheduleRequest
from sleuth_gateway.commands import parse_command

from .conftest import Stack, auth

pytestmark = pytest.mark.connected

ALICE, BOB = auth("t-alice"), auth("t-bob")
CHANNELS = [{"name": "team-a-ops", "members": ["group:team-a", "user:carol"]}]
QUESTION = "schedule every weekday at 09:00 in Europe/Berlin what is failing in team-a?"


class FakeServices:
    """The scheduler and the reporter: record each request, answer with a line naming it."""

    def __init__(self) -> None:
        self.schedules: list[ScheduleRequest] = []
        self.reports: list[ReportRequest] = []

    async def start(self, stack: Stack) -> FakeServices:
        async def on_schedule(msg: Msg) -> None:
            req = ScheduleRequest.model_validate_json(msg.data)
            self.schedules.append(req)
            await msg.respond(ScheduleReply(text=f"scheduler: {req.op} {req.id or req.text}").to_bytes())

        async def on_report(msg: Msg) -> None:
            req = ReportRequest.model_validate_json(msg.data)
            self.reports.append(req)
            await msg.respond(ReportReply(text="Report started: it will be posted here.", id="r1").to_bytes())

        await stack.nc.subscribe(stack.subjects.schedules_all, cb=on_schedule)
        await stack.nc.subscribe(stack.subjects.reports_all, cb=on_report)
        await stack.nc.flush()
        return self


async def ask(stack: Stack, who: dict[str, str], text: str) -> str:
    resp = await stack.client.post("/v1/query", json={"query": text}, headers=who)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["answer"])


def test_schedule_commands_are_parsed_from_the_whole_message() -> None:
    cmd = parse_command(QUESTION)
    assert cmd is not None and (cmd.name, cmd.arg) == ("schedule", QUESTION.removeprefix("schedule "))
    assert parse_command('@sleuth schedule cron "0 9 * * 1-5" what broke?').arg == 'cron "0 9 * * 1-5" what broke?'  # type: ignore[union-attr]
    assert parse_command("schedule report every monday at 09:00").arg == "report every monday at 09:00"  # type: ignore[union-attr]
    for op, name in [("run", "run"), ("pause", "pause"), ("resume", "resume"), ("unschedule", "delete")]:
        assert parse_command(f"{op} abcd2345ef please") == type(cmd)(name, "abcd2345ef")
    assert parse_command("Schedules?") == type(cmd)("schedules")
    assert parse_command("report now") == type(cmd)("report")
    for question in ["what is the schedule of the backup job?", "schedule for backups is wrong?",
                     "run the migration again?", "pause the rollout", "report on team-a please"]:
        assert parse_command(question) is None, question


async def test_schedules_are_off_unless_the_deployment_runs_a_scheduler(start_stack: Any) -> None:
    async with start_stack() as stack:
        services = await FakeServices().start(stack)
        assert "not switched on" in await ask(stack, ALICE, QUESTION)
        assert "not switched on" in await ask(stack, ALICE, "report")
        assert "schedule every" not in await ask(stack, ALICE, "help")
        assert services.schedules == [] and services.reports == []


async def test_a_schedule_made_in_private_answers_in_private(start_stack: Any) -> None:
    async with start_stack(schedules=True, reports=True, channels=CHANNELS) as stack:
        services = await FakeServices().start(stack)
        assert "schedule every weekday" in await ask(stack, ALICE, "help")
        assert await ask(stack, ALICE, QUESTION) == f"scheduler: create {QUESTION.removeprefix('schedule ')}"
        assert await ask(stack, ALICE, "run abcd2345ef") == "scheduler: run abcd2345ef"
        [made, ran] = services.schedules
        assert (made.user, made.groups, made.target, made.members) == ("alice", ("team-a",), "conversation:alice", ())
        assert (ran.op, ran.id, ran.target) == ("run", "abcd2345ef", "conversation:alice")

        # In a web-chat channel: the channel, and everyone who reads it (the asker first).
        resp = await stack.client.post("/v1/channels/team-a-ops/messages", json={"text": "schedules"}, headers=ALICE)
        assert resp.status_code == 200 and resp.json()["messages"][1]["text"] == "scheduler: list "
        listed = services.schedules[2]
        assert listed.target == "web:team-a-ops"
        assert set(listed.members) == {Requester(user="alice", groups=("team-a",)),
                                       Requester(user="", groups=("team-a",)), Requester(user="carol")}
        assert "posted here" in await ask(stack, ALICE, "report")
        assert services.reports[0].target == "conversation:alice"

        # A run's answer for alice's private conversation is shown to alice (once), never to bob.
        post = ChatPost(id="s-abcd2345ef-1", target="conversation:alice", origin="schedule",
                        text="⏰ Schedule `abcd2345ef`: checkout-api is OOM-killed", meta={"schedule": "abcd2345ef"})
        js = stack.nc.jetstream()
        for _ in range(2):
            await js.publish(stack.subjects.chat_outbound, post.to_bytes())
        async with asyncio.timeout(5):
            while True:
                mine = (await stack.client.get("/v1/conversation", headers=ALICE)).json()["messages"]
                if any("checkout-api" in m["text"] for m in mine):
                    break
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        mine = (await stack.client.get("/v1/conversation", headers=ALICE)).json()["messages"]
        assert sum("checkout-api" in m["text"] for m in mine) == 1
        theirs = (await stack.client.get("/v1/conversation", headers=BOB)).json()["messages"]
        assert "checkout-api" not in json.dumps(theirs)


async def test_a_dead_scheduler_is_a_clear_answer(start_stack: Any) -> None:
    async with start_stack(schedules=True) as stack:
        resp = await stack.client.post("/v1/query", json={"query": QUESTION}, headers=ALICE)
        assert resp.status_code == 503
        assert "scheduler service is not running" in resp.json()["error"]
