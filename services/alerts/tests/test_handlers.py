"""The channel commands' subscriber in memory (TestNatsBroker): answered with the reply model, a
malformed command refused with a permanent error reply, a Redis outage told as such. The same
subscriber against a real nats-server: test_service.py and test_channel_readers.py."""

from __future__ import annotations

import pytest
from faststream.nats import TestNatsBroker

from sleuth.embedded import ValkeyServer, free_port
from sleuth_alerts import build
from sleuth_common.messages import ERROR_HEADER, AlertChannelReply, AlertChannelRequest, BusErrorReply
from sleuth_common.subjects import Subjects

from .conftest import make_settings

S = Subjects("sleuth")


async def test_a_malformed_command_is_refused_and_redis_down_is_told() -> None:
    alerts = build(make_settings("nats://127.0.0.1:1", f"redis://127.0.0.1:{free_port()}"))
    try:
        async with TestNatsBroker(alerts.broker) as br:
            refused = await br.request({"kind": "alerts.channel.request", "op": "sing", "channel": "x", "user": "a"},
                                       S.alerts_channels("sing"), timeout=5)
            assert refused.headers[ERROR_HEADER] == "permanent"
            assert "op (literal_error)" in BusErrorReply.model_validate_json(refused.body).error

            req = AlertChannelRequest(op="status", channel="team-a-alerts", user="alice", groups=("team-a",))
            down = AlertChannelReply.model_validate_json((await br.request(req, S.alerts_channels("status"),
                                                                           timeout=5)).body)
            assert not down.ok and "unavailable" in down.text
    finally:
        await alerts.redis.aclose()


@pytest.mark.connected
async def test_on_then_status_through_the_subscriber(valkey: ValkeyServer) -> None:
    alerts = build(make_settings("nats://127.0.0.1:1", valkey.url))
    try:
        async with TestNatsBroker(alerts.broker) as br:
            on = AlertChannelRequest(op="on", channel="team-a-alerts", user="alice", groups=("team-a",))
            reply = AlertChannelReply.model_validate_json((await br.request(on, S.alerts_channels("on"))).body)
            assert reply.ok and reply.marked_by == "alice"
            status = AlertChannelRequest(op="status", channel="team-a-alerts", user="bob", groups=("team-b",))
            reply = AlertChannelReply.model_validate_json((await br.request(status, S.alerts_channels("status"))).body)
            assert reply.run_as == "alice" and "alice" in reply.text
    finally:
        await alerts.redis.aclose()
