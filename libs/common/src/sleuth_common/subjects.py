"""Bus subject names (DESIGN §1). Every subject hangs off one configurable prefix."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Subjects"]


@dataclass(frozen=True)
class Subjects:
    """The subjects and stream names for one deployment prefix (default ``sleuth``)."""

    prefix: str = "sleuth"

    @property
    def authz_scope(self) -> str:
        return f"{self.prefix}.authz.scope"

    @property
    def authz_resolve(self) -> str:
        return f"{self.prefix}.authz.resolve"

    @property
    def authz_inventory(self) -> str:
        return f"{self.prefix}.authz.inventory"

    @property
    def authz_authenticate(self) -> str:
        return f"{self.prefix}.authz.authenticate"

    @property
    def authz_invalidate(self) -> str:
        return f"{self.prefix}.authz.invalidate"

    @property
    def jobs_investigate(self) -> str:
        return f"{self.prefix}.jobs.investigate"

    def jobs_progress(self, job_id: str) -> str:
        return f"{self.prefix}.jobs.progress.{job_id}"

    def jobs_done(self, job_id: str) -> str:
        return f"{self.prefix}.jobs.done.{job_id}"

    @property
    def jobs_done_all(self) -> str:
        return f"{self.prefix}.jobs.done.*"

    @property
    def chat_outbound(self) -> str:
        return f"{self.prefix}.chat.outbound"

    @property
    def alerts_ingest(self) -> str:
        return f"{self.prefix}.alerts.ingest"

    def alerts_result(self, job_id: str) -> str:
        """Reply subject of alert investigations (captured by the ALERTS stream, so an answer
        survives a restart of the alerts service)."""
        return f"{self.prefix}.alerts.results.{job_id}"

    @property
    def alerts_results_all(self) -> str:
        return f"{self.prefix}.alerts.results.*"

    def alerts_channels(self, op: str) -> str:
        return f"{self.prefix}.alerts.channels.{op}"

    @property
    def alerts_channels_all(self) -> str:
        return f"{self.prefix}.alerts.channels.*"

    @property
    def agent_diagnostics(self) -> str:
        """Request/reply: the agent's view of its MCP servers and LLM (``diagnostics``)."""
        return f"{self.prefix}.agent.diagnostics"

    @staticmethod
    def agent_diagnostics_reply(inbox: str, request_id: str = "*") -> str:
        """Where an agent answers ``agent_diagnostics``: a branch of the asker's own ``inbox``
        (``_INBOX.gateway``) that nats-py's own inboxes never use, so an agent may be allowed to
        answer there without being able to write into any other reply of the asker."""
        return f"{inbox}.diagnostics.{request_id}"

    @property
    def agent_kb(self) -> str:
        """Request/reply: the chat command ``kb`` (runbooks), gateway → one agent."""
        return f"{self.prefix}.agent.kb"

    @staticmethod
    def agent_kb_reply(inbox: str, request_id: str = "*") -> str:
        """Where an agent answers ``agent_kb`` (as :meth:`agent_diagnostics_reply`)."""
        return f"{inbox}.kb.{request_id}"

    @property
    def agent_feedback(self) -> str:
        """Request/reply: 👍/👎 or "fixed by" on an answer (issue 17), gateway → one agent."""
        return f"{self.prefix}.agent.feedback"

    @staticmethod
    def agent_feedback_reply(inbox: str, request_id: str = "*") -> str:
        """Where an agent answers ``agent_feedback`` (as :meth:`agent_diagnostics_reply`)."""
        return f"{inbox}.feedback.{request_id}"

    def schedules(self, op: str) -> str:
        """Request/reply: the schedule commands (``create``, ``list``, ``run``, ``delete``,
        ``pause``, ``resume``), gateway → scheduler."""
        return f"{self.prefix}.schedules.{op}"

    @property
    def schedules_all(self) -> str:
        return f"{self.prefix}.schedules.*"

    @property
    def scheduler_queue(self) -> str:
        """Queue group of the scheduler replicas (one answers a command, one posts an answer)."""
        return "scheduler"

    def reports(self, op: str) -> str:
        """Request/reply: the report commands (``run``, ``status``), gateway → reporter."""
        return f"{self.prefix}.reports.{op}"

    @property
    def reports_all(self) -> str:
        return f"{self.prefix}.reports.*"

    def reports_queued(self, report_id: str) -> str:
        """A report to make, on the REPORTS stream (reporter → any reporter replica). One token
        deeper than ``reports_all``, so the commands' subscription never sees it."""
        return f"{self.prefix}.reports.queued.{report_id}"

    @property
    def reports_queued_all(self) -> str:
        return f"{self.prefix}.reports.queued.*"

    @property
    def reporter_queue(self) -> str:
        """Queue group of the reporter replicas (one answers a command)."""
        return "reporter"

    @property
    def reporter_durable(self) -> str:
        """The reporter replicas' shared durable consumer on the REPORTS stream."""
        return "reporter"

    def audit(self, kind: str) -> str:
        """An audit event's subject (``kind`` without its ``audit.`` tag: ``tool_call``)."""
        return f"{self.prefix}.audit.{kind}"

    @property
    def audit_all(self) -> str:
        return f"{self.prefix}.audit.>"

    @property
    def incidents_recorded(self) -> str:
        """An agent recorded an incident (incident memory); agents only: it names the asker's objects."""
        return f"{self.prefix}.incidents.recorded"

    # JetStream streams; names carry the prefix so two deployments can share a server.
    @property
    def stream_jobs(self) -> str:
        return f"{self.prefix.upper().replace('.', '_')}_JOBS"

    @property
    def stream_results(self) -> str:
        return f"{self.prefix.upper().replace('.', '_')}_RESULTS"

    @property
    def stream_chat(self) -> str:
        return f"{self.prefix.upper().replace('.', '_')}_CHAT"

    @property
    def stream_alerts(self) -> str:
        return f"{self.prefix.upper().replace('.', '_')}_ALERTS"

    @property
    def stream_audit(self) -> str:
        return f"{self.prefix.upper().replace('.', '_')}_AUDIT"

    @property
    def stream_reports(self) -> str:
        return f"{self.prefix.upper().replace('.', '_')}_REPORTS"

    @property
    def agent_durable(self) -> str:
        return "agent"

    @property
    def agent_queue(self) -> str:
        """Queue group of the agents' core subscriptions (one agent answers)."""
        return "agent"

    @property
    def authz_queue(self) -> str:
        return "authz"
