"""Chat commands end to end: the gateway in-process against real nats-server and Valkey, with
FakeAuthz answering sign-ins and scopes. Every command through ``/v1/query`` and a web-chat
channel post; ``access`` and ``/v1/whoami`` agree; ``diagnostics`` for cluster admins only,
without secrets, with a fake agent answering ``sleuth.agent.diagnostics`` (or none); ``help``
follows the deployment and the caller; nobody learns another tenant's namespace names."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import nats
import pytest

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth_common.messages import (
    AgentDiagnosticsReply,
    AgentDiagnosticsRequest,
    AlertChannelReply,
    AlertChannelRequest,
    LlmEndpointReport,
    LlmReport,
    McpServerReport,
)
from sleuth_common.subjects import Subjects
from sleuth_gateway import Settings, create_app
from sleuth_gateway.commands import _diagnostics

from .conftest import PREFIX, FakeAuthz, auth, serve

pytestmark = pytest.mark.connected

ALICE, BOB, CAROL = auth("t-alice"), auth("t-bob"), auth("t-carol")
CHANNELS = [{"name": "team-a-alerts", "members": ["group:team-a", "user:carol"]}]
SECRETS = ("NatsS3cretPw", "RedisS3cretPw", "Mcp5ecretPw", "McpQueryTok3n", "sk-LlmKey-123456", "BackupPw99")


def agent_view(own: str, closed: str) -> AgentDiagnosticsReply:
    """What an agent with the fixture's servers (and one of its own) and a failed-over model says."""
    return AgentDiagnosticsReply(
        agent="agent-7f9c:1", version="0.1.0", duration_ms=2003.0,
        mcp=(
            McpServerReport(cluster="demo", server="kube", url=_diagnostics.shown_url(own), reachable=True,
                            tools=14, latency_ms=35.2),
            McpServerReport(cluster="prod-1", server="kube", url=closed, reachable=False, latency_ms=2.5,
                            error="cannot connect"),
            McpServerReport(cluster="", server="prometheus", url=f"https://u:{SECRETS[5]}@prom:9090/mcp?t=x",
                            reachable=True, tools=3, latency_ms=12.0),
        ),
        llm=LlmReport(
            primary=LlmEndpointReport(provider="anthropic", model="claude-sonnet-4-5",
                                      endpoint="https://api.anthropic.com"),
            backup=LlmEndpointReport(provider="openai", model="llama3",
                                     endpoint=f"http://ollama:{SECRETS[5]}@ollama:11434/v1?key={SECRETS[4]}"),
            circuit="open", consecutive_failures=3, failure_threshold=3, cooldown_seconds=30.0,
            last_used="backup", requests={"ok": 5, "network": 3},
        ),
    )


@dataclass
class Gw:
    client: httpx.AsyncClient
    authz: FakeAuthz
    settings: Settings
    agent_asked: list[AgentDiagnosticsRequest]

    async def ask(self, headers: dict[str, str], text: str) -> dict[str, Any]:
        resp = await self.client.post("/v1/query", json={"query": text}, headers=headers)
        assert resp.status_code == 200, resp.text
        return resp.json()  # type: ignore[no-any-return]

    async def post(self, headers: dict[str, str], text: str, channel: str = "team-a-alerts") -> list[str]:
        resp = await self.client.post(f"/v1/channels/{channel}/messages", json={"text": text}, headers=headers)
        assert resp.status_code == 200, resp.text
        return [m["text"] for m in resp.json()["messages"]]

    async def whoami(self, headers: dict[str, str]) -> dict[str, Any]:
        resp = await self.client.get("/v1/whoami", headers=headers)
        assert resp.status_code == 200, resp.text
        return resp.json()  # type: ignore[no-any-return]


