"""Audit events (``sleuth.audit.<kind>``, DESIGN §1): one per decision, never a secret, a raw
result or a name of anything the caller could not see — counts and codes only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sleuth_common.mcp._result import ToolAuditEvent

__all__ = ["TOOL_CALL_KIND", "tool_call_event"]

TOOL_CALL_KIND = "tool_call"
"""Published on ``Subjects(prefix).audit(TOOL_CALL_KIND)`` = ``sleuth.audit.tool_call``."""


def tool_call_event(event: ToolAuditEvent, **extra: Any) -> dict[str, Any]:
    """The ``sleuth.audit.tool_call`` payload: user, cluster, server, tool, outcome
    (``ok|filtered|withheld|denied|error``), counts (removed, redacted, cut, calls), duration,
    a reason code; ``extra`` adds context such as ``job_id``."""
    return {
        "kind": f"audit.{TOOL_CALL_KIND}",
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        **extra,
        **event.as_dict(),
    }
