"""``<prefix>.agent.diagnostics`` answered by a real agent (``build`` + ``start``) over a real
nats-server, listing the tools of a real kube-mcp (simcluster behind it) with the agent's own
signed ``sleuth-diagnostics`` identity; a server refusing that identity, one that never answers,
one nobody listens on; the LLM's failover circuit driven by real requests (a dead primary, the
fake model server as backup)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import nats
import pytest

from sleuth.embedded import free_port
from sleuth_agent import Settings
from sleuth_common.llm import ChatMessage, LlmRequest
from sleuth_common.messages import AgentDiagnosticsReply, AgentDiagnosticsRequest, McpServerReport
from sleuth_common.subjects import Subjects
from sleuth_kube_mcp import TOOL_NAMES
from tests.fakes.model_server import FakeModelServer, say

from .test_agent_connected import agent_settings, running_agent, stack  # noqa: F401 (fixture)

pytestmark = pytest.mark.connected

SUBJECTS = Subjects("sleuth")
GATEWAY_WAIT = 3.0  # what the gateway's `diagnostics` waits for an agent
SECRETS = ("Mcp5ecretPw", "McpQueryTok3n", "sk-DiagKey-123456")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung server)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def diag_settings(kube: dict[str, Any], nats_url: str, redis_url: str, silent: int, backup: str) -> Settings:
    """``agent_settings`` with more servers and a model endpoint whose primary is dead."""
    base = agent_settings(kube, nats_url, redis_url).model_dump()
    dead_llm = f"http://127.0.0.1:{free_port()}?key={SECRETS[2]}"
    base["clusters"] = [
        {"name": "demo", "mcp_servers": [
            {"name": "kube", "url": kube["mcp_url"], "identity": True},
            # kube-mcp checks the audience: an assertion made for another cluster is refused.
            {"name": "elsewhere", "url": kube["mcp_url"], "identity": True,
             "identity_audience": "kube-mcp/elsewhere"},
        ]},
        {"name": "prod-1", "mcp_servers": [{
            "name": "kube", "identity": True,
            "url": f"http://probe:{SECRETS[0]}@127.0.0.1:{silent}/mcp?token={SECRETS[1]}"}]},
    ]
    base["global_mcp_servers"] = [{"name": "metrics", "url": f"http://127.0.0.1:{free_port()}/mcp"}]
    base["agent"].update(
        llm={"provider": "anthropic", "model": "primary-model", "base_url": dead_llm,
             "api_key_env": "SLEUTH_TEST_DIAG_KEY", "retries": 0, "connect_timeout": 0.5},
        fallback_llm={"provider": "anthropic", "model": "fake-model", "base_url": backup,
                      "api_key_env": "SLEUTH_TEST_DIAG_KEY", "retries": 0},
        failover_threshold=1,
        failover_cooldown=600,
    )
    return Settings.model_validate(base)


async def ask(nc: Any) -> AgentDiagnosticsReply:
    msg = await nc.request(SUBJECTS.agent_diagnostics, AgentDiagnosticsRequest(user="carol").to_bytes(),
                           timeout=GATEWAY_WAIT)
    return AgentDiagnosticsReply.model_validate_json(msg.data)


def by_name(reply: AgentDiagnosticsReply) -> dict[str, McpServerReport]:
    return {f"{r.cluster or '*'}/{r.server}": r for r in reply.mcp}


async def test_the_agent_reports_its_servers_tools_and_its_model_circuit(
    stack, nats_server, valkey, silent_port, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setenv("SLEUTH_TEST_DIAG_KEY", SECRETS[2])
    with FakeModelServer(default=say("pong")) as backup:
        settings = diag_settings(stack, nats_server.url, valkey.url, silent_port, backup.url)
        nc = await nats.connect(nats_server.url)
        try:
            async with running_agent(settings) as agent:
                # A hung server costs the answer at most the probe bound: it arrives within the
                # gateway's wait.
                reply = await ask(nc)
                servers = by_name(reply)
                assert list(servers) == ["demo/kube", "demo/elsewhere", "prod-1/kube", "*/metrics"]
                kube = servers["demo/kube"]
                # kube-mcp lists its tools to the diagnostic identity (no groups, reads nothing).
                assert kube.reachable and kube.tools == len(TOOL_NAMES) and not kube.error
                assert kube.url == stack["mcp_url"] and kube.latency_ms > 0
                refused = servers["demo/elsewhere"]
                assert not refused.reachable and refused.tools is None
                assert refused.error == "refused the agent's signed identity (HTTP 401)"
                hung = servers["prod-1/kube"]
                assert not hung.reachable and "did not answer within 2s" in hung.error
                assert hung.url == f"http://127.0.0.1:{silent_port}/mcp"
                assert servers["*/metrics"].error == "cannot connect"
                assert reply.version == "0.1.0" and reply.agent.startswith(socket.gethostname())

                llm = reply.llm
                assert llm.primary is not None and llm.primary.model == "primary-model"
                assert llm.primary.endpoint.startswith("http://127.0.0.1:") and "?" not in llm.primary.endpoint
                assert llm.backup is not None and llm.backup.model == "fake-model"
                assert (llm.circuit, llm.consecutive_failures, llm.failure_threshold) == ("closed", 0, 1)
                assert llm.requests == {}

                # One request: the dead primary fails, the backup answers, the circuit opens.
                assert agent.llm is not None
                answer = await agent.llm.client.complete(LlmRequest("system", (ChatMessage.user("ping"),)))
                assert answer.text == "pong"
                llm = (await ask(nc)).llm
                assert (llm.circuit, llm.consecutive_failures, llm.last_used) == ("open", 1, "backup")
                assert llm.requests.get("ok") == 1 and sum(llm.requests.values()) == 2

                # Two admins at once are both answered.
                both = await asyncio.gather(ask(nc), ask(nc))
                assert all(len(r.mcp) == 4 for r in both)

                dumped = json.dumps(reply.model_dump(mode="json"))
                for secret in (*SECRETS, "probe@", "token=", "key="):
                    assert secret not in dumped, secret
        finally:
            await nc.drain()


async def test_no_agent_running_means_no_responder(nats_server) -> None:
    """The gateway tells "no agent" from "an agent that did not answer" by this."""
    nc = await nats.connect(nats_server.url)
    try:
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request(SUBJECTS.agent_diagnostics, AgentDiagnosticsRequest(user="carol").to_bytes(), timeout=1)
    finally:
        await nc.drain()
