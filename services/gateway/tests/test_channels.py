"""Web-chat channels: posts from the CHAT stream stored once, members-only reading, alerts commands."""

from __future__ import annotations

import asyncio

import pytest

from sleuth_common.messages import AlertChannelReply, AlertChannelRequest, ChatPost

pytestmark = pytest.mark.connected

ALICE = {"Authorization": "Bearer t-alice"}
BOB = {"Authorization": "Bearer t-bob"}
CHANNELS = [
    {"name": "team-a-alerts", "members": ["group:team-a"]},
    {"name": "ops", "members": ["user:carol"]},
]


async def _messages(s, headers, channel="team-a-alerts"):
    return await s.client.get(f"/v1/channels/{channel}/messages", headers=headers)


async def test_posts_are_stored_once_and_shown_to_members_only(start_stack):
    async with start_stack(channels=CHANNELS) as s:
        assert (await s.client.get("/v1/channels", headers=ALICE)).json()["channels"] == ["team-a-alerts"]
        assert (await s.client.get("/v1/channels", headers=BOB)).json()["channels"] == []

        js = s.nc.jetstream()
        first = ChatPost(
            id="alert-b1", target="web:team-a-alerts", text="**Alerts on cluster demo**", origin="alert"
        )
        second = ChatPost(id="alert-b2", target="web:team-a-alerts", text="second")
        await js.publish(s.subjects.chat_outbound, first.to_bytes(), headers={"Nats-Msg-Id": "m1"})
        # The same post again under another stream id (a republish after a restart): stored once.
        await js.publish(s.subjects.chat_outbound, first.to_bytes(), headers={"Nats-Msg-Id": "m2"})
        await js.publish(s.subjects.chat_outbound, second.to_bytes(), headers={"Nats-Msg-Id": "m3"})
        for _ in range(100):
            body = (await _messages(s, ALICE)).json()
            if len(body["messages"]) >= 2:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        msgs = (await _messages(s, ALICE)).json()["messages"]
        assert [m["id"] for m in msgs] == ["alert-b1", "alert-b2"]
        assert msgs[0]["author"] == "sleuth" and msgs[0]["created_at"] > 0
        assert "<strong>Alerts on cluster demo</strong>" in msgs[0]["html"]

        r = await _messages(s, BOB)
        nope = await _messages(s, ALICE, "nope")
        # Not a member and no such channel look the same: a non-member learns nothing.
        assert r.status_code == nope.status_code == 404 and "not a member" in r.json()["error"]
        assert r.json()["error"].replace("team-a-alerts", "X") == nope.json()["error"].replace("nope", "X")
        assert (await _messages(s, {})).status_code == 401


async def test_alerts_commands_in_a_channel_ask_the_alerts_service(start_stack):
    async with start_stack(channels=CHANNELS) as s:
        seen: list[AlertChannelRequest] = []

        async def on_request(msg):
            req = AlertChannelRequest.model_validate_json(msg.data)
            seen.append(req)
            await msg.respond(AlertChannelReply(text=f"{req.user} turned alerts {req.op}").to_bytes())

        await s.nc.subscribe("sleuth.alerts.channels.*", cb=on_request)
        await s.nc.flush()
        r = await s.client.post(
            "/v1/channels/team-a-alerts/messages", json={"text": "Alerts on, please"}, headers=ALICE
        )
        assert r.status_code == 200, r.text
        assert [m["author"] for m in r.json()["messages"]] == ["alice", "sleuth"]
        assert seen == [
            AlertChannelRequest(op="on", channel="web:team-a-alerts", user="alice", groups=("team-a",))
        ]
        msgs = (await _messages(s, ALICE)).json()["messages"]
        assert [m["text"] for m in msgs] == ["Alerts on, please", "alice turned alerts on"]

        r = await s.client.post(
            "/v1/channels/team-a-alerts/messages", json={"text": "alerts on"}, headers=BOB
        )
        assert r.status_code == 404 and len(seen) == 1
        # In the private conversation it is explained, not run.
        r = await s.client.post("/v1/query", json={"query": "alerts off"}, headers=ALICE)
        assert r.json()["command"] == "alerts" and "channel" in r.json()["answer"] and len(seen) == 1
