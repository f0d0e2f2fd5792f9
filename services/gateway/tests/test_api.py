"""The HTTP API against real nats-server and Valkey, with a fake authz-cache and agent on the bus."""

from __future__ import annotations

import asyncio
import json

import pytest

from sleuth_common.messages import InvalidateRequest

pytestmark = pytest.mark.connected

ALICE = {"Authorization": "Bearer t-alice"}
BOB = {"Authorization": "Bearer t-bob"}


def assert_error(resp, status: int, *words: str) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) >= {"error", "request_id"}, body
    assert body["request_id"] == resp.headers["x-request-id"]
    for word in words:
        assert word in body["error"], body
    return body


async def test_whoami_needs_a_valid_bearer_token(start_stack):
    async with start_stack() as s:
        assert_error(await s.client.get("/v1/whoami"), 401, "bearer token")
        assert_error(await s.client.get("/v1/whoami", headers={"Authorization": "Basic abc"}), 401)
        assert_error(await s.client.get("/v1/whoami", headers=s.auth("t-mallory")), 401, "not accepted")
        assert_error(await s.client.post("/v1/query", json={"query": "hi"}), 401)

        resp = await s.client.get("/v1/whoami", headers=ALICE)
        assert resp.status_code == 200
        body = resp.json()
        assert body["user"] == "alice" and body["groups"] == ["team-a"]
        assert body["request_id"] == resp.headers["x-request-id"]

        # Remembered for a short while: a second call does not ask authz-cache again.
        asked = s.authz.requests
        assert (await s.client.get("/v1/whoami", headers=ALICE)).json()["user"] == "alice"
        assert s.authz.requests == asked
        # ... and the cache never holds the token itself.
        cache = s.app.state.gateway.authenticator._cache
        assert cache and all("t-alice" not in key for key in cache)


async def test_request_id_is_reused_when_the_caller_sends_one(start_stack):
    async with start_stack() as s:
        resp = await s.client.get("/v1/whoami", headers={"X-Request-Id": "trace-123"})
        assert resp.headers["x-request-id"] == "trace-123"
        assert resp.json()["request_id"] == "trace-123"
        resp = await s.client.get("/nope")
        assert_error(resp, 404)


async def test_malformed_or_wrongly_shaped_bodies_are_400(start_stack):
    async with start_stack() as s:
        bad = await s.client.post("/v1/query", content=b"{not json", headers=ALICE)
        assert_error(bad, 400, "malformed JSON")
        assert_error(await s.client.post("/v1/query", json=["a list"], headers=ALICE), 400, "JSON object")
        assert_error(await s.client.post("/v1/query", json={"question": "x"}, headers=ALICE), 400, "query")
        assert_error(await s.client.post("/v1/query", json={"query": 42}, headers=ALICE), 400, "query")
        assert_error(await s.client.post("/v1/query", json={"query": "  "}, headers=ALICE), 400, "empty")
        assert_error(
            await s.client.post("/v1/query", json={"query": "x", "history": [{"role": "x"}]}, headers=ALICE),
            400,
        )
        assert s.agent.jobs == []


async def test_questions_over_the_limit_are_413(start_stack):
    async with start_stack(max_body_bytes=20_000) as s:
        body = assert_error(
            await s.client.post("/v1/query", json={"query": "x" * 4001}, headers=ALICE),
            413,
            "4000 characters",
        )
        assert "4001" in body["error"]
        big = json.dumps({"query": "x", "pad": "y" * 30_000})
        assert_error(await s.client.post("/v1/query", content=big, headers=ALICE), 413, "20000 bytes")
        assert s.agent.jobs == []


async def test_rate_limit_is_per_user_and_says_when_to_retry(start_stack):
    async with start_stack(rate_limit_capacity=3, rate_limit_refill_per_second=0.05) as s:
        for _ in range(3):
            assert (
                await s.client.post("/v1/query", json={"query": "help"}, headers=ALICE)
            ).status_code == 200
        resp = await s.client.post("/v1/query", json={"query": "help"}, headers=ALICE)
        body = assert_error(resp, 429, "too many questions")
        assert 1 <= int(resp.headers["retry-after"]) <= 21
        assert body["retry_after"] == int(resp.headers["retry-after"])
        # Bob has his own bucket.
        assert (await s.client.post("/v1/query", json={"query": "help"}, headers=BOB)).status_code == 200
        metrics = (await s.client.get("/metrics")).text
        assert "sleuth_gateway_rate_limited_total 1.0" in metrics
        assert 'sleuth_gateway_messages_total{outcome="rate_limited",surface="api"} 1.0' in metrics


