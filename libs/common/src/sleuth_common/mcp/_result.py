"""What a scoped tool call returns, and the audit event it emits. Neither ever raises."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["AuditCallback", "ToolAuditEvent", "ToolInfo", "ToolResult", "ToolStatus"]

ToolStatus = Literal["ok", "denied", "withheld", "error"]


@dataclass(frozen=True)
class ToolResult:
    """One scoped tool call.

    ``status``: ``ok`` (``data`` holds the result, possibly with ``removed`` foreign records
    dropped), ``denied`` (refused before sending: ``error`` says why, naming only what the caller
    may see or typed), ``withheld`` (the result could not be shown to this caller: ``error`` tells
    the model how to narrow the query), ``error`` (the server failed or did not answer; ``error``
    is ``"unavailable: ..."`` when it could not be reached).
    ``data`` is parsed JSON, or the text for an unstructured result; ``text`` is the filtered
    result as text (what a model may read); ``command`` is the replayable kubectl equivalent.
    """

    tool: str
    status: ToolStatus
    data: Any = None
    text: str = ""
    error: str = ""
    command: str = ""
    removed: int = 0
    server: str = ""
    cluster: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class ToolInfo:
    """A tool as listed to this caller (cluster-admin-only tools are not listed to others)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    server: str = ""


@dataclass(frozen=True)
class ToolAuditEvent:
    """One decision about one call, for ``sleuth.audit.tool_call``. No result data, no names
    of anything that was dropped."""

    user: str
    cluster: str
    server: str
    tool: str
    outcome: Literal["allowed", "filtered", "withheld", "denied", "error"]
    removed: int = 0
    duration_ms: float = 0.0
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "cluster": self.cluster,
            "server": self.server,
            "tool": self.tool,
            "outcome": self.outcome,
            "removed": self.removed,
            "duration_ms": round(self.duration_ms, 1),
            "reason": self.reason,
        }


AuditCallback = Callable[[ToolAuditEvent], Awaitable[None] | None]
