"""Audit events (``<prefix>.audit.<name>``, JetStream stream AUDIT; DESIGN §1): one typed event per
decision, from every service.

Every event carries who (``user``, ``groups``), through which entry point (``entry``), for which
request or job, on which cluster, what was decided (``decision``) and why (``reason``, a code such
as ``invalid_token`` or ``namespace_out_of_scope``), and counts. Never a token, a secret, a
question or an answer, a raw tool result, or the name of any Kubernetes object: an auditor may
read every event, whoever it was about. Opaque ids (job, request, schedule, report, chat channel)
and configured names (cluster, MCP server, tool, root-cause family) are not object names.

``parse_audit_event`` reads any of them (bytes, str or a dict); ``AuditEvent`` is the union.
The subject of an event is ``Subjects.audit(event.subject_name)``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import uuid4

from pydantic import Field, TypeAdapter, field_validator

from sleuth_common.messages.base import Message

__all__ = [
    "AUDIT_KINDS",
    "AlertBatched",
    "AlertReceived",
    "AuditBase",
    "AuditEvent",
    "Authenticated",
    "ChannelMarked",
    "ClusterCount",
    "CommandRun",
    "Decision",
    "Entry",
    "JobFinished",
    "JobRefused",
    "JobStarted",
    "RateLimited",
    "ReportRequested",
    "ReportSent",
    "ScheduleChanged",
    "ScheduleFired",
    "ScopeResolved",
    "TokenReviewed",
    "ToolCall",
    "entry_of_origin",
    "parse_audit_event",
]

Entry = Literal["web", "api", "mcp", "mattermost", "alertmanager", "schedule", "report", "cli", "bus", ""]
"""Where the request came in: the web chat, the HTTP API, the MCP endpoint, Mattermost, an
Alertmanager webhook, a schedule's run, a report, the CLI, or a bus request from another service."""

Decision = Literal["allowed", "refused", "filtered", "withheld", "error", "done"]
"""``allowed``; ``refused`` (denied, rate-limited, unauthenticated); ``filtered`` (allowed with
records removed); ``withheld`` (nothing could be shown); ``error``; ``done`` (a fact, no verdict:
a job finished, a schedule changed, a report was sent)."""

_CODE = r"^[a-z0-9][a-z0-9_.:-]{0,63}$|^$"
_ORIGIN_ENTRY: dict[str, Entry] = {"api": "api", "mcp": "mcp", "alert": "alertmanager", "schedule": "schedule",
                                   "report": "report", "cli": "cli"}


def entry_of_origin(origin: str, target: str = "") -> Entry:
    """The entry point of an ``InvestigationJob`` (``origin``, and for chat its target)."""
    if origin == "chat":
        return "mattermost" if target.startswith("mattermost:") else "web"
    return _ORIGIN_ENTRY.get(origin, "")


class AuditBase(Message):
    """Fields of every audit event. ``service`` is filled in by the publisher (``AuditLog``)."""

    kind: str
    schema_version: int = 1
    id: str = Field(default_factory=lambda: uuid4().hex)
    """Unique per event: JetStream stores an event once however often it is retried (Nats-Msg-Id)."""
    ts: datetime = Field(default_factory=lambda: datetime.now(UTC))
    service: str = ""
    """The service that decided (gateway, authz-cache, agent, alerts, scheduler, reporter)."""
    user: str = ""
    """Whom the decision was about (the asker; empty when nobody was authenticated)."""
    groups: tuple[str, ...] = ()
    entry: Entry = ""
    request_id: str = ""
    job_id: str = ""
    cluster: str = ""
    decision: Decision = "done"
    reason: Annotated[str, Field(pattern=_CODE)] = ""
    """A code, never free text (``invalid_token``, ``namespace_out_of_scope``, ``rate_limited`` …)."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Numbers the decision came with (``removed``, ``namespaces``, ``alerts`` …), per kind."""

    @property
    def subject_name(self) -> str:
        """The last token of its subject: ``audit.tool_call`` → ``tool_call``."""
        return self.kind.removeprefix("audit.")

    @field_validator("counts")
    @classmethod
    def _non_negative(cls, v: dict[str, int]) -> dict[str, int]:
        return {k: max(0, int(n)) for k, n in v.items()}


# -- gateway -----------------------------------------------------------------------------------

class Authenticated(AuditBase):
    """A caller presented credentials at an entry point: ``allowed`` (who they turned out to be)
    or ``refused`` (``invalid_token``, ``service_identity``, ``throttled``, ``unavailable``,
    ``chat_user_unmapped`` …). ``chat_user_id`` is the chat system's opaque id of the sender."""

    kind: Literal["audit.authenticated"] = "audit.authenticated"
    chat_user_id: str = ""


class RateLimited(AuditBase):
    """A request was refused by a limit; ``reason`` names the limit (``requests``, ``questions``,
    ``in_flight``, ``daily_budget`` …)."""

    kind: Literal["audit.rate_limited"] = "audit.rate_limited"
    decision: Decision = "refused"


class CommandRun(AuditBase):
    """A chat command (``help``, ``refresh``, ``access``, ``alerts``, ``schedule`` …) was run or refused."""

    kind: Literal["audit.command"] = "audit.command"
    command: Annotated[str, Field(pattern=_CODE)]


# -- authz-cache and agent -------------------------------------------------------------------------

class ClusterCount(Message):
    """What a scope holds on one cluster, as counts."""

    name: str
    namespaces: int = 0
    cluster_wide: bool = False
    error: bool = False
    """The cluster's authorization backend failed: left out of the scope (fail closed)."""


