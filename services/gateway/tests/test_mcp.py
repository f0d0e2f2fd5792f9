"""``/mcp`` with the real MCP client SDK over HTTP against the gateway in-process (real nats-server
and Valkey, the fake authz-cache and agent of conftest.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from nats.aio.client import Client as NatsClient

from sleuth_common.messages import InvestigationJob, InvestigationResult, JobProgress
from sleuth_common.subjects import Subjects
from tests.snapshot_names import tenant_names

from .conftest import answer_with_progress, auth

pytestmark = pytest.mark.connected

QUESTION = "what is failing in team-a?"


@dataclass
class Received:
    """Everything an MCP client got from the server, as a leak test greps it."""

    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def on_message(self, message: Any) -> None:
        self.messages.append(message)

    async def on_response(self, response: httpx2.Response) -> None:
        self.statuses.append(response.status_code)

    def text(self) -> str:
        dumped = [r.model_dump(mode="json") if hasattr(r, "model_dump") else r for r in self.results]
        return json.dumps([self.progress, [repr(m) for m in self.messages], dumped])


@asynccontextmanager
async def mcp_client(url: str, token: str | None, received: Received | None = None) -> AsyncIterator[Client]:
    headers = auth(token) if token else {}
    received = received or Received()
    async with (
        httpx2.AsyncClient(
            headers=headers, timeout=30, event_hooks={"response": [received.on_response]}
        ) as http,
        Client(
            streamable_http_client(f"{url}/mcp", http_client=http), message_handler=received.on_message
        ) as client,
    ):
        yield client


async def ask(client: Client, received: Received, question: str, **args: Any) -> CallToolResult:
    result = await client.call_tool(
        "ask", {"question": question, **args}, progress_callback=received.on_progress
    )
    received.results.append(result)
    return result


def tool_error(result: CallToolResult, status: int, *words: str) -> dict[str, Any]:
    assert result.is_error, result
    body = result.structured_content
    assert body is not None and body["status"] == status and body["request_id"], body
    for word in words:
        assert word in body["error"] and word in result.content[0].text, body
    return body


async def test_ask_answers_like_v1_query_with_progress_on_the_way(start_stack):
    async with start_stack() as s:
        received = Received()
        async with mcp_client(s.url, "t-alice", received) as client:
            result = await ask(client, received, QUESTION)
        assert not result.is_error, result
        # The stages the web chat shows arrived while the investigation ran, before the answer.
        stages = [message for _, _, message in received.progress]
        assert stages == [
            "accepted: investigating",
            "plan: finding the target",
            "collect: reading pods and events",
        ]
        assert [p for p, _, _ in received.progress] == [1, 2, 3]

        mcp = result.structured_content
        assert mcp is not None and result.content[0].text == mcp["answer"]
        [job] = s.agent.jobs
        assert job.origin == "mcp" and job.question == QUESTION and job.clusters == ()
        assert job.requester.user == "alice" and job.requester.groups == ("team-a",)
        assert mcp["job_id"] == job.id and mcp["request_id"]
        assert b"t-alice" not in s.agent.raw[0]

        # The same question over the HTTP API: the same answer, result and user.
        api = (await s.client.post("/v1/query", json={"query": QUESTION}, headers=auth("t-alice"))).json()
        assert {k: mcp[k] for k in ("answer", "result", "user")} == {
            k: api[k] for k in ("answer", "result", "user")
        }
        assert set(mcp) == set(api) - {"answer_html"}
        assert "team-a" in mcp["answer"] and "team-b" not in received.text()
        # One conversation for both surfaces: the API question went with the MCP one as history.
        assert [t.text for t in s.agent.jobs[1].history][:1] == [QUESTION]

        metrics = (await s.client.get("/metrics")).text
        assert 'sleuth_gateway_mcp_tool_calls_total{outcome="ok",tool="ask"} 1.0' in metrics
        assert "sleuth_gateway_query_seconds_count 2.0" in metrics


async def test_whoami_is_v1_whoami_and_the_tool_list_is_ask_and_whoami(start_stack):
    async with start_stack() as s, mcp_client(s.url, "t-bob") as client:
        tools = await client.list_tools()
        assert sorted(t.name for t in tools.tools) == ["ask", "feedback", "whoami"]
        ask_tool = next(t for t in tools.tools if t.name == "ask")
        assert ask_tool.input_schema["required"] == ["question"] and ask_tool.output_schema

        result = await client.call_tool("whoami", {})
        assert not result.is_error, result
        me = result.structured_content
        assert me is not None and me["user"] == "bob" and me["groups"] == ["team-b"]
        assert json.loads(result.content[0].text) == me
        http = (await s.client.get("/v1/whoami", headers=auth("t-bob"))).json()
        assert {k: v for k, v in me.items() if k != "request_id"} == {
            k: v for k, v in http.items() if k != "request_id"
        }
        assert "team-a" not in json.dumps(me)


async def test_feedback_over_mcp_and_http_only_from_who_got_the_answer(start_stack):
    """The MCP tool ``feedback`` and ``POST /v1/feedback`` ask the agent with the caller the gateway
    authenticated; another person's attempt on the job reads exactly like an unknown job id (404)."""
    async with start_stack() as s, mcp_client(s.url, "t-alice") as alice:
        job_id = (await s.client.post("/v1/query", json={"query": QUESTION}, headers=auth("t-alice"))).json()["job_id"]
        taken = await alice.call_tool("feedback", {"job_id": job_id, "verdict": "down", "fixed_by": "raised the limit"})
        assert not taken.is_error and taken.structured_content["ok"] and taken.structured_content["job_id"] == job_id
        http = await s.client.post("/v1/feedback", json={"job_id": job_id, "verdict": "up"}, headers=auth("t-alice"))
        assert http.status_code == 200 and http.json()["ok"] and http.json()["request_id"]
        assert [(f.user, f.groups, f.verdict, f.fixed_by, f.origin) for f in s.agent.feedback] == [
            ("alice", ("team-a",), "down", "raised the limit", "mcp"), ("alice", ("team-a",), "up", "", "api")]

        async def bob(job: str) -> tuple[int, str]:
            r = await s.client.post("/v1/feedback", json={"job_id": job, "verdict": "down"}, headers=auth("t-bob"))
            return r.status_code, r.json()["error"].replace(job, "<id>")

        assert await bob(job_id) == await bob("f" * 32) and (await bob(job_id))[0] == 404
        async with mcp_client(s.url, "t-bob") as other:
            refused = await other.call_tool("feedback", {"job_id": job_id, "fixed_by": "nothing"})
        assert refused.is_error and refused.structured_content["status"] == 404
        for bad in ({"job_id": job_id}, {"job_id": job_id, "verdict": "sideways"}, {"job_id": "../x", "verdict": "up"},
                    {"job_id": job_id, "fixed_by": "x" * 501}, {"job_id": job_id, "fixed_by": "a\x1b[2Jb"}, {}):
            r = await s.client.post("/v1/feedback", json=bad, headers=auth("t-alice"))
            assert r.status_code == 400, (bad, r.text)
        assert len(s.agent.feedback) == 2  # nobody else's and nothing malformed reached the agent
        assert (await s.client.post("/v1/feedback", json={"job_id": job_id, "verdict": "up"})).status_code == 401


