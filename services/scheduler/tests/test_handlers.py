"""The schedule commands' subscriber in memory (TestNatsBroker): a malformed command is refused
with a permanent error reply, a command before the scheduler is connected gets a temporary one, a
Redis outage is told in the reply. The same subscriber against a real nats-server: test_commands.py."""

from __future__ import annotations

import nats
from faststream.nats import TestNatsBroker

from sleuth.embedded import free_port
from sleuth_common.messages import ERROR_HEADER, BusErrorReply, ScheduleReply, ScheduleRequest
from sleuth_common.subjects import Subjects
from sleuth_scheduler import build
from sleuth_scheduler.clock import Clock
from sleuth_scheduler.commands import Commands
from sleuth_scheduler.store import Store

from .conftest import make_settings

S = Subjects("sleuth")


async def test_refused_starting_and_unavailable_are_answered() -> None:
    settings = make_settings("nats://127.0.0.1:1", f"redis://127.0.0.1:{free_port()}", None)
    svc = build(settings)
    req = ScheduleRequest(op="list", user="alice", groups=("team-a",), target="conversation:alice")
    try:
        async with TestNatsBroker(svc.broker) as br:
            malformed = await br.request(b"{not json", S.schedules("create"), timeout=5)
            assert malformed.headers[ERROR_HEADER] == "permanent" and b"malformed" in malformed.body

            starting = await br.request(req, S.schedules("list"), timeout=5)
            assert starting.headers[ERROR_HEADER] == "temporary"
            assert BusErrorReply.model_validate_json(starting.body).error == "the scheduler is starting"

            async def never(_: object) -> str:
                raise AssertionError("not run")

            svc.commands = Commands(Store(svc.redis, "sleuth"), settings, Clock(), nats.NATS(), never, svc.metrics)
            down = ScheduleReply.model_validate_json((await br.request(req, S.schedules("list"), timeout=5)).body)
            assert not down.ok and "unavailable" in down.text
            assert svc.metrics.registry.get_sample_value("sleuth_scheduler_commands_total",
                                                         {"op": "list", "ok": "false"}) == 1
    finally:
        await svc.redis.aclose()
