"""Fixtures for kube-mcp's tests: a simcluster over the demo snapshot, kube-mcp servers on
loopback reading it as different users, and a real MCP client over streamable HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from sleuth_kube_mcp import ServerHandle, Settings, serve_in_thread


@pytest.fixture(scope="module")
def sim(demo_snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from sleuth_simcluster import SimCluster

    with SimCluster(demo_snapshot, tmp_path_factory.mktemp("simcluster")) as running:
        yield running


@pytest.fixture(scope="module")
def kube_mcp(sim: Any) -> Iterator[Callable[..., ServerHandle]]:
    """``kube_mcp("carol", accept_caller_token=False)``: a kube-mcp reading the demo cluster with
    that user's kubeconfig (one server per distinct argument set, shared by the module).
    ``verify_key`` (a public key PEM file) turns on ``require_identity`` (the production mode);
    without it the server reads with the kubeconfig's own rights, as these shaping tests need."""
    running: dict[tuple[str, bool, str, str], ServerHandle] = {}

    def get(user: str, accept_caller_token: bool = False, verify_key: str = "", **extra: Any) -> ServerHandle:
        """``extra``: more ``kube_mcp`` settings (``max_items=3`` ...)."""
        key = (user, accept_caller_token, verify_key, json.dumps(extra, sort_keys=True))
        if key not in running:
            settings = Settings.model_validate(
                {
                    "kube_mcp": {
                        "kubeconfig": str(sim.kubeconfig(user)),
                        "port": 0,
                        "cluster_name": "demo",
                        "accept_caller_token": accept_caller_token,
                        "require_identity": bool(verify_key),
                        **extra,
                    },
                    "identity": {"verify_key_files": [verify_key] if verify_key else [], "verify_keys_env": ""},
                }
            )
            running[key] = serve_in_thread(settings)
        return running[key]

    try:
        yield get
    finally:
        for handle in running.values():
            handle.stop()


@asynccontextmanager
async def mcp_client(
    url: str, token: str | None = None, extra_headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    headers.update(extra_headers or {})
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def call(
    url: str, tool: str, args: dict[str, Any], token: str | None = None, headers: dict[str, str] | None = None
) -> tuple[bool, Any]:
    """(is_error, parsed JSON of the text result)."""
    async with mcp_client(url, token, headers) as client:
        result = await client.call_tool(tool, args)
    assert len(result.content) == 1
    return bool(result.is_error), json.loads(result.content[0].text)


@pytest.fixture
def mcp_call() -> Callable[..., Any]:
    """``await mcp_call(url, tool, args, token=None)`` → (is_error, parsed JSON result)."""
    return call


@pytest.fixture
def mcp_session() -> Callable[..., Any]:
    """``async with mcp_session(url, token=None) as client``: a connected MCP client."""
    return mcp_client
