"""The agent's own view of its parts, for the chat command ``diagnostics`` (``sleuth.agent.diagnostics``).

Core request/reply: the gateway asks, one agent of queue group ``agent`` answers. Only the agent
can list a kube-mcp's tools (that needs an identity assertion only it can sign) and only it runs
the LLM, so it answers for both. Nothing in a reply is secret: URLs are shown without user,
password or query, errors are short reasons, the model's API key is never part of it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sleuth_common.messages.base import Message

__all__ = [
    "DIAGNOSTICS_USER",
    "AgentDiagnosticsReply",
    "AgentDiagnosticsRequest",
    "CircuitState",
    "LlmEndpointReport",
    "LlmReport",
    "McpServerReport",
]

DIAGNOSTICS_USER = "sleuth-diagnostics"
"""The identity the agent signs to list a server's tools: no groups, so it may read nothing
(``tools/list`` reads nothing from the cluster)."""

CircuitState = Literal["none", "closed", "open", "half_open"]


class AgentDiagnosticsRequest(Message):
    """``diagnostics`` said by ``user`` (a cluster admin, checked by the gateway); for the log."""

    kind: Literal["agent.diagnostics.request"] = "agent.diagnostics.request"
    schema_version: int = 1
    user: str


class McpServerReport(Message):
    """One MCP server as the agent reached it just now."""

    kind: Literal["agent.diagnostics.mcp_server"] = "agent.diagnostics.mcp_server"
    schema_version: int = 1
    cluster: str
    """The cluster it reads; "" for a global (namespace-agnostic) server shared by every cluster."""
    server: str
    url: str
    """Scheme, host, port and path only."""
    reachable: bool
    tools: int | None = None
    """Tools the server lists that its ``allow_tools`` enables (all of them when unset);
    None when it could not be listed."""
    latency_ms: float
    """Connect, initialize and ``tools/list`` together (or until it failed)."""
    error: str = ""
    """Why it could not be listed: a short reason."""


class LlmEndpointReport(Message):
    kind: Literal["agent.diagnostics.llm_endpoint"] = "agent.diagnostics.llm_endpoint"
    schema_version: int = 1
    provider: str
    model: str
    endpoint: str
    """Scheme, host, port and path only."""


class LlmReport(Message):
    """The model endpoint(s) of the agent and the failover circuit as its LLM client tracks it."""

    kind: Literal["agent.diagnostics.llm"] = "agent.diagnostics.llm"
    schema_version: int = 1
    primary: LlmEndpointReport | None = None
    """None: no model configured, the deterministic investigator answers alone."""
    backup: LlmEndpointReport | None = None
    circuit: CircuitState = "none"
    """``none`` without a backup endpoint; else ``closed`` (the primary answers), ``open`` (requests
    go to the backup) or ``half_open`` (one request probes the primary)."""
    consecutive_failures: int = 0
    failure_threshold: int = 0
    cooldown_seconds: float = 0.0
    last_used: Literal["", "primary", "backup"] = ""
    requests: dict[str, int] = Field(default_factory=dict)
    """HTTP attempts to the model since the agent started, by outcome (``ok``, ``rate_limited``,
    ``server_error``, ``network``, ``timeout`` …)."""


class AgentDiagnosticsReply(Message):
    kind: Literal["agent.diagnostics.reply"] = "agent.diagnostics.reply"
    schema_version: int = 1
    agent: str
    """Which agent answered: its host name (the pod's name in Kubernetes) and process id."""
    version: str
    """The sleuth-agent package version."""
    mcp: tuple[McpServerReport, ...] = ()
    llm: LlmReport = Field(default_factory=LlmReport)
    duration_ms: float = 0.0
