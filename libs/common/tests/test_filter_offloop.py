"""Large tool results are checked off the event loop, under ``filter_timeout``: a result that is
not checked in time — or whose check fails — is withheld, never shown unchecked. Runs
``ScopedMcpClient`` against a real MCP server over streamable HTTP (uvicorn on loopback)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from mcp.server import MCPServer

from sleuth.embedded import free_port
from sleuth_common.config import McpServerSettings
from sleuth_common.mcp import ScopedMcpClient, _client
from sleuth_common.scope import Scope

ALICE = Scope.of(["team-a"])
BIG = 400  # pods of about 1 KB each: over OFF_LOOP_CHARS
PAD = "x" * 1000


def _pods(namespace: str = "") -> dict[str, Any]:
    return {"items": [{"metadata": {"namespace": ns, "name": f"{ns}-pod-{i}"}, "pad": PAD}
                      for i in range(BIG) for ns in ("team-a", "team-b")]}


def _server() -> MCPServer:
    srv = MCPServer("fake-kube")

    @srv.tool(description="List pods (a large answer naming other namespaces too).")
    def list_pods(namespace: str = "") -> dict[str, Any]:
        return _pods(namespace)

    @srv.tool(description="A YAML alias bomb (the call is not limited to a namespace).")
    def get_config() -> str:
        lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        for prev, name in zip("abcdefg", "bcdefgh", strict=True):
            lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        return "\n".join(lines) + "\nnamespace: team-a\n"

    @srv.tool(description="Deep JSON (the call is not limited to a namespace).")
    def get_tree() -> str:
        return "[" * 5000 + "]" * 5000

    return srv


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(_server().streamable_http_app(), host="127.0.0.1", port=port, log_level="warning",
                            lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(5)


def _settings(url: str, **kw: Any) -> McpServerSettings:
    return McpServerSettings(name="kube", url=url, timeout=10.0, **kw)


async def test_a_large_result_is_filtered_in_a_worker_thread(
    mcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real = _client.filter_result

    def spy(*args: Any, **kw: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args, **kw)

    monkeypatch.setattr(_client, "filter_result", spy)
    async with ScopedMcpClient(_settings(mcp_url), ALICE, cluster="demo", user="alice") as c:
        r = await c.call("list_pods", {"namespace": "team-a"})
    assert r.status == "ok" and r.removed == BIG
    assert {p["metadata"]["namespace"] for p in r.data["items"]} == {"team-a"}
    assert "team-b" not in r.text
    assert threads and all(name != threading.main_thread().name for name in threads)


async def test_a_small_result_is_filtered_on_the_loop(mcp_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    real = _client.filter_result

    def spy(*args: Any, **kw: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args, **kw)

    monkeypatch.setattr(_client, "filter_result", spy)
    monkeypatch.setattr(_client, "OFF_LOOP_CHARS", 10_000_000)
    async with ScopedMcpClient(_settings(mcp_url), ALICE, cluster="demo", user="alice") as c:
        r = await c.call("list_pods", {"namespace": "team-a"})
    assert r.status == "ok" and r.removed == BIG
    assert threads == [threading.main_thread().name]


async def test_a_check_that_takes_too_long_is_withheld_and_the_loop_keeps_running(
    mcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def stuck(*args: Any, **kw: Any) -> Any:
        release.wait(10)  # a check that does not finish within filter_timeout
        raise AssertionError("a result checked too late must not be used")

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    monkeypatch.setattr(_client, "filter_result", stuck)
    async with ScopedMcpClient(_settings(mcp_url, filter_timeout=0.3), ALICE, cluster="demo", user="alice") as c:
        task = asyncio.create_task(ticker())
        try:
            r = await c.call("list_pods", {"namespace": "team-a"})
        finally:
            task.cancel()
            release.set()
            await asyncio.gather(task, return_exceptions=True)
    assert r.status == "withheld" and r.reason == "too_slow" and r.data is None and not r.text
    assert "took too long to check" in r.error and "Narrow the query" in r.error and "team-a" in r.error
    assert ticks > 1  # the loop was free while the check ran


async def test_a_check_that_fails_is_withheld(mcp_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kw: Any) -> Any:
        raise RecursionError("boom")

    monkeypatch.setattr(_client, "filter_result", broken)
    async with ScopedMcpClient(_settings(mcp_url), ALICE, cluster="demo", user="alice") as c:
        r = await c.call("list_pods", {"namespace": "team-a"})
    assert r.status == "withheld" and r.reason == "unchecked" and r.data is None
    assert "could not be checked" in r.error and "team-b" not in r.error


async def test_a_large_fan_out_is_merged_and_filtered_off_the_loop(mcp_url: str) -> None:
    two = Scope.of(["team-a", "shop"])
    async with ScopedMcpClient(_settings(mcp_url), two, cluster="demo", user="alice") as c:
        r = await c.call("list_pods", {})
    assert r.status == "ok" and r.calls == 2 and r.removed == 2 * BIG
    assert "team-b" not in r.text


@pytest.mark.parametrize("tool", ["get_config", "get_tree"])
async def test_hostile_results_are_withheld_not_raised(mcp_url: str, tool: str) -> None:
    async with ScopedMcpClient(_settings(mcp_url), ALICE, cluster="demo", user="alice") as c:
        r = await c.call(tool, {})
    assert r.status == "withheld" and r.data is None and "lol" not in r.text
