"""The report commands' subscriber in memory (TestNatsBroker): a request that does not validate,
or names another op than its subject, is refused with a permanent error reply; a command before
the reporter is connected gets a temporary one; a refusal of the commands is a reply. The same
subscriber against a real nats-server: test_reports.py."""

from __future__ import annotations

import nats
from faststream.nats import TestNatsBroker

from sleuth.embedded import free_port
from sleuth_common.messages import ERROR_HEADER, BusErrorReply, ReportReply, ReportRequest
from sleuth_common.subjects import Subjects
from sleuth_reporter import Settings, build
from sleuth_reporter.commands import Commands
from sleuth_reporter.store import Store

S = Subjects("sleuth")


async def test_refused_starting_and_answered() -> None:
    settings = Settings(nats={"url": "nats://127.0.0.1:1"}, redis={"url": f"redis://127.0.0.1:{free_port()}"})
    svc = build(settings)
    req = ReportRequest(op="run", user="alice", target="web:team-a")  # a channel with no members: refused
    try:
        async with TestNatsBroker(svc.broker) as br:
            malformed = await br.request(b"{}", S.reports("run"), timeout=5)
            assert malformed.headers[ERROR_HEADER] == "permanent"

            starting = await br.request(req, S.reports("run"), timeout=5)
            assert BusErrorReply.model_validate_json(starting.body).error == "the reporter is starting"
            assert starting.headers[ERROR_HEADER] == "temporary"

            nc = nats.NATS()
            svc.commands = Commands(nc, nc.jetstream(), Store(svc.redis, "sleuth", 60), settings, svc.metrics)
            wrong_op = await br.request(req, S.reports("status"), timeout=5)
            assert wrong_op.headers[ERROR_HEADER] == "permanent"
            assert "op 'run' sent on 'status'" in BusErrorReply.model_validate_json(wrong_op.body).error

            refused = ReportReply.model_validate_json((await br.request(req, S.reports("run"), timeout=5)).body)
            assert not refused.ok and "who reads this channel" in refused.text
            assert svc.metrics.registry.get_sample_value("sleuth_report_requests_total",
                                                         {"op": "run", "outcome": "refused"}) == 1
    finally:
        await svc.redis.aclose()
