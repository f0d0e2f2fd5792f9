"""A tiny in-memory Toolbox for unit tests of the investigator's follow-ups: answers are keyed by
(tool, name-or-namespace) and everything else is an error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca.followups import FollowUps
from sleuth_common.mcp import ToolResult


class FakeTools:
    def __init__(self, answers: Mapping[tuple[str, str], Any], errors: Mapping[tuple[str, str], str] | None = None) -> None:
        self.answers = dict(answers)
        self.errors = dict(errors or {})
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def has_tool(self, name: str) -> bool:
        return True

    async def call(self, tool: str, args: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> ToolResult:  # noqa: ASYNC109
        args = dict(args or {})
        self.calls.append((tool, args))
        key = (tool, str(args.get("name") or args.get("namespace") or ""))
        if key in self.errors:
            return ToolResult(tool=tool, status="error", args=args, error=self.errors[key])
        if key in self.answers:
            return ToolResult(tool=tool, status="ok", args=args, data=self.answers[key])
        return ToolResult(tool=tool, status="error", args=args, error=f"no answer for {key}")


def follow(tools: FakeTools, got: Collected | None = None, cluster_wide: bool = False) -> tuple[FollowUps, EvidenceLog]:
    log = EvidenceLog()
    return FollowUps(tools, log, got or Collected(), 5.0, cluster_wide), log
