"""Configuration groups shared by the services, and the YAML loader.

Every service reads one YAML file (``--config``) into its own pydantic-settings model that
composes the groups it needs; unknown sections are ignored, so one file can serve the whole
stack. Environment variables override with the ``SLEUTH_`` prefix and ``__`` as the nesting
delimiter (``SLEUTH_NATS__URL``). Secrets are never in the file: a field names the environment
variable (``*_env``) or a file (``*_file``) that holds them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

__all__ = [
    "AuditSettings",
    "AuthzSettings",
    "ClusterSettings",
    "IdentitySettings",
    "JetStreamSettings",
    "LoggingSettings",
    "McpServerSettings",
    "NatsSettings",
    "RedisSettings",
    "ServiceSettings",
    "ToolCapsSettings",
    "ToolRuleSettings",
    "load_settings",
]


class _Group(BaseModel):
    model_config = ConfigDict(extra="ignore")


class NatsSettings(_Group):
    url: str = "nats://127.0.0.1:4222"
    """NATS server URL(s), comma separated."""
    connect_timeout: float = 2.0
    """Seconds to wait for a connection at start-up."""
    retry_interval: float = 2.0
    """Seconds between connection attempts while NATS cannot be reached (at start-up and after a
    disconnect). The service stays up meanwhile, says so once per attempt in its log, and its
    ``/readyz`` answers 503."""
    user: str = ""
    """User name this service logs in with (user/password authentication; the server's
    permissions for that user decide what it may publish and subscribe). Empty = no user."""
    password_env: str = "SLEUTH_NATS_PASSWORD"
    """Environment variable holding the password of ``user`` (secrets come only from the
    environment)."""
    password_file: str = ""
    """Or a file holding it (a mounted Secret; the embedded stack's ``audit.password``), read when
    ``password_env`` is unset or empty."""
    creds_file: str = ""
    """NATS ``.creds`` file (user JWT and nkey seed, decentralized auth); instead of ``user``."""
    nkey_seed_file: str = ""
    """File holding an nkey seed (``SU…``) whose public key the server lists; instead of ``user``."""
    tls_ca_file: str = ""
    """CA bundle that signs the server's certificate (empty = system trust). Setting any
    ``tls_*`` file, or a ``tls://`` URL, turns TLS on."""
    tls_cert_file: str = ""
    """Client certificate (PEM) for mutual TLS."""
    tls_key_file: str = ""
    """Private key (PEM) of ``tls_cert_file``."""
    tls_verify: bool = True
    """Verify the server's certificate and host name. ``false`` only against a test server."""
    inbox_prefix: str = ""
    """Prefix of this service's reply subjects. Empty = ``_INBOX.<user>`` when ``user`` is set,
    else ``_INBOX``. The server lets a service subscribe to its own inboxes only, so this must
    match the prefix its permissions allow."""

    def password(self) -> SecretStr | None:
        """The password of ``user`` from ``password_env`` (else ``password_file``), or None when
        unset or empty."""
        value = os.environ.get(self.password_env, "") if self.password_env else ""
        if not value and self.password_file:
            value = Path(self.password_file).read_text(encoding="utf-8").strip()
        return SecretStr(value) if value else None

    def inbox(self) -> str:
        """The inbox prefix in effect (see ``inbox_prefix``)."""
        if self.inbox_prefix:
            return self.inbox_prefix
        return f"_INBOX.{self.user}" if self.user else "_INBOX"


class RedisSettings(_Group):
    url: str = "redis://127.0.0.1:6379/0"
    """Redis / Valkey URL."""
    timeout: float = 1.0
    """Socket timeout in seconds: Redis trouble surfaces quickly instead of hanging a request."""
    username: str = ""
    """ACL user this service logs in as (its key patterns and commands are limited by the
    server's ACL). Empty = the ``default`` user."""
    password_env: str = "SLEUTH_REDIS_PASSWORD"
    """Environment variable holding the password of ``username`` (secrets come only from the
    environment)."""
    tls: bool = False
    """Connect over TLS (also on when the URL is ``rediss://``)."""
    ca_file: str = ""
    """CA bundle that signs the server's certificate (empty = system trust)."""
    max_connections: int = 32
    """Most connections this process opens to Redis; a command beyond that waits up to
    ``timeout`` seconds for a free one, then fails like any other Redis error."""
    retry_interval: float = 2.0
    """Seconds between checks while Redis cannot be reached at start-up (one log line each); the
    service stays up meanwhile and its ``/readyz`` answers 503."""

    def password(self) -> SecretStr | None:
        """The password of ``username`` from ``password_env``, or None when unset or empty."""
        value = os.environ.get(self.password_env, "") if self.password_env else ""
        return SecretStr(value) if value else None


class JetStreamSettings(_Group):
    replicas: int = Field(default=1, ge=1, le=5)
    """Replicas of the streams the services create at start (JOBS, CHAT, ALERTS): 1 for a single
    nats-server, 3 for a clustered one (a stream that already exists is left as it is)."""
    results_max_age: float = Field(default=3600.0, ge=60.0)
    """Seconds the RESULTS stream keeps each job's answer: a gateway restarted while a question ran
    (or a client retrying with the same request id) finds it there for this long. Set the same on
    every service (whichever starts first creates the stream)."""
    results_max_bytes: int = Field(default=1 << 30, ge=1 << 20)
    """Bytes the RESULTS stream keeps at most (the oldest answers go first)."""


class AuditSettings(_Group):
    max_age: float = Field(default=30 * 86400.0, ge=60.0)
    """Seconds the AUDIT stream keeps each event (default 30 days). Set the same on every service:
    whichever starts first creates the stream; an existing stream is left as it is."""
    max_bytes: int = Field(default=1 << 30, ge=1 << 20)
    """Bytes the AUDIT stream keeps at most (default 1 GiB); the oldest events go first."""
    publish_timeout: float = Field(default=2.0, gt=0)
    """Seconds one event may wait for JetStream's acknowledgement before it is retried. Events are
    published in the background: a slow or absent NATS never delays the request they describe."""
    backlog: int = Field(default=10_000, ge=1)
    """Events held in memory while JetStream cannot take them; beyond it the oldest are dropped
    (logged and counted in ``sleuth_audit_events_total{outcome="dropped"}``)."""


class LoggingSettings(_Group):
    level: str = "INFO"
    """Root log level."""
    json_format: bool = False
    """JSON lines (deployments) instead of plain text (local runs)."""


class ToolRuleSettings(_Group):
    """How one tool carries namespaces in its arguments (config ``tool_rules``; DESIGN §2 step 1).
    Rules learned from a server's tool list fill in tools not named here."""

    namespace_args: list[str] = Field(default_factory=lambda: ["namespace"])
    """Arguments holding one namespace each."""
    namespace_list_args: list[str] = Field(default_factory=lambda: ["namespaces"])
    """Arguments holding a list (or comma-separated string) of namespaces."""
    ref_args: list[str] = Field(default_factory=list)
    """Arguments holding ``ns/name`` references."""
    promql_args: list[str] = Field(default_factory=list)
    """Arguments holding PromQL, pinned to the caller's namespaces before the call."""
    namespaced: bool = True
    """The tool reads namespaced data: a scoped caller must name (or fan out over) namespaces."""
    fan_out: bool = True
    """A scoped caller who leaves the namespace out gets one call per own namespace, merged."""
    cluster_admin_only: bool = False
    """Only callers with cluster-wide access may use (or see) the tool."""


class McpServerSettings(_Group):
    name: str = "kube"
    """Short name of the server, used in tool names and audit events."""
    url: str = "http://127.0.0.1:8181/mcp"
    """Streamable-HTTP endpoint of the MCP server."""
    timeout: float = 10.0
    """Per-call timeout in seconds."""
    unscoped: bool = False
    """Results everyone on the cluster may see (the result filter is skipped, not the argument check)."""
    self_authorized: bool = False
    """Forward the caller's identity as X-Remote-User; the server scopes itself."""
    allow_tools: list[str] | None = None
    """If set, the only tools used from this server."""
    tool_rules: dict[str, ToolRuleSettings] = Field(default_factory=dict)
    """Per-tool argument rules, by tool name (override what is learned from the tool list)."""
    filter_bytes: int = 4_000_000
    """Results larger than this are withheld from scoped callers as too large to check."""
    filter_timeout: float = 5.0
    """Seconds a large result may take to check (it is checked in a worker thread, off the event
    loop); a result not checked in time is withheld, never shown unchecked."""
    max_fan_out: int = 20
    """Most namespaces one call fans out over (more: the caller is asked to name one)."""
    identity: bool = False
    """Send a signed assertion of the caller's identity with every request (header
    ``Sleuth-Identity``). Sleuth's own kube-mcp requires it and reads as that identity
    (impersonation); never set it for a server you do not run."""
    identity_audience: str = ""
    """Audience of those assertions; empty = ``kube-mcp/<cluster name>`` (what kube-mcp expects)."""


class ToolCapsSettings(_Group):
    """Budgets of what a model reads from tools (DESIGN §2 step 5)."""

    result_chars: int = 40_000
    """Characters of one tool result shown to a model; the rest is cut with a note."""
    round_chars: int = 120_000
    """Characters of all results of one round of calls (one model turn) together."""


class ClusterSettings(_Group):
    name: str
    """Cluster name as users say it ("prod-1")."""
    aliases: list[str] = Field(default_factory=list)
    """Other names and regions that mean this cluster."""
    api_server: str = ""
    """Kubernetes API URL (https://...), used by authz-cache for SubjectAccessReview / TokenReview."""
    ca_file: str = ""
    """CA bundle for the API server; empty = system trust."""
    authz_token_env: str = ""
    """Environment variable holding the token authz-cache uses to create reviews."""
    authz_token_file: str = ""
    """File holding that token (a mounted service-account token), if no env var is set."""
    mcp_servers: list[McpServerSettings] = Field(default_factory=list)
    """MCP servers that read this cluster."""

    def authz_token(self) -> SecretStr | None:
        if self.authz_token_env and os.environ.get(self.authz_token_env):
            return SecretStr(os.environ[self.authz_token_env])
        if self.authz_token_file and Path(self.authz_token_file).is_file():
            return SecretStr(Path(self.authz_token_file).read_text().strip())
        return None


class AuthzSettings(_Group):
    cache_ttl: float = 60.0
    """Seconds a resolved scope stays cached per (user, groups)."""
    request_timeout: float = 3.0
    """Seconds a client waits for authz-cache before answering "authorization is unavailable"."""
    review_concurrency: int = 8
    """Parallel per-namespace SubjectAccessReviews per scope resolution."""
    scope_candidates: Literal["rolebindings", "all"] = "rolebindings"
    """Which namespaces a scope resolution reviews for someone without cluster-wide access:
    ``rolebindings`` — those whose RoleBindings name them, their groups or their service account
    (under RBAC nothing else grants a namespace; each is still confirmed by a SubjectAccessReview, so
    this can only narrow a scope); ``all`` — every namespace, one review each (slow on big clusters;
    needed when an authorizer other than RBAC, e.g. a webhook, grants namespaces)."""
    rolebinding_index_ttl: float = Field(default=30.0, gt=0)
    """Seconds authz-cache keeps a cluster's RoleBinding index (``scope_candidates: rolebindings``).
    A RoleBinding made meanwhile is seen after at most this long, or at once after ``sleuth.authz.invalidate``."""
    resolve_cache_ttl: float = 10.0
    """Seconds authz-cache keeps a cluster's IP → namespace index (``sleuth.authz.resolve``)."""
    hedge_after: float = Field(default=0.3, ge=0)
    """Seconds without an answer from authz-cache after which a scope or sign-in request is sent again,
    and again after each further interval (at most 16 copies): the queue group picks a replica per
    copy, so one frozen replica costs a few intervals instead of ``request_timeout``. The first answer
    wins; the total wait stays ``request_timeout``. 0 = off."""
    backend_timeout: float = 2.0
    """Seconds for one call to a cluster's API. Keep it below ``request_timeout`` so a hung
    cluster is reported as a cluster error instead of timing the whole request out."""


class IdentitySettings(_Group):
    """Signed identity assertions (DESIGN §2): the agent signs whom it acts for with an Ed25519
    private key; kube-mcp trusts only the matching public keys. Keys are PEM files (or PEM in
    an environment variable), never values in the config file."""

    signing_key_file: str = ""
    """Ed25519 private key (PEM, PKCS#8) this service signs assertions with: the agent's for
    kube-mcp; authz-cache's, alerts' and the gateway's (chat users) for jobs (``job_issuers``)."""
    signing_key_env: str = "SLEUTH_IDENTITY_SIGNING_KEY"
    """Environment variable holding the private key PEM; wins over ``signing_key_file``."""
    verify_key_files: list[str] = Field(default_factory=list)
    """Public keys (PEM) whose assertions are accepted (kube-mcp); list the old and the new
    key while rotating."""
    verify_keys_env: str = "SLEUTH_IDENTITY_VERIFY_KEYS"
    """Environment variable holding public key PEM(s), added to ``verify_key_files``."""
    issuer: str = "sleuth-agent"
    """The agent's issuer name: written into its assertions and required by kube-mcp."""
    ttl: float = 30.0
    """Seconds an assertion is valid (a fresh one is signed for every request)."""
    max_ttl: float = 300.0
    """Verifiers refuse assertions that live longer than this."""
    leeway: float = 5.0
    """Clock skew tolerated between signer and verifier, in seconds."""
    job_issuers: dict[str, list[str]] = Field(default_factory=dict)
    """Who may tell the agent whom a job acts for: issuer name → public key files (PEM).
    ``sleuth-authz`` signs a person's login (authz-cache), ``sleuth-alerts`` a channel's alerts,
    ``sleuth-chat`` a chat user the gateway mapped to a Kubernetes identity (Mattermost, where
    nobody signs in with a token), ``sleuth-scheduler`` a schedule's owner. Each key is bound to
    its issuer."""
    require_job_identity: bool = True
    """The agent refuses a job without a valid assertion of its requester from a ``job_issuers``
    key (the ``requester`` field alone is never trusted). ``false`` only for a bus nobody else
    can publish on."""
    job_audience: str = "sleuth-agent"
    """Audience of job assertions."""
    job_ttl: float = 300.0
    """Seconds a job assertion is valid: time in the queue plus the investigation."""


class ServiceSettings(BaseSettings):
    """Fields every service has. Services subclass this and add their own group."""

    model_config = SettingsConfigDict(env_prefix="SLEUTH_", env_nested_delimiter="__", extra="ignore")

    prefix: str = "sleuth"
    """Subject prefix on the bus."""
    nats: NatsSettings = Field(default_factory=NatsSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    jetstream: JetStreamSettings = Field(default_factory=JetStreamSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    clusters: list[ClusterSettings] = Field(default_factory=list)
    authz: AuthzSettings = Field(default_factory=AuthzSettings)
    tool_caps: ToolCapsSettings = Field(default_factory=ToolCapsSettings)
    identity: IdentitySettings = Field(default_factory=IdentitySettings)
    global_mcp_servers: list[McpServerSettings] = Field(default_factory=list)
    """Namespace-agnostic MCP servers (documentation, runbooks) offered with every cluster:
    no namespace rules, no result filter; redaction, markers and caps still apply."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment wins over the file (file values arrive as init kwargs).
        return env_settings, init_settings

    def cluster(self, name: str) -> ClusterSettings | None:
        for c in self.clusters:
            if c.name == name:
                return c
        return None


S = TypeVar("S", bound=BaseSettings)


def load_settings(model: type[S], path: str | os.PathLike[str] | None = None, **overrides: Any) -> S:
    """Read ``path`` (YAML; missing path = defaults), then environment, into ``model``."""
    data: dict[str, Any] = {}
    if path:
        text = Path(path).read_text()
        loaded = yaml.safe_load(text) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: the config file must be a YAML mapping")
        data.update(loaded)
    data.update(overrides)
    return model(**data)