async def test_no_authz_responder_is_a_quick_503(start_stack):
    async with start_stack(authz=False) as s:
        # The client's own timeout (15 s) is far above authz.request_timeout (1 s): a hang would fail here.
        resp = await asyncio.wait_for(s.client.get("/v1/whoami", headers=ALICE), 8)
        assert_error(resp, 503, "authorization is unavailable")
        resp = await asyncio.wait_for(s.client.post("/v1/query", json={"query": "hi"}, headers=ALICE), 8)
        assert_error(resp, 503, "authorization is unavailable")
        assert s.agent.jobs == []


async def test_valkey_down_is_a_clear_503_and_not_ready(start_stack, valkey):
    async with start_stack() as s:
        assert (await s.client.get("/readyz")).status_code == 200
        valkey.stop()
        resp = await asyncio.wait_for(
            s.client.post("/v1/query", json={"query": "what is failing?"}, headers=ALICE), 8
        )
        assert_error(resp, 503, "authorization is unavailable", "Redis")
        assert_error(await s.client.get("/v1/conversation", headers=ALICE), 503, "Redis")
        ready = await s.client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["ready"] is False
        assert ready.json()["redis"] == "unreachable" and ready.json()["nats"] == "ok"
        assert (await s.client.get("/healthz")).status_code == 200  # alive: a restart would not help
        assert s.agent.jobs == []


async def test_a_question_is_answered_with_its_evidence(start_stack):
    async with start_stack() as s:
        resp = await s.client.post(
            "/v1/query", json={"query": "why is api in team-a crashing?"}, headers=ALICE
        )
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["user"] == "alice"
        assert body["request_id"] == resp.headers["x-request-id"]
        assert body["answer"].startswith("## Problem")
        result = body["result"]
        assert result["status"] == "diagnosed"
        assert result["root_cause"]["family"] == "oom_killed"
        assert result["evidence"][0]["id"] == "E01"
        assert result["evidence"][0]["command"] == "kubectl get pods -n team-a -l app=api"
        assert "job_id" not in result and "user" not in result
        # Rendered server-side with raw HTML escaped.
        assert "<h2>Problem</h2>" in body["answer_html"]
        assert "<script>" not in body["answer_html"] and "&lt;script&gt;" in body["answer_html"]

        [job] = s.agent.jobs
        assert body["job_id"] == job.id
        assert job.origin == "api"
        assert job.requester.user == "alice" and job.requester.groups == ("team-a",)
        assert job.question == "why is api in team-a crashing?"
        assert job.reply_subject == s.subjects.jobs_done(job.id)
        # The caller's token never travels with the job.
        assert b"t-alice" not in s.agent.raw[0]
        assert "token" not in json.loads(s.agent.raw[0])

        metrics = (await s.client.get("/metrics")).text
        assert 'sleuth_gateway_requests_total{route="/v1/query",status="200"} 1.0' in metrics
        assert "sleuth_gateway_query_seconds_count 1.0" in metrics
        assert 'sleuth_gateway_messages_total{outcome="answered",surface="api"} 1.0' in metrics
        # The JOBS queue as the gateway reads it from JetStream: the agent's consumer, nothing waiting.
        assert "sleuth_jobs_consumer_up 1.0" in metrics
        assert "sleuth_jobs_pending 0.0" in metrics and "sleuth_jobs_oldest_seconds 0.0" in metrics


async def test_history_from_the_conversation_goes_with_the_next_job(start_stack):
    async with start_stack() as s:
        await s.client.post("/v1/query", json={"query": "what is failing in team-a?"}, headers=ALICE)
        await s.client.post("/v1/query", json={"query": "and why?"}, headers=ALICE)
        await s.client.post("/v1/query", json={"query": "fresh start", "history": []}, headers=ALICE)
        first, second, third = s.agent.jobs
        assert first.history == ()
        assert [t.role for t in second.history] == ["user", "assistant"]
        assert second.history[0].text == "what is failing in team-a?"
        assert third.history == ()


async def test_a_slow_investigation_is_a_504_with_the_job_id(start_stack):
    async with start_stack(agent="silent", answer_timeout=1.0) as s:
        resp = await s.client.post("/v1/query", json={"query": "what is failing?"}, headers=ALICE)
        body = assert_error(resp, 504, "did not finish in time")
        assert body["job_id"] == s.agent.jobs[0].id


async def test_stream_shows_progress_then_the_result(start_stack):
    async with start_stack() as s:
        events = await s.sse("t-alice", "what is failing in team-a?")
        names = [name for name, _ in events]
        assert names == ["accepted", "progress", "progress", "result"]
        accepted, plan, collect, result = (data for _, data in events)
        assert accepted["job_id"] == s.agent.jobs[0].id
        assert (plan["stage"], plan["message"]) == ("plan", "finding the target")
        assert collect["stage"] == "collect"
        assert result["user"] == "alice" and result["job_id"] == accepted["job_id"]
        assert result["result"]["evidence"][0]["id"] == "E01"
        assert "<h2>Root cause</h2>" in result["answer_html"]


