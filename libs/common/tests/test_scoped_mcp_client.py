"""ScopedMcpClient against a real MCP server over streamable HTTP (uvicorn on loopback)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from sleuth.embedded import free_port
from sleuth_common.config import McpServerSettings
from sleuth_common.mcp import ScopedMcpClient, ToolAuditEvent
from sleuth_common.scope import Scope

ALICE = Scope.of(["team-a"])
CAROL = Scope.of([], cluster_wide=True)


def _server() -> MCPServer:
    srv = MCPServer("fake-kube")
    calls: list[str] = []
    srv.calls = calls  # type: ignore[attr-defined]

    @srv.tool(description="List pods.")
    def list_pods(namespace: str = "") -> dict[str, Any]:
        calls.append(f"list_pods:{namespace}")
        # A misbehaving server that ignores the namespace: the filter must still hold.
        return {"items": [{"namespace": "team-a", "name": "api-1"}, {"namespace": "team-b", "name": "pay-1"}]}

    @srv.tool(description="Logs of one pod.")
    def pod_logs(namespace: str, name: str) -> str:
        calls.append(f"pod_logs:{namespace}")
        return "2026-11-30T09:00:00Z ERROR boom"

    @srv.tool(description="Nodes (cluster-admin only).", meta={"sleuth/cluster_admin_only": True})
    def list_nodes() -> dict[str, Any]:
        calls.append("list_nodes")
        return {"items": [{"name": "node-1"}]}

    @srv.tool(description="A slow tool.")
    async def list_events(namespace: str) -> dict[str, Any]:
        await asyncio.sleep(5)
        return {"items": []}

    @srv.tool(description="Fails.")
    def get_pod(namespace: str, name: str) -> dict[str, Any]:
        raise ToolError(f'pods "{name}" not found')

    return srv


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[tuple[str, MCPServer]]:
    srv = _server()
    port = free_port()
    config = uvicorn.Config(
        srv.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/mcp", srv
    server.should_exit = True
    thread.join(5)


def _settings(url: str, **kw: Any) -> McpServerSettings:
    return McpServerSettings(name="kube", url=url, timeout=kw.pop("timeout", 3.0), **kw)


async def test_filters_results_and_lists_only_allowed_tools(mcp_url: tuple[str, MCPServer]) -> None:
    url, _srv = mcp_url
    events: list[ToolAuditEvent] = []
    async with ScopedMcpClient(
        _settings(url), ALICE, cluster="demo", user="alice", on_audit=events.append
    ) as c:
        assert c.available
        names = {t.name for t in c.tools}
        assert "list_pods" in names and "list_nodes" not in names
        r = await c.call("list_pods", {"namespace": "team-a"})
        assert r.status == "ok" and r.removed == 1
        assert [p["name"] for p in r.data["items"]] == ["api-1"]
        assert "pay-1" not in r.text and "team-b" not in r.text
        assert r.command == "kubectl get pods -n team-a -o wide"
    assert [(e.tool, e.outcome, e.removed) for e in events] == [("list_pods", "filtered", 1)]
    assert "pay-1" not in repr(events)


async def test_refuses_before_sending(mcp_url: tuple[str, MCPServer]) -> None:
    url, srv = mcp_url
    async with ScopedMcpClient(_settings(url), ALICE, cluster="demo", user="alice") as c:
        before = list(srv.calls)  # type: ignore[attr-defined]
        r = await c.call("list_pods", {"namespace": "team-b"})
        assert r.status == "denied" and "team-a" in r.error
        r = await c.call("list_nodes", {})
        assert r.status == "denied"
        r = await c.call("get_pod", {"namespace": "team-a"})  # name missing: the schema says so
        assert r.status == "denied" and r.reason == "invalid_arguments" and "name" in r.error
        assert srv.calls == before  # type: ignore[attr-defined]


async def test_no_namespace_fans_out_over_the_callers_namespaces(mcp_url: tuple[str, MCPServer]) -> None:
    url, srv = mcp_url
    two = Scope.of(["team-a", "shop"])
    async with ScopedMcpClient(_settings(url), two, cluster="demo", user="alice") as c:
        before = len(srv.calls)  # type: ignore[attr-defined]
        r = await c.call("list_pods", {})
        assert r.status == "ok" and r.calls == 2
        assert sorted(srv.calls[before:]) == ["list_pods:shop", "list_pods:team-a"]  # type: ignore[attr-defined]
        # The misbehaving server answered team-a and team-b both times: team-b is gone.
        assert [p["name"] for p in r.data["items"]] == ["api-1", "api-1"] and r.removed == 2


async def test_text_results_pinned_and_unpinned(mcp_url: tuple[str, MCPServer]) -> None:
    url, _ = mcp_url
    async with ScopedMcpClient(_settings(url), ALICE) as c:
        r = await c.call("pod_logs", {"namespace": "team-a", "name": "api-1", "previous": True})
        assert r.status == "ok" and "boom" in r.data
        assert r.command == "kubectl logs api-1 -n team-a --previous"


async def test_cluster_wide_sees_everything(mcp_url: tuple[str, MCPServer]) -> None:
    url, _ = mcp_url
    async with ScopedMcpClient(_settings(url), CAROL) as c:
        assert "list_nodes" in {t.name for t in c.tools}
        r = await c.call("list_pods", {})
        assert r.status == "ok" and r.removed == 0 and len(r.data["items"]) == 2
        r = await c.call("list_nodes")
        assert r.status == "ok"


async def test_server_errors_and_timeouts_are_results(mcp_url: tuple[str, MCPServer]) -> None:
    url, _ = mcp_url
    async with ScopedMcpClient(_settings(url), ALICE) as c:
        r = await c.call("get_pod", {"namespace": "team-a", "name": "nope"})
        assert r.status == "error" and "not found" in r.error
        r = await c.call("list_events", {"namespace": "team-a"}, timeout=0.3)
        assert r.status == "error" and r.error.startswith("unavailable")


async def test_unreachable_server_is_unavailable_not_an_exception() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    events: list[ToolAuditEvent] = []
    async with ScopedMcpClient(_settings(url), ALICE, on_audit=events.append, connect_timeout=2) as c:
        assert not c.available and c.error.startswith("unavailable")
        r = await c.call("list_pods", {"namespace": "team-a"})
        assert r.status == "error" and r.error.startswith("unavailable")
    assert events[0].outcome == "error"


async def test_allow_tools(mcp_url: tuple[str, MCPServer]) -> None:
    url, _ = mcp_url
    async with ScopedMcpClient(_settings(url, allow_tools=["pod_logs"]), ALICE) as c:
        assert [t.name for t in c.tools] == ["pod_logs"]
        r = await c.call("list_pods", {"namespace": "team-a"})
        assert r.status == "denied"
