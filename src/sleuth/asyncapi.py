"""The AsyncAPI document of every service, from code (``sleuth asyncapi``, docs/asyncapi/).

Each document joins two FastStream brokers, neither ever connected:

- the service's own broker, as ``build(settings)`` makes it: the subscribers of its real routers
  (authz-cache's requests, the alerts, schedule and report commands, the agent's diagnostics);
- a declaration broker: what the service does with nats-py directly — its JetStream pull
  consumers (jobs, alert ingest and results, queued reports, chat posts), its publishers (jobs,
  progress, results, chat posts, audit events) and the requests it sends — declared from the same
  ``Subjects`` and message models the code uses, so every payload schema comes from code.

A ``*`` in a channel name stands for one token (a job id, a command's op, an audit kind).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from faststream.nats import JStream, NatsBroker, PullSub
from faststream.specification import AsyncAPI
from pydantic import BaseModel

from sleuth_common.config import NatsSettings
from sleuth_common.messages import (
    AgentDiagnosticsReply,
    AgentDiagnosticsRequest,
    AlertChannelRequest,
    AlertmanagerWebhook,
    AuthenticateRequest,
    ChatPost,
    FeedbackReply,
    FeedbackRequest,
    IncidentRecorded,
    InvalidateRequest,
    InventoryRequest,
    InvestigationJob,
    InvestigationResult,
    JobProgress,
    KbReply,
    KbRequest,
    ReportRequest,
    ReportTask,
    ResolveRequest,
    ScheduleRequest,
    ScopeRequest,
)
from sleuth_common.messages.audit import AuditEvent
from sleuth_common.subjects import Subjects

__all__ = ["SERVICES", "documents"]

S = Subjects("sleuth")
ANY = "*"
SERVER = "nats://127.0.0.1:4222"  # the services' default: one server in each document
VERSION = "0.1.0"


def _publishes(broker: NatsBroker, subject: str, schema: Any, what: str) -> None:
    broker.publisher(subject, schema=schema, title=f"{subject}:publish", description=what)


def _pulls(broker: NatsBroker, subject: str, stream: str, durable: str, model: type[BaseModel], what: str) -> None:
    """A JetStream pull consumer the service runs by hand (nats-py): declared, never started."""

    async def handler(msg: Any) -> None:  # pragma: no cover - a declaration
        raise NotImplementedError

    handler.__annotations__ = {"msg": model, "return": None}
    broker.subscriber(subject, stream=JStream(stream, declare=False), durable=durable, pull_sub=PullSub(),
                      title=f"{subject}:{durable}", description=what)(handler)


def _hears(broker: NatsBroker, subject: str, model: type[BaseModel], what: str, queue: str = "") -> None:
    """A core subscription the service makes by hand (nats-py): declared, never started."""

    async def handler(msg: Any) -> None:  # pragma: no cover - a declaration
        raise NotImplementedError

    handler.__annotations__ = {"msg": model, "return": None}
    broker.subscriber(subject, queue=queue, title=f"{subject}:subscribe", description=what)(handler)


def _audit(broker: NatsBroker, service: str) -> None:
    _publishes(broker, S.audit(ANY), AuditEvent,
               f"One typed audit event per decision of {service} (JetStream stream {S.stream_audit}).")


def _declared_authz() -> NatsBroker:
    b = NatsBroker(SERVER)
    _audit(b, "authz-cache")
    return b


def _declared_agent() -> NatsBroker:
    b = NatsBroker(SERVER)
    _pulls(b, S.jobs_investigate, S.stream_jobs, S.agent_durable, InvestigationJob,
           "Investigation jobs (work queue), at most max_concurrent_jobs at once, in-progress while working.")
    _publishes(b, S.jobs_progress(ANY), JobProgress, "Progress of a job (stages, tool calls).")
    _publishes(b, S.jobs_done(ANY), InvestigationResult, "The result of a job (also kept in RESULTS).")
    _publishes(b, S.alerts_result(ANY), InvestigationResult, "The result of an alert investigation (ALERTS).")
    _publishes(b, S.authz_scope, ScopeRequest, "Request: the asker's scope (reply ScopeReply).")
    _publishes(b, S.authz_resolve, ResolveRequest, "Request: IPs to namespaces (reply ResolveReply).")
    _publishes(b, S.authz_inventory, InventoryRequest, "Request: a cluster's object names (reply InventoryReply).")
    _publishes(b, S.incidents_recorded, IncidentRecorded, "An incident this agent remembered (every agent, and "
               "only agents, hear it: it names the asker's objects).")
    _audit(b, "the agent")
    return b


def _declared_alerts() -> NatsBroker:
    b = NatsBroker(SERVER)
    _publishes(b, S.alerts_ingest, AlertmanagerWebhook, "Alertmanager posts, as received, to the ALERTS stream.")
    _pulls(b, S.alerts_ingest, S.stream_alerts, "batcher", AlertmanagerWebhook,
           "Alert posts into batching windows.")
    _pulls(b, S.alerts_results_all, S.stream_alerts, "batcher-results", InvestigationResult,
           "Answers to alert investigations, posted once.")
    _publishes(b, S.jobs_investigate, InvestigationJob, "Investigation jobs for alert batches (JOBS).")
    _publishes(b, S.chat_outbound, ChatPost, "Posts to deliver (CHAT).")
    _publishes(b, S.authz_scope, ScopeRequest, "Request: the scope of a channel's readers (reply ScopeReply).")
    _audit(b, "alerts")
    return b


def _declared_scheduler() -> NatsBroker:
    b = NatsBroker(SERVER)
    _publishes(b, S.jobs_investigate, InvestigationJob, "Jobs of scheduled questions (JOBS).")
    _hears(b, S.jobs_done(ANY), InvestigationResult, "The answer of a scheduled job.", S.scheduler_queue)
    _publishes(b, S.chat_outbound, ChatPost, "Scheduled answers to deliver (CHAT).")
    _publishes(b, S.reports("run"), ReportRequest, "Request: a scheduled report (reply ReportReply).")
    _audit(b, "the scheduler")
    return b


def _declared_reporter() -> NatsBroker:
    b = NatsBroker(SERVER)
    _publishes(b, S.reports_queued(ANY), ReportTask, "A report to make (REPORTS).")
    _pulls(b, S.reports_queued_all, S.stream_reports, S.reporter_durable, ReportTask,
           "Queued reports, one replica each.")
    _publishes(b, S.jobs_investigate, InvestigationJob, "The report's read of the cluster (JOBS).")
    _hears(b, S.jobs_done(ANY), InvestigationResult, "The answer of a report job.")
    _publishes(b, S.chat_outbound, ChatPost, "Report posts to deliver (CHAT).")
    _audit(b, "the reporter")
    return b


def _declared_gateway() -> NatsBroker:
    b = NatsBroker(SERVER)
    _publishes(b, S.authz_authenticate, AuthenticateRequest, "Request: a bearer token's user (reply AuthenticateReply).")
    _publishes(b, S.authz_scope, ScopeRequest, "Request: a caller's scope, for `access` (reply ScopeReply).")
    _publishes(b, S.authz_invalidate, InvalidateRequest, "`refresh`: drop a user's cached scope.")
    _publishes(b, S.jobs_investigate, InvestigationJob, "Questions from chat, HTTP and MCP (JOBS).")
    _hears(b, S.jobs_progress(ANY), JobProgress, "Progress of the caller's job.")
    _hears(b, S.jobs_done(ANY), InvestigationResult, "The answer of the caller's job.")
    _pulls(b, S.chat_outbound, S.stream_chat, "gateway", ChatPost, "Posts to deliver, once each by post id.")
    _publishes(b, S.alerts_channels(ANY), AlertChannelRequest, "Request: `alerts on|off|status` (reply AlertChannelReply).")
    _publishes(b, S.schedules(ANY), ScheduleRequest, "Request: the schedule commands (reply ScheduleReply).")
    _publishes(b, S.reports(ANY), ReportRequest, "Request: the report commands (reply ReportReply).")
    _publishes(b, S.agent_diagnostics, AgentDiagnosticsRequest, "Request: `diagnostics` (reply AgentDiagnosticsReply "
               "to a branch of the gateway's inbox).")
    _hears(b, Subjects.agent_diagnostics_reply("_INBOX.gateway"), AgentDiagnosticsReply, "An agent's diagnostics.")
    _publishes(b, S.agent_kb, KbRequest, "Request: `kb add|show|list|rm` (reply KbReply to a branch of the "
               "gateway's inbox).")
    _hears(b, Subjects.agent_kb_reply("_INBOX.gateway"), KbReply, "An agent's answer to `kb`.")
    _publishes(b, S.agent_feedback, FeedbackRequest, "Request: feedback on an answer (reply FeedbackReply to a "
               "branch of the gateway's inbox).")
    _hears(b, Subjects.agent_feedback_reply("_INBOX.gateway"), FeedbackReply, "An agent's answer to feedback.")
    _audit(b, "the gateway")
    return b


# Given, not read from the environment (which the services' settings prefer): the documents are
# the same wherever they are made.
_FIXED: dict[str, Any] = {"prefix": S.prefix, "nats": NatsSettings(url=SERVER)}


def _service_broker(name: str) -> NatsBroker | None:
    """The service's own broker with its real routers (built, never connected)."""
    if name == "authz-cache":
        from sleuth_authz_cache.app import build as build_authz
        from sleuth_authz_cache.settings import Settings as AuthzSettings

        return build_authz(AuthzSettings.model_construct(**_FIXED)).broker
    if name == "agent":
        from sleuth_agent import Settings as AgentSettings
        from sleuth_agent import build as build_agent

        return build_agent(AgentSettings.model_construct(**_FIXED)).broker
    if name == "alerts":
        from sleuth_alerts import Settings as AlertsSettings
        from sleuth_alerts import build as build_alerts

        return build_alerts(AlertsSettings.model_construct(**_FIXED)).broker
    if name == "scheduler":
        from sleuth_scheduler import Settings as SchedulerSettings
        from sleuth_scheduler import build as build_scheduler

        return build_scheduler(SchedulerSettings.model_construct(**_FIXED)).broker
    if name == "reporter":
        from sleuth_reporter import Settings as ReporterSettings
        from sleuth_reporter import build as build_reporter

        return build_reporter(ReporterSettings.model_construct(**_FIXED)).broker
    return None  # the gateway uses nats-py only


SERVICES: dict[str, Callable[[], NatsBroker]] = {
    "agent": _declared_agent,
    "alerts": _declared_alerts,
    "authz-cache": _declared_authz,
    "gateway": _declared_gateway,
    "reporter": _declared_reporter,
    "scheduler": _declared_scheduler,
}


def document(name: str) -> dict[str, Any]:
    brokers = [b for b in (_service_broker(name), SERVICES[name]()) if b is not None]
    spec = AsyncAPI(*brokers, title=f"sleuth-{name}", version=VERSION,
                    description=f"The NATS subjects sleuth-{name} answers, consumes and publishes (prefix `sleuth`).")
    return json.loads(spec.to_specification().to_json())


def documents() -> dict[str, str]:
    """``{service: JSON text}`` for every service, as written to docs/asyncapi/<service>.json."""
    return {name: json.dumps(document(name), indent=2, sort_keys=True) + "\n" for name in sorted(SERVICES)}
