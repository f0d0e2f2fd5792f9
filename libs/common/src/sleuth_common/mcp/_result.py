"""What a scoped tool call returns, and the audit event it emits. Neither ever raises."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from sleuth_common.scope import mark

__all__ = ["AuditCallback", "AuditOutcome", "ToolAuditEvent", "ToolInfo", "ToolResult", "ToolStatus"]

ToolStatus = Literal["ok", "denied", "withheld", "error"]
AuditOutcome = Literal["ok", "filtered", "withheld", "denied", "error"]


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
    redacted: int = 0
    """Credential-shaped values replaced in ``data``/``text`` (a count, never the values)."""
    cut: int = 0
    """Characters of ``text`` cut to fit the per-result cap (``data`` is complete)."""
    calls: int = 1
    """Requests sent to the server (more than one when the call fanned out over namespaces)."""
    server_error: bool = False
    """``error`` holds the server's own words (cluster data) rather than Sleuth's."""
    reason: str = ""
    """Why not ``ok``, as a code for audits and metrics (``namespace_out_of_scope``,
    ``invalid_arguments``, ``unresolved_ips``, ``too_large``, ``unpinned_text``, ``unavailable`` …)."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def audit_outcome(self) -> AuditOutcome:
        """``ok``, ``filtered`` (records removed), ``withheld``, ``denied`` or ``error``."""
        if self.status == "ok":
            return "filtered" if self.removed else "ok"
        return self.status

    def for_model(self) -> str:
        """What a model reads: the result inside data markers (DESIGN §2 step 4), or Sleuth's
        own message for a refused or withheld call. Server errors are cluster data: marked too."""
        source = f"{self.cluster}/{self.server}.{self.tool}".strip("/.")
        if self.status == "ok":
            return mark(self.text, source=source)
        if self.server_error:
            return mark(f"error: {self.error}", source=source)
        return f"[{self.status}] {self.error}"


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
    outcome: AuditOutcome
    removed: int = 0
    duration_ms: float = 0.0
    reason: str = ""
    redacted: int = 0
    cut: int = 0
    calls: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "cluster": self.cluster,
            "server": self.server,
            "tool": self.tool,
            "outcome": self.outcome,
            "removed": self.removed,
            "redacted": self.redacted,
            "cut": self.cut,
            "calls": self.calls,
            "duration_ms": round(self.duration_ms, 1),
            "reason": self.reason,
        }


AuditCallback = Callable[[ToolAuditEvent], Awaitable[None] | None]
