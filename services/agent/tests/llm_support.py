"""Helpers for the LLM loop tests: the snapshot toolbox with a tool list (as ClusterTools
lists tools), a settings builder and a job runner against the fake model server."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from sleuth_agent.llm import LlmInvestigator
from sleuth_agent.metrics import Metrics, MetricsObserver
from sleuth_agent.rca import investigate
from sleuth_agent.settings import Settings
from sleuth_common.config import ClusterSettings
from sleuth_common.llm import LlmSettings, RetryPolicy, build_client
from sleuth_common.mcp import ToolInfo, ToolResult
from sleuth_common.messages import ClusterScope, InvestigationJob, Requester, ScopeReply
from sleuth_common.scope import Scope

# A private instance of snapshot_tools whose snapshot loading is cached (these tests run the
# deterministic investigator many times over the same snapshot).
_spec = importlib.util.spec_from_file_location(
    "agent_llm_snapshot_tools", Path(__file__).parent / "snapshot_tools.py"
)
assert _spec and _spec.loader
snapshot_tools = importlib.util.module_from_spec(_spec)
sys.modules["agent_llm_snapshot_tools"] = snapshot_tools
_spec.loader.exec_module(snapshot_tools)
snapshot_tools.load_objects = functools.lru_cache(maxsize=4)(snapshot_tools.load_objects)

_NS = {"namespace": {"type": "string", "description": "namespace"}}
SCHEMAS: dict[str, dict[str, Any]] = {
    "list_pods": {"type": "object", "properties": {**_NS}, "required": ["namespace"]},
    "get_pod": {"type": "object", "properties": {**_NS, "name": {"type": "string"}}},
    "pod_logs": {
        "type": "object",
        "properties": {
            **_NS,
            "name": {"type": "string"},
            "container": {"type": "string"},
            "previous": {"type": "boolean"},
        },
    },
    "list_events": {"type": "object", "properties": {**_NS, "involved_object_name": {"type": "string"}}},
    "list_workloads": {"type": "object", "properties": {**_NS}},
    "get_resource": {
        "type": "object",
        "properties": {**_NS, "kind": {"type": "string"}, "name": {"type": "string"}},
    },
    "list_nodes": {"type": "object", "properties": {}},
}

SCOPES = {
    "alice": ScopeReply(user="alice", clusters={"demo": ClusterScope(namespaces=("team-a",))}),
    "bob": ScopeReply(user="bob", clusters={"demo": ClusterScope(namespaces=("team-b",))}),
}


class ListedTools:
    """SnapshotTools plus ``tools`` (what ClusterTools lists) and hooks for slow/hanging calls."""

    def __init__(self, inner: Any, *, delay: float = 0.0, hang: set[str] | None = None) -> None:
        self.inner = inner
        self.delay = delay
        self.hang = hang or set()
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def tools(self) -> list[ToolInfo]:
        names = ["list_pods", "get_pod", "pod_logs", "list_events", "list_workloads", "get_resource"]
        if self.inner.scope.cluster_wide:
            names.append("list_nodes")
        return [ToolInfo(n, f"{n.replace('_', ' ')} (kube-mcp)", SCHEMAS[n], "kube") for n in names]

    def has_tool(self, name: str) -> bool:
        return self.inner.has_tool(name)

    async def call(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> ToolResult:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if tool in self.hang:
                await asyncio.sleep(3600)
            if self.delay:
                await asyncio.sleep(self.delay)
            return await self.inner.call(tool, args, timeout=timeout)
        finally:
            self.in_flight -= 1


def factory(snapshot: Path, seen: list[ListedTools] | None = None, **kw: Any):
    @contextlib.asynccontextmanager
    async def make(cluster: ClusterSettings, scope: Scope) -> AsyncIterator[ListedTools]:
        box = ListedTools(snapshot_tools.SnapshotTools(snapshot, scope), **kw)
        if seen is not None:
            seen.append(box)
        yield box

    return make


def settings(**agent: Any) -> Settings:
    clusters = agent.pop("clusters", None) or [ClusterSettings(name="demo", aliases=["dev"])]
    limits = agent.pop("limits", {})
    return Settings(clusters=clusters, agent=agent, limits=limits)


def investigator(
    url: str,
    s: Settings,
    *,
    provider: str = "anthropic",
    redis: Any = None,
    metrics: Metrics | None = None,
    retries: int = 1,
    timeout: float = 10.0,
) -> LlmInvestigator:
    metrics = metrics or Metrics()
    llm = LlmSettings(
        provider=provider,  # type: ignore[arg-type]
        base_url=url,
        model="fake-model",
        api_key_env="SLEUTH_TEST_LLM_KEY",
        retries=retries,
        timeout=timeout,
    )
    client = build_client(
        llm, observer=MetricsObserver(metrics), retry=RetryPolicy(retries + 1, 0.001, 0.002)
    )
    return LlmInvestigator(s, client, metrics, redis)


async def ask(
    inv: LlmInvestigator,
    snapshot: Path,
    question: str,
    *,
    user: str = "alice",
    scope: ScopeReply | None = None,
    seen: list[ListedTools] | None = None,
    progress: list[tuple[str, str]] | None = None,
    tools_kw: dict | None = None,
    **job_kw: Any,
):
    job = InvestigationJob(requester=Requester(user=user), question=question, **job_kw)
    scope = scope or SCOPES[user]
    make = factory(snapshot, seen, **(tools_kw or {}))  # delays and hangs only for the model's tools
    base = await investigate(job, scope, inv.settings, tools_factory=factory(snapshot))

    async def record(stage: str, message: str) -> None:
        if progress is not None:
            progress.append((stage, message))

    result, run = await inv.run(job, scope, base, progress=record, tools_factory=make)
    await inv.aclose()
    return base, result, run
