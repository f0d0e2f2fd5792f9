"""Best-practice reports (issue 14): findings of the rules in code over the asker's scope, the
report that carries them (``sleuth report``, the agent), and the commands that ask for one
(``sleuth.reports.<op>``, request/reply, gateway → reporter; DESIGN §1).

A report is computed by rules in code, never by a model: every finding names the object, says in
one sentence why it matters and gives the fix with the values observed on that object.

The flow of ``report`` in chat: the gateway authenticates the asker and sends a ``ReportRequest``
(``op="run"``) with the target the command was said in and everyone who reads it; the reporter
answers at once with a ``ReportReply`` (the report's id) and queues a ``ReportTask`` on its
REPORTS stream (``sleuth.reports.queued.<id>``; a reporter that dies mid-report leaves it to
another replica). The reporter asks the agent for the report with an ``InvestigationJob`` of
origin ``report`` (requester = the asker, audience = the other readers, signed by
``sleuth-reporter``); the agent answers on ``jobs.done.<job>`` with an ``InvestigationResult``
whose ``report`` is the ``ReportResult`` and whose ``answer_markdown`` is its chat summary. The
reporter then posts ``ChatPost``s to the target (``origin="report"``, ids ``report-<id>`` and
``report-<id>-all``; ``meta``: ``report``, ``part``, ``thread``, ``readers``, ``status``) and
emails the addresses configured for the target.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.messages.base import Message
from sleuth_common.messages.jobs import InvestigationResult, Requester

__all__ = [
    "SEVERITIES",
    "Finding",
    "NotChecked",
    "ReportInfo",
    "ReportOp",
    "ReportReply",
    "ReportRequest",
    "ReportResult",
    "ReportState",
    "ReportTask",
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
    shown: int = 0
    """How many of ``findings`` (the first ones) ``answer_markdown`` writes out."""

    def public_json(self) -> dict[str, Any]:
        """The report as ``sleuth report --json`` prints it."""
        return self.model_dump(mode="json", exclude={"kind", "schema_version", "shown"})


# -- the commands (``sleuth.reports.<op>``) and the reporter's queue ----------------------------------

ReportOp = Literal["run", "status"]
ReportState = Literal["queued", "running", "posted", "done", "failed"]
"""``queued`` (waiting for a reporter), ``running`` (the agent is making it), ``posted`` (in chat;
the email still being sent or retried), ``done`` (posted, and emailed when addresses are set),
``failed`` (no report came back: a notice was posted instead)."""


class ReportRequest(Message):
    """One report command said by ``user`` in ``target``. The gateway authenticated the user
    (``user``/``groups`` are their Kubernetes identity) and checked they may post in ``target``."""

    kind: Literal["reports.request"] = "reports.request"
    schema_version: int = 1
    op: ReportOp
    user: str
    groups: tuple[str, ...] = ()
    target: str
    """Where the command was said and where the report is posted: ``web:<channel>``,
    ``mattermost:<channel_id>``, or ``conversation:<user>`` (the asker's private conversation)."""
    thread: str = ""
    """The thread the posts go in (a Mattermost root post id); "" = none."""
    members: tuple[Requester, ...] = ()
    """Everyone who reads ``target``, as the gateway resolved them, the asker included: the
    report shows only what all of them may read (the intersection of their scopes). Empty for a
    private conversation (``conversation:<user>``, the asker's own). A ``run`` in any other
    target without them is refused."""
    clusters: tuple[str, ...] = ()
    """``run``: only these clusters (names or aliases); empty = every cluster the readers may read."""
    emails: tuple[str, ...] | None = None
    """``run``: who gets the email. None = every address configured for ``target``
    (``reporter.emails``); () = no email; a list = those of them (an address not configured for
    ``target`` is refused: only the operator decides where a channel's reports may go)."""
    id: str = ""
    """``status``: the report's id; "" = the latest report in ``target``."""


class ReportInfo(BaseModel):
    """One report as ``status`` shows it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    owner: str
    target: str
    state: ReportState
    created: float = 0.0
    finished: float = 0.0
    """Unix seconds the report was posted (or failed); 0 while it runs."""
    status: str = ""
    """The report's outcome once known: ``ok``, ``denied``, ``error``, ``not_finished``."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Findings per severity."""
    email: str = ""
    """``none`` (no addresses), ``pending``, ``sent``, ``retrying``, ``failed``."""
    email_attempts: int = 0


class ReportReply(Message):
    kind: Literal["reports.reply"] = "reports.reply"
    schema_version: int = 1
    ok: bool = True
    """False when nothing was done (a refusal, an error, an unknown id)."""
    text: str
    """Markdown for the chat, said where the command was said."""
    id: str = ""
    """The report's id (``run``: the one started, or the one already running in ``target``)."""
    report: ReportInfo | None = None


class ReportTask(Message):
    """A report to make, on the REPORTS stream (the reporter's own work queue, durable consumer
    ``reporter``): the request as accepted, and the addresses it is emailed to."""

    kind: Literal["reports.task"] = "reports.task"
    schema_version: int = 1
    id: str
    request: ReportRequest
    emails: tuple[str, ...] = ()
    created: float = Field(default_factory=time.time, description="unix seconds")


# ``InvestigationResult.report`` names ``ReportResult``, which imports ``jobs`` (``Requester``):
# jobs.py refers to it by name only, and the model is completed here, where both exist. The
# package's ``__init__`` imports this module, so it is complete before anyone can use it.
InvestigationResult.model_rebuild(_types_namespace={"ReportResult": ReportResult})
