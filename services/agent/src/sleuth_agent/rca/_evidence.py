"""Bookkeeping of one investigation: every tool call, the evidence ids it earned, what scope
hid (counts only) and which sources did not answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sleuth_common.mcp import ToolResult, kubectl_command
from sleuth_common.messages import Evidence

__all__ = ["EvidenceLog", "command_for"]


def command_for(tool: str, args: dict[str, Any]) -> str:
    """The replayable kubectl command of a tool call (one table for every investigator)."""
    return kubectl_command(tool, args)


@dataclass
class EvidenceLog:
    items: list[Evidence] = field(default_factory=list)
    calls: int = 0
    removed: int = 0
    withheld: int = 0
    denied: int = 0
    missing: int = 0
    unavailable: list[str] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    _by_call: dict[int, str] = field(default_factory=dict)

    def record(self, result: ToolResult) -> ToolResult:
        """Count one call (every call passes here, cited or not)."""
        self.calls += 1
        self.results.append(result)
        self.removed += result.removed
        if result.status == "withheld":
            self.withheld += 1
        elif result.status == "denied":
            self.denied += 1
        elif result.status == "error" and ("NotFound" in result.error or '"code":404' in result.error):
            self.missing += 1  # an answer ("it does not exist"), not an outage
        elif result.status == "error":
            what = result.command or result.tool
            self.unavailable.append(f"{result.cluster or 'cluster'}: `{what}` failed: {result.error[:200]}")
        return result

    def cite(self, result: ToolResult, summary: str, highlights: list[str] | tuple[str, ...] = ()) -> str:
        """The evidence id of ``result`` (a new ``E..`` the first time it is cited)."""
        key = id(result)
        if key in self._by_call:
            return self._by_call[key]
        eid = f"E{len(self.items) + 1:02d}"
        self.items.append(
            Evidence(
                id=eid,
                tool=result.tool,
                command=result.command or command_for(result.tool, result.args),
                summary=summary,
                highlights=tuple(h for h in dict.fromkeys(highlights) if h)[:6],
            )
        )
        self._by_call[key] = eid
        return eid

    def withheld_notes(self) -> list[str]:
        notes = []
        if self.removed:
            notes.append(f"{self.removed} record(s) from namespaces outside your access were hidden")
        if self.withheld:
            notes.append(
                f"{self.withheld} result(s) could not be checked against your access and were withheld"
            )
        if self.denied:
            notes.append(f"{self.denied} call(s) outside your access were not made")
        return notes
