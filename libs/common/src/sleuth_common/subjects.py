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

    def audit(self, kind: str) -> str:
        return f"{self.prefix}.audit.{kind}"

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
    def agent_durable(self) -> str:
        return "agent"

    @property
    def authz_queue(self) -> str:
        return "authz"
