"""Best-practice reports (issue 14): findings of the rules in code over the asker's scope, and the
report that carries them (``sleuth report``, later ``sleuth.reports.*`` and the weekly delivery).

A report is computed by rules in code, never by a model: every finding names the object, says in
one sentence why it matters and gives the fix with the values observed on that object."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.messages.base import Message

__all__ = [
    "SEVERITIES",
    "Finding",
    "NotChecked",
    "ReportResult",
    "Severity",
]

Severity = Literal["critical", "high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low")
"""Most severe first (the order findings are listed in)."""


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Finding(_Part):
    """One rule's verdict on one object."""

    rule: str
    """The rule's id (``single_replica_no_pdb`` …)."""
    severity: Severity
    cluster: str
    namespace: str = ""
    kind: str
    name: str
    why: str
    """Why it matters, in one sentence."""
    fix: str
    """A kubectl command or a YAML snippet, with the values observed on the object filled in."""
    observed: dict[str, Any] = Field(default_factory=dict)
    """The small set of values that triggered the finding (replicas, image, ratio …)."""

    @property
    def ref(self) -> str:
        """``Kind/namespace/name`` (``Kind/name`` for a cluster-scoped object)."""
        return "/".join(p for p in (self.kind, self.namespace, self.name) if p)


class NotChecked(_Part):
    """An object a rule could not judge (the rule failed on it, or the object could not be read
    in full): reported instead of guessed; the rest of the report goes on."""

    rule: str = ""
    """The rule that failed on it; empty when no rule could look at it (it could not be read)."""
    cluster: str
    namespace: str = ""
    kind: str
    name: str
    reason: str


class ReportResult(Message):
    """A best-practice report over everything the asker may read."""

    kind: Literal["reports.result"] = "reports.result"
    schema_version: int = 1
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    user: str = ""
    created: float = Field(default_factory=time.time, description="unix seconds")
    status: Literal["ok", "denied", "error"] = "ok"
    clusters: tuple[str, ...] = ()
    namespaces: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """The namespaces covered, per cluster."""
    rules: tuple[str, ...] = ()
    """Ids of the rules that ran."""
    findings: tuple[Finding, ...] = ()
    """Most severe first."""
    not_checked: tuple[NotChecked, ...] = ()
    notes: tuple[str, ...] = ()
    """What the report could not cover and why (kinds the asker may not list, no metrics …);
    counts, never names of anything outside the scope."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Findings per severity (every severity present, zeros included)."""
    duration_ms: float = 0.0
    tool_calls: int = 0
    answer_markdown: str = ""
    """The summary and the top findings as chat Markdown, fixes in code spans and blocks."""

    def public_json(self) -> dict[str, Any]:
        """The report as ``sleuth report --json`` prints it."""
        return self.model_dump(mode="json", exclude={"kind", "schema_version"})
