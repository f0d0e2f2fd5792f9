"""Investigation jobs, their progress and their results (``sleuth.jobs.*``, DESIGN §3)."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.messages.base import Message

if TYPE_CHECKING:  # reports.py imports this module; it completes InvestigationResult (model_rebuild)
    from sleuth_common.messages.reports import ReportResult

__all__ = [
    "Action",
    "AlertRef",
    "Candidate",
    "Evidence",
    "HistoryTurn",
    "InvestigationJob",
    "InvestigationResult",
    "JobProgress",
    "Origin",
    "Requester",
    "ResultStatus",
    "RootCause",
]

Origin = Literal["chat", "api", "mcp", "alert", "schedule", "report"]
ResultStatus = Literal["diagnosed", "healthy", "insufficient_evidence", "denied", "error"]
Confidence = Literal["high", "medium", "low"]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Requester(_Part):
    """Who asked. Never a token: the agent resolves scope from this identity at run time."""

    user: str
    groups: tuple[str, ...] = ()


class HistoryTurn(_Part):
    role: Literal["user", "assistant"]
    text: str


class AlertRef(_Part):
    """One Alertmanager alert as it reaches an investigation."""

    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    status: str = "firing"
    starts_at: str = ""
    fingerprint: str = ""


def new_job_id() -> str:
    return uuid.uuid4().hex


class InvestigationJob(Message):
    kind: Literal["jobs.investigate"] = "jobs.investigate"
    schema_version: int = 1
    id: str = Field(default_factory=new_job_id)
    origin: Origin = "api"
    requester: Requester
    question: str = ""
    alerts: tuple[AlertRef, ...] = ()
    history: tuple[HistoryTurn, ...] = ()
    clusters: tuple[str, ...] = ()
    deadline: float = Field(default_factory=lambda: time.time() + 60.0, description="unix seconds")
    unattended: bool = False
    review: bool = False
    reply_subject: str = ""
    chat_target: str = ""
    audience: tuple[Requester, ...] = ()
    """Everyone who will read the answer when it goes where several people read it (a channel):
    one identity per member (a group member as ``user=""`` with that group). The agent
    investigates with the intersection of the requester's and every member's scope; the signed
    ``identity`` names the same members (``sleuth_common.channels.audience_claims``)."""
    identity: str = Field(default="", repr=False)
    """A signed assertion of ``requester`` (``sleuth_common.identity``, audience ``sleuth-agent``)
    from the component that authenticated them: authz-cache for a person's login, alerts for a
    channel, the scheduler for an owner. The agent refuses a job without a valid one; the
    ``requester`` field alone is never trusted."""


class JobProgress(Message):
    kind: Literal["jobs.progress"] = "jobs.progress"
    schema_version: int = 1
    job_id: str
    seq: int = 0
    stage: str
    message: str = ""
    ts: float = Field(default_factory=time.time)


class RootCause(_Part):
    family: str
    resource: str = ""  # the object where the fix belongs (DESIGN §3)
    affected: str = ""  # the workload that shows the symptom, when another object is the cause
    chain: str = ""  # the causal chain in one line: "pods of Deployment X cannot start → the Secret Y ..."
    summary: str = ""
    confidence: Confidence = "low"


class Candidate(_Part):
    family: str
    resource: str = ""
    score: float = 0.0


class Evidence(_Part):
    id: str
    tool: str
    command: str = ""
    summary: str = ""
    highlights: tuple[str, ...] = ()


class Action(_Part):
    text: str
    command: str = ""


class InvestigationResult(Message):
    """The result JSON of DESIGN §3, plus the job's bookkeeping."""

    kind: Literal["jobs.result"] = "jobs.result"
    schema_version: int = 1
    job_id: str = ""
    user: str = ""
    status: ResultStatus
    root_cause: RootCause | None = None
    candidates: tuple[Candidate, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    actions: tuple[Action, ...] = ()
    withheld: tuple[str, ...] = ()
    unavailable: tuple[str, ...] = ()
    answer_markdown: str = ""
    duration_ms: float = 0.0
    tool_calls: int = 0
    llm: dict[str, Any] | None = None
    """When a model took part: outcome, model, calls, tool_calls, input_tokens, output_tokens."""
    report: ReportResult | None = None
    """A job of origin ``report``: the best-practice report (``answer_markdown`` is its chat
    summary); None for an investigation."""

    def public_json(self) -> dict[str, Any]:
        """The DESIGN §3 result JSON (no bookkeeping fields)."""
        return self.model_dump(
            mode="json",
            exclude={"kind", "schema_version", "job_id", "user", "duration_ms", "tool_calls", "llm", "report"},
        )