async def test_a_quiet_investigation_keeps_sending_progress(start_stack):
    async def slow(nc: NatsClient, subjects: Subjects, job: InvestigationJob) -> None:
        await asyncio.sleep(0.7)
        await answer_with_progress(nc, subjects, job)

    async with start_stack(mcp={"heartbeat": 0.2}) as s:
        s.agent.behaviour = slow
        received = Received()
        async with mcp_client(s.url, "t-alice", received) as client:
            result = await ask(client, received, QUESTION)
        assert not result.is_error, result
        stages = [message or "" for _, _, message in received.progress]
        quiet = [m for m in stages if m.startswith("working: still investigating")]
        assert len(quiet) >= 2, stages
        assert stages.index(quiet[0]) < stages.index("plan: finding the target")
        numbers = [p for p, _, _ in received.progress]
        assert numbers == sorted(set(numbers)), "progress increases with every notification"


async def test_missing_bad_and_service_tokens_are_refused_before_mcp(start_stack):
    async with start_stack() as s:
        hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        for headers, status in [
            ({}, 401),
            (auth("t-mallory"), 401),
            ({"Authorization": "Basic abc"}, 401),
            (auth("t-sleuth-reader"), 403),
        ]:
            resp = await s.client.post(
                "/mcp", json=hello, headers={**headers, "Accept": "application/json, text/event-stream"}
            )
            assert resp.status_code == status, resp.text
            assert set(resp.json()) == {"error", "request_id"}
            if status == 401:
                assert resp.headers["www-authenticate"].startswith("Bearer")
        for token in (None, "t-mallory"):
            received = Received()
            with pytest.RaisesGroup(MCPError, flatten_subgroups=True):  # the client does not connect
                async with mcp_client(s.url, token, received):
                    pass
            assert received.statuses and set(received.statuses) == {401}  # discover, then initialize
        # The API's body limits and methods apply.
        big = {**hello, "params": {"pad": "x" * 70_000}}
        assert (await s.client.post("/mcp", json=big, headers=auth("t-alice"))).status_code == 413
        as_json = {**auth("t-alice"), "Content-Type": "application/json"}
        assert (await s.client.post("/mcp", content=b"[1, 2]", headers=as_json)).status_code == 400
        assert (await s.client.post("/mcp", content=b"[1, 2]", headers=auth("t-alice"))).status_code == 415
        not_rpc = await s.client.post("/mcp", content=b'{"": []}', headers=as_json)
        assert not_rpc.status_code == 400 and "\n" not in not_rpc.json()["error"]
        assert "JSON-RPC" in not_rpc.json()["error"]
        resp = await s.client.get("/mcp", headers=auth("t-alice"))
        assert resp.status_code == 405 and resp.headers["allow"] == "POST"
        rebound = await s.client.post("/mcp", json=hello, headers={**auth("t-alice"), "Host": "evil.example"})
        assert rebound.status_code == 400 and "unknown host" in rebound.json()["error"]
        assert s.agent.jobs == []


