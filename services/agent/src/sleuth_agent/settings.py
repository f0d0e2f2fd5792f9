"""The agent's settings: the shared groups plus ``agent``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.config import ServiceSettings

__all__ = ["AgentSettings", "Settings"]


class AgentSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    metrics_port: int = 9102
    """Port for ``/healthz`` and ``/metrics``; 0 turns the HTTP server off."""
    host: str = "127.0.0.1"
    """Address of the health/metrics server."""
    max_concurrent_jobs: int = 4
    """Investigations one worker process runs at the same time (it pulls no more than this)."""
    in_progress_interval: float = 5.0
    """Seconds between "still working" signals to JetStream while a job runs (keep < ack_wait)."""
    max_deliver: int = 5
    """Deliveries of one job before JetStream gives up on it (a job that keeps killing workers)."""
    ack_wait: float = 30.0
    """Seconds JetStream waits for an ack or an in-progress signal before redelivering a job."""
    default_deadline: float = 60.0
    """Longest one investigation may run, even if the job allows more."""
    tool_timeout: float = 10.0
    """Seconds for one tool call (the server's own ``timeout`` applies when lower)."""
    connect_timeout: float = 5.0
    """Seconds to connect to one MCP server before it counts as unavailable."""
    max_namespaces: int = 10
    """Most namespaces one broad question looks at (the rest are named as not examined)."""
    max_workloads: int = 8
    """Most failing workloads examined in depth per question."""
    dedupe_ttl: float = 86400.0
    """Seconds the "this job was answered" mark stays in Redis (so a redelivered job is not answered twice)."""


class Settings(ServiceSettings):
    agent: AgentSettings = Field(default_factory=AgentSettings)