class ScopeResolved(AuditBase):
    """A scope was resolved: by authz-cache (``service=authz-cache``, ``cached``, ``duration_ms``)
    or as the agent received it for a job (``service=agent``, ``job_id``). Counts per cluster, never
    namespace names. ``counts``: ``clusters``, ``namespaces``, ``errors``."""

    kind: Literal["audit.scope_resolved"] = "audit.scope_resolved"
    clusters: tuple[ClusterCount, ...] = ()
    cached: bool = False
    duration_ms: float = 0.0


class TokenReviewed(AuditBase):
    """authz-cache checked a bearer token: ``allowed`` (``user``, ``counts.groups``) or ``refused``
    (``reason``: ``invalid_token``, ``unavailable``). Never the token, nor a hash of it."""

    kind: Literal["audit.token_reviewed"] = "audit.token_reviewed"
    cached: bool = False


# -- agent ----------------------------------------------------------------------------------------

class JobStarted(AuditBase):
    """The agent began an investigation. ``counts.clusters``: clusters the job named."""

    kind: Literal["audit.job_started"] = "audit.job_started"
    origin: str = ""
    unattended: bool = False


class JobRefused(AuditBase):
    """The agent would not act on a job (``reason``: ``identity_missing``, ``identity_invalid`` …)."""

    kind: Literal["audit.job_refused"] = "audit.job_refused"
    decision: Decision = "refused"
    origin: str = ""


class JobFinished(AuditBase):
    """The agent published a job's answer. ``status`` as in the result; ``family`` the root-cause
    family; ``counts``: ``evidence``, ``tool_calls``, ``withheld``, ``unavailable``, and with a
    model ``llm_calls``, ``input_tokens``, ``output_tokens``."""

    kind: Literal["audit.job_finished"] = "audit.job_finished"
    origin: str = ""
    status: str = ""
    family: str = ""
    duration_ms: float = 0.0


class ToolCall(AuditBase):
    """One scoped tool call: ``allowed``, ``filtered`` (records removed), ``withheld``, ``refused``
    (arguments out of scope) or ``error``. ``counts``: ``removed``, ``redacted``, ``cut``, ``calls``."""

    kind: Literal["audit.tool_call"] = "audit.tool_call"
    server: str = ""
    tool: str = ""
    duration_ms: float = 0.0


# -- alerts -----------------------------------------------------------------------------------------

class AlertReceived(AuditBase):
    """An Alertmanager webhook: ``allowed`` (``counts.alerts`` accepted) or ``refused`` (``reason``:
    ``unauthorized``, ``bad_request``, ``too_large``, ``rate_limited`` …). ``route`` is the
    configured webhook route."""

    kind: Literal["audit.alert_received"] = "audit.alert_received"
    route: str = ""


class AlertBatched(AuditBase):
    """A batch of alerts became one investigation (``job_id``) or was dropped (``reason``).
    ``counts``: ``alerts``, ``channels``."""

    kind: Literal["audit.alert_batched"] = "audit.alert_batched"


class ChannelMarked(AuditBase):
    """``alerts on|off`` in a channel (``channel``: the chat's opaque id; ``op``: on, off)."""

    kind: Literal["audit.channel_marked"] = "audit.channel_marked"
    channel: str = ""
    op: str = ""


# -- scheduler ----------------------------------------------------------------------------------------

class ScheduleChanged(AuditBase):
    """A schedule was ``created``, ``paused``, ``resumed``, ``deleted`` (by ``user``) or ``disabled``
    (by the scheduler, after failed runs). ``schedule``: its id; ``owner``: its owner."""

    kind: Literal["audit.schedule_changed"] = "audit.schedule_changed"
    op: str
    schedule: str
    owner: str = ""


class ScheduleFired(AuditBase):
    """A schedule's run began (``job_id`` of its investigation, or ``report`` for a report)."""

    kind: Literal["audit.schedule_fired"] = "audit.schedule_fired"
    schedule: str
    owner: str = ""
    report: str = ""


# -- reporter ---------------------------------------------------------------------------------------

class ReportRequested(AuditBase):
    """Someone asked for a report (``report``: its id); ``refused`` when not allowed."""

    kind: Literal["audit.report_requested"] = "audit.report_requested"
    report: str = ""


class ReportSent(AuditBase):
    """A report was delivered (``via``: chat, email). ``counts``: ``readers``, ``findings``."""

    kind: Literal["audit.report_sent"] = "audit.report_sent"
    report: str = ""
    via: str = ""


AuditEvent = Annotated[
    Authenticated | RateLimited | CommandRun | ScopeResolved | TokenReviewed | JobStarted | JobRefused
    | JobFinished | ToolCall | AlertReceived | AlertBatched | ChannelMarked | ScheduleChanged | ScheduleFired
    | ReportRequested | ReportSent,
    Field(discriminator="kind"),
]
"""Any audit event, told apart by ``kind``."""

_ADAPTER: TypeAdapter[AuditEvent] = TypeAdapter(AuditEvent)

AUDIT_KINDS: tuple[str, ...] = tuple(
    m.model_fields["kind"].default.removeprefix("audit.")
    for m in (Authenticated, RateLimited, CommandRun, ScopeResolved, TokenReviewed, JobStarted, JobRefused,
              JobFinished, ToolCall, AlertReceived, AlertBatched, ChannelMarked, ScheduleChanged, ScheduleFired,
              ReportRequested, ReportSent)
)
"""Subject names of every kind (``tool_call`` …), for ``sleuth audit tail --kind``."""


def parse_audit_event(data: bytes | str | dict[str, Any]) -> AuditEvent:
    """Any audit event from its JSON (or a dict). Raises ``pydantic.ValidationError`` for anything
    else, an unknown ``kind`` included."""
    if isinstance(data, dict):
        return _ADAPTER.validate_python(data)
    return _ADAPTER.validate_json(data)