async def test_limits_inside_a_call_are_tool_errors_not_crashes(start_stack):
    async with start_stack(
        agent="silent",
        answer_timeout=1.0,
        max_inflight_per_user=1,
        rate_limit_capacity=2,
        rate_limit_refill_per_second=0.05,
    ) as s:
        received = Received()
        async with mcp_client(s.url, "t-alice", received) as client:
            first = asyncio.create_task(ask(client, received, "what is failing in team-a?"))
            for _ in range(100):
                if s.agent.jobs:
                    break
                await asyncio.sleep(0.01)
            busy = await ask(client, received, "and in the other deployment?")
            tool_error(busy, 429, "in flight")
            tool_error(await first, 504, "did not finish in time")
            tool_error(await ask(client, received, "and now?"), 429, "too many questions", "try again")
            # The session goes on: the next call is answered.
            assert (await client.call_tool("whoami", {})).structured_content["user"] == "alice"
        assert len(s.agent.jobs) == 1
        metrics = (await s.client.get("/metrics")).text
        assert 'sleuth_gateway_mcp_tool_calls_total{outcome="limited",tool="ask"} 2.0' in metrics
        assert 'sleuth_gateway_mcp_tool_calls_total{outcome="timeout",tool="ask"} 1.0' in metrics
        assert 'sleuth_gateway_refused_total{reason="inflight"} 1.0' in metrics


async def test_kill_switch_answers_403_and_leaves_the_api_alone(start_stack):
    async with start_stack(mcp={"enabled": False}) as s:
        resp = await s.client.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=auth("t-alice")
        )
        assert resp.status_code == 403
        assert "gateway.mcp.enabled" in resp.json()["error"] and resp.json()["request_id"]
        received = Received()
        with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
            async with mcp_client(s.url, "t-alice", received):
                pass
        assert received.statuses and set(received.statuses) == {403}
        assert (await s.client.get("/v1/whoami", headers=auth("t-alice"))).status_code == 200


