"""The webhook, the batcher and the channel commands against real nats-server and Valkey."""

from __future__ import annotations

import asyncio
import json

import pytest

from sleuth_alerts import build
from sleuth_common.messages import AlertChannelReply, AlertChannelRequest

from .conftest import alert, payload

pytestmark = pytest.mark.connected


async def test_webhook_refuses_what_it_cannot_store_safely(start_alerts):
    async with start_alerts() as s:
        r = await s.post("nope", payload(alert()))
        assert r.status_code == 404 and "unknown alert route" in r.json()["error"]
        assert (await s.post("secured", payload(alert()), token=None)).status_code == 401
        assert (await s.post("secured", payload(alert()), token="wrong")).status_code == 401
        assert (await s.post("secured", payload(alert()), token="s3cret")).status_code == 200

        r = await s.client.post(
            "/v1/alertmanager/team-a",
            content=b"{not json",
            headers={"Authorization": "Bearer tok-team-a", "Content-Type": "application/json"},
        )
        assert r.status_code == 400 and "malformed JSON" in r.json()["error"]
        r = await s.post("team-a", {**payload(alert()), "version": "3"})
        assert r.status_code == 400 and "version" in r.json()["error"]
        r = await s.post("team-a", payload({"status": "firing", "labels": {"severity": "critical"}}))
        assert r.status_code == 400 and "alertname" in r.json()["error"]
        big = payload(*(alert(pod=f"p-{i}-" + "x" * 200) for i in range(6000)))
        assert (await s.post("team-a", big)).status_code == 413

        r = await s.post("team-a", payload(alert()))
        assert r.status_code == 200 and r.json() == {
            "status": "stored",
            "route": "team-a",
            "alerts": 1,
            "accepted": 1,
            "dropped": 0,
            "duplicate": False,
            "request_id": r.headers["x-request-id"],
        }
        # Alertmanager retrying the same notification is stored once.
        assert (await s.post("team-a", payload(alert()))).json()["duplicate"] is True

        assert (await s.client.get("/healthz")).json() == {"status": "alive"}
        assert (await s.client.get("/readyz")).json() == {"ready": True, "nats": "ok", "redis": "ok"}
        metrics = (await s.client.get("/metrics")).text
        assert 'sleuth_alerts_webhook_requests_total{route="team-a",status="200"}' in metrics
        assert 'sleuth_alerts_webhook_requests_total{route="unknown",status="404"}' in metrics


async def test_one_window_one_investigation_per_cluster_and_cooldown(start_alerts):
    async with start_alerts() as s:
        body = payload(
            alert(),
            alert(pod="payments-worker-5c6d7e8f9a-mt4zq"),
            alert(pod="frontend-6b8d9f7c4e-hv7lz", cluster="prod-1"),
            alert(name="Watchdog", pod="", namespace="monitoring"),
            alert(pod="reports-1", severity="info"),
            alert(pod="old-1", status="resolved"),
        )
        assert (await s.post("team-a", body)).status_code == 200
        posts = await s.bus.wait_posts(2)
        await asyncio.sleep(0.5)
        assert len(s.bus.jobs) == 1, "prod-1 is outside alice's scope: not investigated"
        job = s.bus.jobs[0]
        assert job.origin == "alert" and job.unattended and job.requester.user == "alice"
        assert job.requester.groups == ("team-a",) and job.clusters == ("demo",)
        assert {a.labels["pod"] for a in job.alerts} == {
            "checkout-api-7d9f8c6b5d-x2k4p",
            "payments-worker-5c6d7e8f9a-mt4zq",
        }
        assert "on cluster demo" in job.question and "do these alerts share a cause" in job.question.lower()
        by_cluster = {p.meta["cluster"]: p for p in posts}
        demo = by_cluster["demo"]
        assert demo.target == "web:team-a-alerts" and demo.id == f"alert-{job.id}"
        assert "cluster **demo**" in demo.text and "KubePodCrashLooping" in demo.text
        assert "oom_killed" in demo.text and "E01" in demo.text
        assert json.loads(demo.meta["readers"]) == ["alice|team-a"]  # no channel members configured
        outside = by_cluster["prod-1"].text
        assert "outside **alice**" in outside and "frontend" not in outside

        # The same alerts again within the cooldown: ride along, nothing new, nothing posted.
        again = payload(alert(), alert(pod="payments-worker-5c6d7e8f9a-mt4zq"), alert(pod="new-pod-1"))
        again["groupKey"] = "other"  # a different notification (not a stream duplicate)
        assert (await s.post("team-a", again)).status_code == 200
        await s.bus.wait_posts(3)
        assert len(s.bus.jobs) == 2 and [a.labels["pod"] for a in s.bus.jobs[1].alerts] == ["new-pod-1"]
        assert "already investigated" in s.bus.posts[2].text

        metrics = (await s.client.get("/metrics")).text
        for disp, n in (("queued", 4), ("cooldown", 2), ("ignored", 1), ("low_severity", 1), ("resolved", 1)):
            assert f'sleuth_alerts_received_total{{disposition="{disp}"}} {n}.0' in metrics, disp


