"""The agent's settings: the shared groups plus ``agent``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.config import ServiceSettings
from sleuth_common.llm import LlmSettings

__all__ = ["AgentSettings", "IncidentsSettings", "KnowledgeSettings", "LimitsSettings", "Settings"]


class AgentSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    metrics_port: int = 9102
    """Port for ``/healthz``, ``/readyz`` and ``/metrics``; 0 turns the HTTP server off."""
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

    # -- the LLM agent loop (runs after the deterministic investigator when an endpoint is set) --
    llm: LlmSettings | None = None
    """The model endpoint {provider, base_url, model, api_key_env, max_tokens, timeout, ...}; the
    environment ``SLEUTH_LLM_BASE_URL`` / ``_API_KEY`` / ``_MODEL`` / ``_PROVIDER`` overrides it.
    Neither set: the deterministic investigator answers alone."""
    fallback_llm: LlmSettings | None = None
    """A backup endpoint, used while the primary's circuit is open."""
    failover_threshold: int = 3
    """Consecutive failed requests of the primary that open its circuit."""
    failover_cooldown: float = 30.0
    """Seconds the circuit stays open before one request probes the primary again."""
    persona: str = ""
    """Who Sleuth is on this platform and platform facts, appended to the system prompt."""
    tool_guidance: str = ""
    """How to use this site's tools, appended to the system prompt."""
    max_iterations: int = 8
    """Tool rounds of the model before a final answer is demanded without tools."""
    max_tools: int = 40
    """Most tools offered to the model (named clusters first; the model is told what was left out)."""
    max_calls_per_round: int = 8
    """Tool calls of one model turn that run (concurrently); the rest are answered "not run"."""
    max_continuations: int = 3
    """Times an answer cut at the output limit is continued."""
    max_nudges: int = 2
    """Times a reply that announces work it did not do is sent back."""
    context_budget: int = 120_000
    """Characters of conversation before the oldest tool output is dropped (about 30k tokens)."""
    tool_output_chars: int = 12_000
    """Characters of one tool result shown to the model (the rest is cut, saying so)."""
    review: bool = False
    """Review every LLM answer against its own tool results (always done for ``review: true``
    jobs and unattended ones)."""
    llm_deadline_margin: float = 2.0
    """Seconds kept free before the job's deadline to publish the answer."""


class LimitsSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    daily_llm_calls: int = 300
    """LLM requests one user may cause per UTC day (shared by all replicas, in Redis); 0 = no cap.
    When reached, answers come from the deterministic investigator alone, saying so."""


class KnowledgeSettings(BaseModel):
    """Runbooks in answers (``sleuth_agent.knowledge``)."""

    model_config = ConfigDict(extra="ignore")

    runbooks_dir: str = ""
    """A directory of runbooks (``*.md`` with front matter ``title`` and ``tags``): a ConfigMap
    mounted into the agent pods, the GitOps way. Empty: only runbooks added through chat."""
    enabled: bool = True
    """Link runbooks in answers (from the directory and from Redis)."""
    max_runbooks: int = Field(default=1000, ge=0)
    """Most runbooks loaded (the directory's first); the rest are left out with a warning."""
    max_runbook_bytes: int = Field(default=65_536, ge=256)
    """Largest runbook; a bigger one is refused (chat) or skipped (directory) with the reason."""
    reload_interval: float = Field(default=10.0, gt=0)
    """Seconds between checks for changed runbooks (directory file times, the Redis version)."""
    search_timeout: float = Field(default=0.5, gt=0)
    """Longest a runbook search may take; an answer never waits longer, it goes without the line."""


class IncidentsSettings(BaseModel):
    """Incident memory and the "seen before" section of answers (``sleuth_agent.incidents``)."""

    model_config = ConfigDict(extra="ignore")

    enabled: bool = True
    """Record every diagnosed investigation and show similar earlier ones in answers."""
    max_age_days: float = Field(default=90.0, gt=0)
    """Incidents older than this are forgotten (Redis expires them; the index drops them)."""
    max_incidents: int = Field(default=10_000, ge=1)
    """Most incidents kept (in Redis and in each agent's index); the oldest go first."""
    max_summary_chars: int = Field(default=600, ge=80)
    """Longest root-cause summary kept with an incident (cut with "…")."""
    max_actions: int = Field(default=5, ge=0)
    """Most actions kept with an incident, each cut to ``max_summary_chars``."""
    max_signature_items: int = Field(default=12, ge=1)
    """Most normalised evidence highlights in an incident's signature (each at most 160 characters)."""
    shown: int = Field(default=3, ge=1, le=10)
    """Most earlier incidents a "seen before" section lists."""
    min_similarity: float = Field(default=0.5, gt=0, le=1)
    """How alike two evidence signatures must be (shared share of their normalised items, Jaccard)
    for an incident on another object or of another family to count as seen before."""
    search_timeout: float = Field(default=0.3, gt=0)
    """Longest the "seen before" search may take; an answer never waits longer, it goes without it."""
    redis_timeout: float = Field(default=2.0, gt=0)
    """Longest storing one incident (after the answer is out) or loading them at start may take."""
    reindex_interval: float = Field(default=5.0, gt=0)
    """Seconds between rebuilds of the BM25 index with incidents added since (those are searched
    one by one until then), and between attempts to load from Redis while it is down."""


class Settings(ServiceSettings):
    agent: AgentSettings = Field(default_factory=AgentSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    knowledge: KnowledgeSettings = Field(default_factory=KnowledgeSettings)
    incidents: IncidentsSettings = Field(default_factory=IncidentsSettings)