def _scoped(names: set[str]) -> Any:
    """A fake agent that answers like the real one: a question naming a namespace outside the
    requester's groups gets the access answer; bob's own answers name his workloads."""

    async def behave(nc: NatsClient, subjects: Subjects, job: InvestigationJob) -> None:
        await nc.publish(
            subjects.jobs_progress(job.id),
            JobProgress(
                job_id=job.id, stage="scope", message="access resolved: 1 cluster(s), 1 namespace(s)"
            ).to_bytes(),
        )
        foreign = [ns for ns in ("team-a", "team-b") if ns in job.question and ns not in job.requester.groups]
        if foreign:
            result = InvestigationResult(
                job_id=job.id,
                user=job.requester.user,
                status="denied",
                answer_markdown=f"You cannot read namespace {foreign[0]} with your access; `access` shows what you can.",
            )
        else:
            result = InvestigationResult(
                job_id=job.id,
                user=job.requester.user,
                status="diagnosed",
                answer_markdown="Seen: " + ", ".join(sorted(names)),
            )
        await nc.publish(job.reply_subject, result.to_bytes())

    return behave


async def test_alice_asking_about_team_b_gets_the_access_answer_and_no_names(
    start_stack, demo_snapshot: Path
):
    team_b = tenant_names(demo_snapshot, "team-b")
    async with start_stack() as s:
        s.agent.behaviour = _scoped(team_b)
        # bob's conversation is full of team-b names ...
        async with mcp_client(s.url, "t-bob") as bob:
            seen = await bob.call_tool("ask", {"question": "why is billing-api failing in team-b?"})
            assert "ledger-config" in seen.content[0].text
        # ... alice names a team-b workload, and a cluster, and asks for her access too.
        received = Received()
        async with mcp_client(s.url, "t-alice", received) as client:
            received.results.append(await client.list_tools())
            result = await ask(client, received, "why is ledger failing in team-b?", cluster="demo")
            received.results.append(await client.call_tool("whoami", {}))
        assert result.structured_content["result"]["status"] == "denied"
        assert "access" in result.content[0].text
        alice_job = s.agent.jobs[-1]
        assert alice_job.requester.groups == ("team-a",) and alice_job.clusters == ("demo",)
        assert "billing-api" not in alice_job.model_dump_json()
        # She named one workload; nothing else of team-b reached her client.
        leaked = sorted(n for n in team_b - {"ledger"} if n in received.text())
        assert not leaked, leaked
        assert received.progress


async def test_a_whole_message_command_is_answered_by_the_command_runner(start_stack):
    async with start_stack() as s, mcp_client(s.url, "t-alice") as client:
        result = await client.call_tool("ask", {"question": "help, please"})
        assert not result.is_error, result
        assert result.structured_content["command"] == "help" and result.structured_content["result"] is None
        assert "refresh" in result.content[0].text
        assert s.agent.jobs == []
        conversation = (await s.client.get("/v1/conversation", headers=auth("t-alice"))).json()["messages"]
        assert [m["role"] for m in conversation] == ["user", "assistant"]


async def test_a_client_that_goes_away_gives_its_question_slot_back(start_stack):
    async with start_stack(agent="silent", answer_timeout=20.0, max_inflight_per_user=1) as s:
        gw = s.app.state.gateway
        received = Received()
        async with mcp_client(s.url, "t-alice", received) as client:
            call = asyncio.create_task(ask(client, received, QUESTION))
            for _ in range(200):
                if s.agent.jobs and received.progress:
                    break
                await asyncio.sleep(0.01)
            assert await gw.redis.zcard(gw.inflight.key("alice")) == 1
            call.cancel()
        for _ in range(200):
            if await gw.redis.zcard(gw.inflight.key("alice")) == 0:
                break
            await asyncio.sleep(0.02)
        assert await gw.redis.zcard(gw.inflight.key("alice")) == 0
        metrics = (await s.client.get("/metrics")).text
        assert 'sleuth_gateway_mcp_tool_calls_total{outcome="cancelled",tool="ask"} 1.0' in metrics
