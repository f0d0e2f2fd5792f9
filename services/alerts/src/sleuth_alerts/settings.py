"""The alerts service's settings: the shared groups plus ``alerts``."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from sleuth_common.channels import ChannelDirectory
from sleuth_common.config import ServiceSettings

__all__ = ["AlertsSettings", "RouteSettings", "RunAs", "Settings"]


class _Group(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RunAs(_Group):
    """The identity a route's investigations run as when nobody marked the channel.

    Sleuth holds no token for it: the agent resolves this user's scope per batch with
    SubjectAccessReviews for ``user`` *and* ``groups`` (as Kubernetes impersonation would), so
    list the groups the person really has (the ones their token's TokenReview returns). Whoever
    writes this config vouches for them.
    """

    user: str
    """Kubernetes user name."""
    groups: list[str] = Field(default_factory=list)
    """That user's Kubernetes groups (RBAC bindings to groups count only if listed here)."""


class RouteSettings(_Group):
    """One Alertmanager receiver: ``POST /v1/alertmanager/<name>``."""

    name: str
    """Path segment of the webhook URL (the Alertmanager receiver's ``webhook_configs.url``)."""
    token_env: str = ""
    """Environment variable holding the bearer token Alertmanager must send
    (``http_config.authorization.credentials``). Empty = the route refuses every post with 401
    while ``alerts.require_token`` is on (the default), or accepts unauthenticated posts when it is
    off (warned at start-up)."""
    channel: str
    """Web-chat channel the answers go to (``team-a-alerts``), or a full chat target (``web:…``,
    ``mattermost:<channel_id>``)."""
    run_as: RunAs | None = None
    """Identity investigations run as unless a member said ``alerts on`` in the channel. Only for
    a web-chat channel (its members are in ``gateway.channels``): in any other chat only ``alerts
    on`` tells Sleuth who reads the channel, so until then alerts there are listed, not
    investigated."""

    @property
    def target(self) -> str:
        return self.channel if ":" in self.channel else f"web:{self.channel}"

    def token(self) -> SecretStr | None:
        value = os.environ.get(self.token_env, "") if self.token_env else ""
        return SecretStr(value) if value else None


class AlertsSettings(_Group):
    host: str = "127.0.0.1"
    """Address of the webhook server (also /healthz, /readyz and /metrics)."""
    port: int = 8090
    """Port of the webhook server."""
    routes: list[RouteSettings] = Field(default_factory=list)
    """Alertmanager receivers and where their alerts go."""
    require_token: bool = True
    """Every route needs a bearer token: a route without ``token_env`` refuses every post with 401
    (named at start-up). ``false`` lets such routes accept unauthenticated posts (demos only)."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """``Host`` header values the webhook answers (name, or name:port); anything else gets 400, so a
    DNS-rebinding page cannot reach it. Empty = ``host``, ``localhost``, ``127.0.0.1`` and
    ``[::1]``; list the names Alertmanager uses (``sleuth-alerts.monitoring.svc``) when ``host``
    is ``0.0.0.0``. ``["*"]`` turns the check off."""
    allowed_origins: list[str] = Field(default_factory=list)
    """``Origin`` header values accepted (``https://host[:port]``). Alertmanager sends none, a
    browser always does on a cross-site POST: a request with any other Origin gets 403."""
    max_body_bytes: int = 1024 * 1024
    """Largest webhook body accepted; larger ones get 413."""
    max_json_depth: int = 32
    """Deepest nesting of arrays and objects accepted in a body; deeper gets 400 (Alertmanager's
    payload is 4 levels deep)."""
    body_timeout: float = 15.0
    """Seconds a client has to send a webhook body; then it gets 408 (a slow client holds nothing)."""
    header_timeout: float = 10.0
    """Seconds a client has to send a request head once it started it, or after connecting; then
    it gets 408 and the connection is closed (slow-header clients)."""
    max_connections: int = 200
    """Open connections the webhook takes at once; beyond that new requests get 503 at once."""
    max_alerts_per_request: int = 200
    """Alerts taken from one notification, in order; the rest are counted (in the webhook's answer,
    the metrics and the channel post), not stored."""
    max_stored_per_window: int = 500
    """Alerts stored per (channel, cluster) window, new and in cooldown; the rest are counted and
    reported in the window's post, not stored."""
    max_alert_bytes: int = 4096
    """Bytes of labels and annotations stored per alert (JSON-encoded). The alert name, namespace,
    object, cluster and severity labels and the summary come first; what does not fit is cut."""
    publish_timeout: float = 5.0
    """Seconds to wait for JetStream to store a payload before answering 503 (Alertmanager retries)."""
    window: float = 60.0
    """Seconds alerts of one (channel, cluster) are collected before one investigation starts."""
    cooldown: float = 1800.0
    """Seconds an alert (by fingerprint, per channel) is not diagnosed again; it rides along as context."""
    max_per_window: int = 20
    """Most new alerts one investigation is asked about; the rest are listed in the message."""
    min_severity: str = "warning"
    """Alerts below this severity are skipped (unknown severities are investigated)."""
    severities: list[str] = Field(default_factory=lambda: ["none", "info", "warning", "error", "critical"])
    """Known severities, lowest first (label ``severity``)."""
    skip_alertnames: list[str] = Field(default_factory=lambda: ["Watchdog", "InfoInhibitor"])
    """Alerts that only prove the pipeline works; never investigated."""
    cluster_labels: list[str] = Field(default_factory=lambda: ["cluster", "k8s_cluster", "cluster_name"])
    """Labels naming the cluster an alert is about (the first present wins). Its value must be the
    name or an alias of a configured cluster (``clusters``); alerts naming any other value share one
    "unknown cluster" window per channel and are counted, not investigated."""
    concurrency: int = 4
    """Investigations (one per channel and cluster) running at the same time."""
    investigation_timeout: float = 120.0
    """Deadline of one alert investigation; a batch with no answer after it (plus a grace) is
    reported as not finished."""
    answer_grace: float = 30.0
    """Seconds past a batch's deadline before it is reported as not finished (the agent's own
    deadline handling answers first when it can)."""
    tick: float = 1.0
    """Seconds between checks for windows that are due."""
    fetch_batch: int = 64
    """Webhook payloads the batcher takes from the stream at once."""
    ack_wait: float = 30.0
    """Seconds JetStream waits for the batcher to ack a payload before redelivering it."""
    batch_retention_margin: float = 3600.0
    """A closed batch (its alerts) stays in Redis for ``window + investigation_timeout +
    answer_grace`` plus this margin (time waiting for an investigation slot); once posted, only a
    marker without alerts is kept, for this margin."""

    def host_allowlist(self) -> list[str] | None:
        """The ``Host`` values the webhook answers (``allowed_hosts`` or its default); None = any."""
        names = self.allowed_hosts or [self.host, "localhost", "127.0.0.1", "[::1]"]
        return None if "*" in names else names

    def batch_ttl(self) -> float:
        """Seconds a closed batch stays in Redis before it is posted."""
        return self.window + self.investigation_timeout + self.answer_grace + self.batch_retention_margin


class Settings(ServiceSettings):
    alerts: AlertsSettings = Field(default_factory=AlertsSettings)
    gateway: ChannelDirectory = Field(default_factory=ChannelDirectory)
    """The channels and their members (the ``gateway.channels`` section of the shared file): an
    alert answer posted in a channel fits every member's access (the intersection of their
    scopes); alerts outside it are counted, never named."""

    def route(self, name: str) -> RouteSettings | None:
        for r in self.alerts.routes:
            if r.name == name:
                return r
        return None
