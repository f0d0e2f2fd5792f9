"""Backpressure: with more jobs waiting for an agent than ``gateway.max_queue_depth`` (or waiting
longer than ``max_queue_wait``), new questions get 503 "Sleuth is busy" with Retry-After; nothing
is published or stored for them, commands and retries of accepted questions still work, and a
queue that cannot be read refuses nothing. Real nats-server and Valkey; jobs pile up because the
fake agent is stopped (its durable consumer stays, as a stuck agent's would)."""

from __future__ import annotations

import asyncio

import pytest

from .conftest import FakeAgent, Stack, pile_up, seen_by_gateway
from .test_mcp import Received, ask, mcp_client, tool_error

pytestmark = pytest.mark.connected

ALICE = {"Authorization": "Bearer t-alice"}
QUESTION = "what is failing in team-a?"


async def _pile(s: Stack, n: int) -> None:
    """Stop the agent, leave ``n`` jobs in JOBS that nobody takes, and wait until the gateway (from
    then on reading the queue afresh for every question) sees them."""
    await pile_up(s.nc, s.subjects, s.agent, n)
    await seen_by_gateway(s.app.state.gateway, n)


async def _jobs_in_stream(s: Stack) -> int:
    return (await s.nc.jetstream().stream_info(s.subjects.stream_jobs)).state.messages


def _refused(resp, seconds: int) -> None:
    assert resp.status_code == 503, resp.text
    assert resp.headers["retry-after"] == str(seconds)
    body = resp.json()
    assert body["request_id"] == resp.headers["x-request-id"]
    assert "Sleuth is busy" in body["error"] and f"try again in {seconds} s" in body["error"], body
    assert body["retry_after"] == seconds


async def test_a_full_queue_refuses_new_questions_and_nothing_else(start_stack):
    async with start_stack(max_queue_depth=2, busy_retry_after=7) as s:
        queue = s.app.state.gateway.metrics.jobs_queue
        queue.min_interval = 60.0  # one reading for every question here, whatever the machine's speed
        first = await s.client.post("/v1/query", json={"query": QUESTION}, headers={**ALICE, "X-Request-Id": "q-1"})
        assert first.status_code == 200, first.text
        reading = queue.state
        assert reading is not None and reading.pending == 0
        assert (await s.client.post("/v1/query", json={"query": QUESTION}, headers=ALICE)).status_code == 200
        assert queue.state is reading  # questions share readings: no JetStream request of their own

        await _pile(s, 3)
        stored = len((await s.client.get("/v1/conversation", headers=ALICE)).json()["messages"])
        _refused(await s.client.post("/v1/query", json={"query": "and now?"}, headers=ALICE), 7)
        _refused(await s.client.post("/v1/query?stream=1", json={"query": "and now?"}, headers=ALICE), 7)
        async with mcp_client(s.url, "t-alice") as client:
            received = Received()
            body = tool_error(await ask(client, received, "and now?"), 503, "Sleuth is busy", "try again in 7 s")
            assert body["retry_after"] == 7
        # Nothing published, nothing remembered for the refused questions.
        assert await _jobs_in_stream(s) == 3
        assert len((await s.client.get("/v1/conversation", headers=ALICE)).json()["messages"]) == stored

        # Commands still answer; the retry of a question accepted before gets its answer.
        help_ = await s.client.post("/v1/query", json={"query": "help"}, headers=ALICE)
        assert help_.status_code == 200 and help_.json()["command"] == "help"
        again = await s.client.post("/v1/query", json={"query": QUESTION}, headers={**ALICE, "X-Request-Id": "q-1"})
        assert again.status_code == 200 and again.json()["job_id"] == first.json()["job_id"]

        metrics = (await s.client.get("/metrics")).text
        assert 'sleuth_gateway_messages_total{outcome="busy",surface="api"} 2.0' in metrics
        assert 'sleuth_gateway_messages_total{outcome="busy",surface="mcp"} 1.0' in metrics
        assert 'sleuth_gateway_mcp_tool_calls_total{outcome="busy",tool="ask"} 1.0' in metrics
        assert "sleuth_jobs_pending 3.0" in metrics and "sleuth_gateway_queue_unchecked_total 0.0" in metrics

        # The queue drained: questions are taken again.
        await s.nc.jetstream().purge_stream(s.subjects.stream_jobs)
        agent = await FakeAgent(s.nc, s.subjects).start()
        try:
            assert (await s.client.post("/v1/query", json={"query": "and now?"}, headers=ALICE)).status_code == 200
        finally:
            await agent.stop()


async def test_questions_waiting_too_long_for_an_agent_refuse_new_ones(start_stack):
    async with start_stack(max_queue_depth=0, max_queue_wait=0.5) as s:
        await _pile(s, 1)
        while (state := await s.app.state.gateway.jobs_queue()) is None or state.pending_oldest <= 0.5:
            assert state is not None and state.pending == 1
            await asyncio.sleep(0.05)
        _refused(await s.client.post("/v1/query", json={"query": QUESTION}, headers=ALICE), 10)
        assert await _jobs_in_stream(s) == 1
        metrics = (await s.client.get("/metrics")).text
        waited = next(line for line in metrics.splitlines() if line.startswith("sleuth_jobs_pending_oldest_seconds "))
        assert float(waited.split()[1]) > 0.5


async def test_a_queue_that_cannot_be_read_refuses_nothing(start_stack):
    async with start_stack(max_queue_depth=1) as s:
        await _pile(s, 3)
        # No consumer to read (no agent ever started): the gateway fails open, and counts it.
        await s.nc.jetstream().delete_consumer(s.subjects.stream_jobs, s.subjects.agent_durable)
        async with s.client.stream("POST", "/v1/query?stream=1", json={"query": QUESTION}, headers=ALICE) as resp:
            assert resp.status_code == 200
            first = await anext(resp.aiter_text())
            assert first.startswith("event: accepted"), first
        assert await _jobs_in_stream(s) == 4
        metrics = (await s.client.get("/metrics")).text
        assert "sleuth_gateway_queue_unchecked_total 1.0" in metrics and "sleuth_jobs_consumer_up 0.0" in metrics
        assert 'sleuth_gateway_messages_total{outcome="busy",surface="api"} 0.0' in metrics