@pytest.fixture
def gateway(nats_server: NatsServer, valkey: ValkeyServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``async with gateway(channels=..., clusters=True) as gw``: two clusters (``demo``,
    ``prod-1``) whose MCP servers are the gateway itself (it answers /healthz and /readyz) and
    a closed port; NATS, Redis and MCP URLs carrying passwords, an LLM key in the environment."""
    monkeypatch.setenv("SLEUTH_LLM_API_KEY", SECRETS[4])
    monkeypatch.setenv("SLEUTH_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("SLEUTH_GIT_COMMIT", "abc1234")

    @asynccontextmanager
    async def _start(
        *, channels: list[dict[str, Any]] | None = None, clusters: bool = True, agent: str = "answers"
    ) -> AsyncIterator[Gw]:
        """``agent``: ``answers`` (``agent_view``), ``silent`` (subscribed, never answers) or ``none``."""
        port = free_port()
        nats_url = nats_server.url.replace("nats://", f"nats://gateway:{SECRETS[0]}@")
        redis_url = valkey.url.replace("redis://", f"redis://default:{SECRETS[1]}@")
        own = f"http://probe:{SECRETS[2]}@127.0.0.1:{port}/mcp?token={SECRETS[3]}"
        closed = f"http://127.0.0.1:{free_port()}/mcp"
        settings = Settings(
            prefix=PREFIX,
            nats={"url": nats_url, "connect_timeout": 2.0},
            redis={"url": redis_url, "timeout": 0.5},
            authz={"request_timeout": 1.0},
            clusters=[
                {"name": "demo", "mcp_servers": [{"name": "kube", "url": own, "identity": True}]},
                {"name": "prod-1", "mcp_servers": [{"name": "kube", "url": closed, "timeout": 1.0}]},
            ]
            if clusters
            else [],
            gateway={"port": port, "channels": channels or []},
        )
        nc = await nats.connect(nats_server.url)
        try:
            authz = await FakeAuthz(nc, Subjects(PREFIX)).start()
            authz.clusters = ("demo", "prod-1") if clusters else ("demo",)

            async def on_alerts(msg: Any) -> None:
                req = AlertChannelRequest.model_validate_json(msg.data)
                await msg.respond(AlertChannelReply(text=f"alerts {req.op} in {req.channel}").to_bytes())

            await nc.subscribe(Subjects(PREFIX).alerts_channels_all, cb=on_alerts)
            asked: list[AgentDiagnosticsRequest] = []

            async def on_diagnostics(msg: Any) -> None:
                asked.append(AgentDiagnosticsRequest.model_validate_json(msg.data))
                if agent == "answers":
                    await msg.respond(agent_view(own, closed).to_bytes())

            if agent != "none":
                await nc.subscribe(Subjects(PREFIX).agent_diagnostics, queue="agent", cb=on_diagnostics)
            async with serve(create_app(settings), settings), httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", timeout=15.0
            ) as client:
                yield Gw(client, authz, settings, asked)
        finally:
            await nc.close()

    return _start


def no_foreign_names(text: str, foreign: str) -> None:
    assert foreign not in text, text


async def test_every_command_answers_through_the_api_and_in_a_channel(gateway: Any) -> None:
    async with gateway(channels=CHANNELS) as gw:
        api = {text: await gw.ask(ALICE, text) for text in
               ("Help!", "refresh, please", "Access?", "@sleuth diagnostics!", "alerts status")}
        assert [a["command"] for a in api.values()] == ["help", "refresh", "access", "diagnostics", "alerts"]
        assert all(a["result"] is None and a["answer_html"] for a in api.values())
        assert "`access`" in api["Help!"]["answer"] and "in team-a?" in api["Help!"]["answer"]
        assert api["refresh, please"]["answer"].startswith("Done")
        assert "**demo**: namespaces `team-a`" in api["Access?"]["answer"]
        assert "for cluster admins" in api["@sleuth diagnostics!"]["answer"]
        assert "works in a channel" in api["alerts status"]["answer"]

        said = {text: await gw.post(ALICE, text) for text in
                ("help", "Refresh", "access please", "diagnostics", "alerts on")}
        for text, messages in said.items():
            assert messages[0] == text and len(messages) == 2, messages
        replies = {text: messages[1] for text, messages in said.items()}
        assert "`alerts on`" in replies["help"] and "private conversation" in replies["help"]
        assert replies["Refresh"].startswith("Done")
        assert replies["alerts on"] == "alerts on in web:team-a-alerts"
        # The channel's other members read these: nothing of the poster's own access is shown.
        for text in ("help", "access please", "diagnostics"):
            assert "private conversation" in replies[text]
            assert "`team-a`" not in replies[text] and "cluster-wide" not in replies[text]
        # The same runner answered both surfaces: the conversation holds the API's exchanges.
        conversation = (await gw.client.get("/v1/conversation", headers=ALICE)).json()["messages"]
        assert [m.get("command") for m in conversation if m["role"] == "assistant"] == [
            "help", "refresh", "access", "diagnostics", "alerts"]


async def test_access_and_whoami_agree_and_show_only_the_askers_own(gateway: Any) -> None:
    async with gateway() as gw:
        expected = {
            "alice": {c: {"cluster_wide": False, "namespaces": ["team-a"]} for c in ("demo", "prod-1")},
            "bob": {c: {"cluster_wide": False, "namespaces": ["team-b"]} for c in ("demo", "prod-1")},
            "carol": {c: {"cluster_wide": True, "namespaces": ["default", "team-a", "team-b"]}
                      for c in ("demo", "prod-1")},
        }
        for who, headers, shown, foreign in [
            ("alice", ALICE, "namespaces `team-a`", "team-b"),
            ("bob", BOB, "namespaces `team-b`", "team-a"),
            ("carol", CAROL, "cluster-wide", None),
        ]:
            me = await gw.whoami(headers)
            assert me["user"] == who and me["access"] == expected[who]
            answer = (await gw.ask(headers, "access"))["answer"]
            assert f"**demo**: {shown}" in answer and f"**prod-1**: {shown}" in answer
            if foreign:
                no_foreign_names(answer, foreign)
                no_foreign_names(str(me), foreign)

        # A cluster authz-cache cannot ask is unknown in both, never guessed.
        gw.authz.failing = {"prod-1"}
        assert (await gw.whoami(ALICE))["access"]["prod-1"] == {
            "cluster_wide": False, "namespaces": [], "unavailable": True}
        assert "**prod-1**: unknown right now" in (await gw.ask(ALICE, "access"))["answer"]

        # authz-cache not able to say: `access` is 503, signing in (whoami) still works.
        gw.authz.scope_broken = True
        resp = await gw.client.post("/v1/query", json={"query": "access"}, headers=ALICE)
        assert resp.status_code == 503 and "authorization is unavailable" in resp.json()["error"]
        me = await gw.whoami(ALICE)
        assert me["user"] == "alice" and me["access"] is None and "unavailable" in me["access_error"]


async def test_diagnostics_for_cluster_admins_only_and_without_secrets(gateway: Any) -> None:
    async with gateway(channels=CHANNELS) as gw:
        for headers in (ALICE, BOB):
            refused = (await gw.ask(headers, "diagnostics"))["answer"]
            assert "for cluster admins" in refused
            assert "MCP" not in refused and "team-" not in refused and "127.0.0.1" not in refused
        assert not gw.agent_asked  # a refused caller costs the agent nothing

        answer = (await gw.ask(CAROL, "diagnostics"))["answer"]
        port = gw.settings.gateway.port
        sections = ["**Build**: sleuth-gateway 0.1.0, commit `abc1234`", "**authz-cache**: answered",
                    "**MCP servers**", "**NATS**: connected", "**Redis**: PING", "**LLM**"]
        for section in sections:
            assert section in answer, answer
        assert len(gw.agent_asked) == 1
        assert "**Agent**: `agent-7f9c:1` (sleuth-agent 0.1.0) answered in" in answer
        # The agent's tool counts and latency beside the gateway's own probes.
        assert (f"- **demo** `kube` (http://127.0.0.1:{port}/mcp): 14 tools (the agent listed them in 35 ms); "
                "/healthz 200 ok") in answer
        assert "/readyz 200 ok" in answer
        assert ("- **prod-1** `kube` (http://127.0.0.1:" in answer
                and "the agent cannot list its tools: cannot connect (after 2.5 ms); /healthz cannot connect" in answer)
        assert ("- **all clusters (global servers)** `prometheus` (https://prom:9090/mcp, in the agent's "
                "configuration only): 3 tools") in answer
        assert "Tool counts unknown" not in answer
        # The LLM as the agent runs it: endpoints, the open circuit, what its requests did.
        assert "**LLM** (the agent's): anthropic `claude-sonnet-4-5` at https://api.anthropic.com" in answer
        assert "- backup: openai `llama3` at http://ollama:11434/v1" in answer
        assert ("- circuit OPEN: requests go to the backup until the primary is probed again; 3 consecutive "
                "failures of the primary (3 open the circuit for 30s); last request answered by the backup") in answer
        assert "- requests since the agent started: 5 ok, 3 network" in answer
        assert "`SLEUTH_JOBS`: 0 messages" in answer and "`SLEUTH_ALERTS`: absent" in answer
        assert "`gateway`: 0 pending, 0 unacknowledged, 0 redelivered" in answer  # the CHAT consumer
        assert "used memory" in answer
        for secret in (*SECRETS, "probe@", "token=", "key=", "t=x", "u:"):
            assert secret not in answer, secret

        # Cluster-wide on one cluster is not enough: the other did not answer (fail closed).
        gw.authz.failing = {"prod-1"}
        assert "for cluster admins" in (await gw.ask(CAROL, "diagnostics"))["answer"]


@pytest.mark.parametrize(("agent", "why"), [
    ("none", "no agent is running"),
    ("silent", "no agent answered within 0.5s"),
])
async def test_diagnostics_without_an_agents_answer_says_so_and_keeps_the_probes(
    gateway: Any, monkeypatch: pytest.MonkeyPatch, agent: str, why: str
) -> None:
    monkeypatch.setattr(_diagnostics, "AGENT_TIMEOUT", 0.5)
    async with gateway(agent=agent) as gw:
        answer = (await gw.ask(CAROL, "diagnostics"))["answer"]
        assert f"**Agent**: {why}; tool counts and the LLM's state are unknown" in answer
        port = gw.settings.gateway.port
        assert f"- **demo** `kube` (http://127.0.0.1:{port}/mcp): /healthz 200 ok" in answer
        assert "- **prod-1** `kube`" in answer and "/healthz cannot connect" in answer
        assert (f"- Tool counts unknown: {why}. Listing a server's tools needs an identity only the agent "
                "can sign.") in answer
        assert (f"**LLM**: used by the agent, whose state is unknown ({why}); this gateway's environment "
                "names anthropic") in answer
        assert "tools (the agent listed" not in answer and "circuit" not in answer
        for secret in (*SECRETS, "probe@", "token="):
            assert secret not in answer, secret


async def test_help_lists_what_this_deployment_offers_this_caller(gateway: Any) -> None:
    async with gateway(channels=CHANNELS) as gw:
        alice, bob, carol = [(await gw.ask(h, "help"))["answer"] for h in (ALICE, BOB, CAROL)]
        assert "`alerts on`" in alice and "`alerts on`" not in bob  # bob is in no channel
        assert "`diagnostics`" in carol and "`diagnostics`" not in alice + bob
        assert "in team-a?" in alice and "in team-b?" in bob
        no_foreign_names(alice, "team-b")
        no_foreign_names(bob, "team-a")
    async with gateway(clusters=False) as gw:
        alice, carol = [(await gw.ask(h, "help"))["answer"] for h in (ALICE, CAROL)]
        assert "`alerts" not in alice + carol  # no channel configured
        assert "`access`" in alice and "`diagnostics`" in carol