async def test_max_per_window_lists_the_rest(start_alerts):
    async with start_alerts(max_per_window=2) as s:
        await s.post("team-a", payload(*(alert(pod=f"api-{i}") for i in range(5))))
        (post,) = await s.bus.wait_posts(1)
        assert len(s.bus.jobs[0].alerts) == 2
        assert "over `max_per_window`, 3" in post.text and "api\\-4" in post.text


async def test_unanswered_batch_is_reported_once(start_alerts):
    async with start_alerts(answer=False, investigation_timeout=0.5, answer_grace=0.2) as s:
        await s.post("team-a", payload(alert()))
        (post,) = await s.bus.wait_posts(1, within=45)
        assert "did not finish" in post.text
        await asyncio.sleep(0.5)
        assert len(s.bus.posts) == 1


async def test_route_without_identity_lists_alerts(start_alerts):
    async with start_alerts() as s:
        await s.post("nobody", payload(alert()))
        (post,) = await s.bus.wait_posts(1)
        assert post.target == "web:lost" and "say `alerts on`" not in post.text
        assert "nobody said `alerts on`" in post.text and not s.bus.jobs


async def test_alerts_on_investigates_as_the_marker(start_alerts):
    async with start_alerts() as s:

        async def ask(op: str, user: str, groups: tuple[str, ...]) -> AlertChannelReply:
            req = AlertChannelRequest(op=op, channel="lost", user=user, groups=groups)
            msg = await s.bus.nc.request(
                s.alerts.settings.prefix + f".alerts.channels.{op}", req.to_bytes(), timeout=5
            )
            return AlertChannelReply.model_validate_json(msg.data)

        on = await ask("on", "bob", ("team-b",))
        assert on.marked_by == "bob" and "fits every member of this channel" in on.text.lower()
        status = await ask("status", "alice", ("team-a",))
        assert "bob" in status.text and "nobody" in status.text and status.run_as == "bob"
        await s.post("nobody", payload(alert(pod="inventory-db-1", namespace="team-b")))
        await s.bus.wait_posts(1)
        assert s.bus.jobs[0].requester.user == "bob" and s.bus.jobs[0].requester.groups == ("team-b",)
        off = await ask("off", "alice", ("team-a",))
        assert "alice" in off.text and "bob" in off.text and off.run_as == ""


async def test_a_restart_loses_no_window_and_posts_nothing_twice(start_alerts):
    async with start_alerts(window=1.0, ack_wait=2.0) as s:
        await s.post("team-a", payload(alert()))
        await s.alerts.stop()  # the window is open in Redis; nobody runs it
        await s.alerts.broker.stop()
        s.alerts = build(s.settings)
        await s.alerts.start()
        (post,) = await s.bus.wait_posts(1)
        assert "KubePodCrashLooping" in post.text and post.id == f"alert-{s.bus.jobs[0].id}"
        await asyncio.sleep(1.0)
        assert len(s.bus.posts) == 1 and len(s.bus.jobs) == 1
