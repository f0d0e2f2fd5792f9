"""``ClusterTools``: the MCP servers of one cluster behind one ``call``, for one caller."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from sleuth_common.config import ClusterSettings, McpServerSettings
from sleuth_common.identity import AssertionAuth, Identity, IdentitySigner
from sleuth_common.mcp._client import ScopedMcpClient
from sleuth_common.mcp._commands import kubectl_command
from sleuth_common.mcp._resolve import IpResolver
from sleuth_common.mcp._result import AuditCallback, ToolInfo, ToolResult
from sleuth_common.scope import RoundBudget, Scope, ToolRules, default_rules

__all__ = ["ClusterTools"]


class ClusterTools:
    """Connects every MCP server of ``cluster`` (and the namespace-agnostic ``global_servers``)
    with ``scope``; routes a tool to the first server that lists it for this caller. Use as
    ``async with ClusterTools(cluster, scope, user=...)``. ``unavailable`` names the servers that
    did not answer (names of servers, never data). ``resolver`` resolves IPs for the filter
    (default: ``use_resolver``'s). ``call_round`` applies the per-round budget. ``identity`` and
    ``signer``: the caller, signed for every server configured with ``identity: true``."""

    def __init__(
        self,
        cluster: ClusterSettings,
        scope: Scope,
        *,
        user: str = "",
        on_audit: AuditCallback | None = None,
        connect_timeout: float = 5.0,
        rules: ToolRules | None = None,
        resolver: IpResolver | None = None,
        global_servers: Sequence[McpServerSettings] = (),
        max_result_chars: int | None = 40_000,
        identity: Identity | None = None,
        signer: IdentitySigner | None = None,
    ) -> None:
        self.cluster = cluster
        self.scope = scope

        def auth(s: McpServerSettings) -> AssertionAuth | None:
            if not s.identity or identity is None or signer is None:
                return None
            return AssertionAuth(signer, identity, s.identity_audience or f"kube-mcp/{cluster.name}")

        self.clients: list[ScopedMcpClient] = [
            ScopedMcpClient(
                s,
                scope,
                cluster=cluster.name,
                user=user,
                on_audit=on_audit,
                connect_timeout=connect_timeout,
                rules=rules if rules is not None else default_rules(),
                resolver=resolver,
                max_result_chars=max_result_chars,
                is_global=is_global,
                auth=auth(s),
            )
            for s, is_global in [*((s, False) for s in cluster.mcp_servers), *((g, True) for g in global_servers)]
        ]

    async def __aenter__(self) -> ClusterTools:
        await asyncio.gather(*(c.connect() for c in self.clients))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for c in reversed(self.clients):
            await c.close()

    @property
    def unavailable(self) -> list[str]:
        return [f"{self.cluster.name}/{c.server.name}: {c.error}" for c in self.clients if not c.available]

    @property
    def tools(self) -> list[ToolInfo]:
        seen: dict[str, ToolInfo] = {}
        for c in self.clients:
            for t in c.tools:
                seen.setdefault(t.name, t)
        return list(seen.values())

    def has_tool(self, name: str) -> bool:
        return any(c.has_tool(name) for c in self.clients)

    async def call(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (sent to the server)
    ) -> ToolResult:
        for c in self.clients:
            if c.has_tool(tool):
                return await c.call(tool, args, timeout=timeout)
        live = [c for c in self.clients if c.available]
        if live:
            # Not listed for this caller (or nowhere): let the first server's checks explain why.
            return await live[0].call(tool, args, timeout=timeout)
        reason = "; ".join(c.error for c in self.clients) or "no MCP server is configured"
        return ToolResult(
            tool=tool,
            status="error",
            cluster=self.cluster.name,
            args=dict(args or {}),
            command=kubectl_command(tool, args),
            error=f"unavailable: {reason}",
        )

    async def call_round(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any] | None]],
        *,
        round_chars: int = 120_000,
        timeout: float | None = None,  # noqa: ASYNC109 (sent to the server)
    ) -> list[ToolResult]:
        """Run one round of calls (one model turn) at once; their ``text`` together fits
        ``round_chars`` (DESIGN §2 step 5), in the order given, each saying what was cut."""
        results = await asyncio.gather(*(self.call(tool, args, timeout=timeout) for tool, args in calls))
        budget = RoundBudget(round_chars)
        capped = []
        for r in results:
            if not r.ok:
                capped.append(r)
                continue
            text, cut = budget.take(r.text)
            capped.append(dataclasses.replace(r, text=text, cut=r.cut + cut))
        return capped

    @staticmethod
    def servers_of(clusters: Sequence[ClusterSettings]) -> list[str]:
        return [f"{c.name}/{s.name}" for c in clusters for s in c.mcp_servers]