async def test_stream_reports_a_timeout_as_an_error_event(start_stack):
    async with start_stack(agent="silent", answer_timeout=1.0) as s:
        events = await s.sse("t-alice", "what is failing?")
        assert [name for name, _ in events] == ["accepted", "error"]
        assert events[1][1]["status"] == 504
        assert "did not finish in time" in events[1][1]["error"]


async def test_conversations_are_per_user(start_stack):
    async with start_stack() as s:
        await s.client.post("/v1/query", json={"query": "alice asks about team-a"}, headers=ALICE)
        await s.client.post("/v1/query", json={"query": "bob asks about team-b"}, headers=BOB)
        alice = (await s.client.get("/v1/conversation", headers=ALICE)).json()
        bob = (await s.client.get("/v1/conversation", headers=BOB)).json()
        assert alice["user"] == "alice" and bob["user"] == "bob"
        assert [m["role"] for m in alice["messages"]] == ["user", "assistant"]
        assert alice["messages"][0]["text"] == "alice asks about team-a"
        assert alice["messages"][1]["evidence"][0]["id"] == "E01"
        assert "<h2>Problem</h2>" in alice["messages"][1]["html"]
        assert "alice" not in json.dumps(bob) and "team-a" not in json.dumps(bob["messages"])
        assert "bob asks" not in json.dumps(alice)

        assert (await s.client.delete("/v1/conversation", headers=BOB)).status_code == 200
        assert (await s.client.get("/v1/conversation", headers=BOB)).json()["messages"] == []
        assert len((await s.client.get("/v1/conversation", headers=ALICE)).json()["messages"]) == 2


async def test_help_and_refresh_are_commands_not_questions(start_stack):
    async with start_stack() as s:
        invalidations: list[InvalidateRequest] = []

        async def on_invalidate(msg):
            invalidations.append(InvalidateRequest.model_validate_json(msg.data))

        await s.nc.subscribe(s.subjects.authz_invalidate, cb=on_invalidate)
        await s.nc.flush()

        resp = await s.client.post("/v1/query", json={"query": "Help!"}, headers=ALICE)
        assert resp.status_code == 200 and resp.json()["command"] == "help"
        assert "refresh" in resp.json()["answer"]

        resp = await s.client.post("/v1/query", json={"query": "refresh, please"}, headers=ALICE)
        assert resp.status_code == 200 and resp.json()["command"] == "refresh"
        for _ in range(50):
            if invalidations:
                break
            await asyncio.sleep(0.02)
        assert invalidations == [InvalidateRequest(user="alice")]
        # After refresh the identity is checked again rather than taken from the cache.
        asked = s.authz.requests
        await s.client.get("/v1/whoami", headers=ALICE)
        assert s.authz.requests == asked + 1

        assert s.agent.jobs == []
        resp = await s.client.post("/v1/query", json={"query": "I need help with team-a"}, headers=ALICE)
        assert resp.status_code == 200 and "command" not in resp.json()
        assert len(s.agent.jobs) == 1


async def test_health_and_web_page(start_stack):
    async with start_stack() as s:
        health = await s.client.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "alive"
        ready = await s.client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["ready"] is True
        assert ready.json()["nats"] == "ok" and ready.json()["redis"] == "ok"
        page = await s.client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        for element_id in (
            "token",
            "signin",
            "whoami",
            "question",
            "ask",
            "progress",
            "answer",
            "evidence",
            "signout",
            "conversation",
        ):
            assert f'id="{element_id}"' in page.text
        assert "http://" not in page.text and "https://" not in page.text  # nothing from a CDN
        assert "script-src 'self'" in page.headers["content-security-policy"]
        for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
            asset = await s.client.get(f"/static/{name}")
            assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind)
            assert "http://" not in asset.text and "https://" not in asset.text
        assert (await s.client.get("/static/index.html")).status_code == 404


async def test_nats_restart_the_next_question_works(start_stack, nats_server):
    async with start_stack(auth_cache_ttl=0) as s:
        assert (await s.client.post("/v1/query", json={"query": "first"}, headers=ALICE)).status_code == 200
        nats_server.stop()
        resp = await asyncio.wait_for(s.client.post("/v1/query", json={"query": "during"}, headers=ALICE), 8)
        assert_error(resp, 503, "unavailable")
        assert (await s.client.get("/readyz")).json()["nats"] == "disconnected"
        nats_server.start()  # same port and data directory: the JOBS stream survives
        status = None
        for _ in range(100):
            resp = await s.client.post("/v1/query", json={"query": "after"}, headers=ALICE)
            status = resp.status_code
            if status == 200:
                break
            await asyncio.sleep(0.2)
        assert status == 200, resp.text
        assert [job.question for job in s.agent.jobs] == ["first", "after"]
