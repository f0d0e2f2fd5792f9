"""The diagnostics subscriber in memory (TestNatsBroker): answered once the agent is connected,
a temporary error reply before, a permanent one for a malformed request. Against a real
nats-server, MCP servers and model: test_diagnostics_connected.py."""

from __future__ import annotations

from faststream.nats import TestNatsBroker

from sleuth.embedded import free_port
from sleuth_agent import Settings, build
from sleuth_agent.diagnostics import DiagnosticsResponder
from sleuth_common.messages import ERROR_HEADER, AgentDiagnosticsReply, AgentDiagnosticsRequest, BusErrorReply
from sleuth_common.subjects import Subjects

S = Subjects("sleuth")


async def test_starting_malformed_and_answered() -> None:
    settings = Settings(nats={"url": "nats://127.0.0.1:1"}, redis={"url": f"redis://127.0.0.1:{free_port()}"})
    agent = build(settings)
    try:
        async with TestNatsBroker(agent.broker) as br:
            starting = await br.request(AgentDiagnosticsRequest(user="carol"), S.agent_diagnostics, timeout=5)
            assert starting.headers[ERROR_HEADER] == "temporary"
            assert BusErrorReply.model_validate_json(starting.body).error == "the agent is starting"

            malformed = await br.request({"user": ["carol"]}, S.agent_diagnostics, timeout=5)
            assert malformed.headers[ERROR_HEADER] == "permanent"

            agent.diagnostics = DiagnosticsResponder(settings, agent.metrics, None)
            msg = await br.request(AgentDiagnosticsRequest(user="carol"), S.agent_diagnostics, timeout=5)
            reply = AgentDiagnosticsReply.model_validate_json(msg.body)
            assert reply.agent == agent.diagnostics.agent and reply.mcp == () and reply.llm.circuit == "none"
            await agent.diagnostics.aclose()
    finally:
        await agent.redis.aclose()
