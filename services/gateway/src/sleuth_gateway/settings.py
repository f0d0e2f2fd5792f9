"""The gateway's settings: the shared groups plus ``gateway``."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from sleuth_common.channels import ChannelSettings
from sleuth_common.config import ServiceSettings

__all__ = [
    "ChannelSettings",
    "GatewaySettings",
    "MattermostPerson",
    "MattermostSettings",
    "McpEndpointSettings",
    "Settings",
]


class McpEndpointSettings(BaseModel):
    """``gateway.mcp``: Sleuth as an MCP server at ``POST /mcp`` for people's own AI clients
    (tools ``ask`` and ``whoami``, the caller's own bearer token, the API's limits)."""

    model_config = ConfigDict(extra="ignore")

    enabled: bool = True
    """Serve ``/mcp``. ``false`` turns it off (kill switch): every request gets 403 with a JSON
    body saying so; ``/v1/query`` and the web chat are not affected."""
    heartbeat: float = Field(default=15.0, gt=0)
    """Seconds without news from the investigation after which ``ask`` sends a "still
    investigating" progress notification (keeps the client's stream and its patience alive)."""


class MattermostPerson(BaseModel):
    """One Mattermost account (by its email) and who it is in Kubernetes."""

    model_config = ConfigDict(extra="forbid")

    email: str
    """The account's email as Mattermost's users API shows it (compared case-insensitively)."""
    user: str
    """The Kubernetes user name the cluster's RBAC knows this person by."""
    groups: list[str] = Field(default_factory=list)
    """Their Kubernetes groups (as their own login would carry them)."""


class MattermostSettings(BaseModel):
    """The Mattermost bot. It runs when ``url`` is set and a bot token is found.

    Who is asking: a Mattermost user is mapped by the email the users API shows for them to a
    Kubernetes user and groups, from ``people`` or, when set, the HTTP backend ``people_url``;
    an unmapped user is told so and never gets a default identity. The gateway signs each job's
    identity itself (issuer ``sleuth-chat``, key ``identity.signing_key_file``); the agent must
    list that issuer's public key in ``identity.job_issuers``.
    """

    model_config = ConfigDict(extra="ignore")

    url: str = ""
    """Server URL (``https://chat.example.com``). Empty: no Mattermost bot."""
    token_env: str = "SLEUTH_MATTERMOST_TOKEN"
    """Environment variable holding the bot account's access token (wins over ``token_file``)."""
    token_file: str = ""
    """File holding the bot's access token (a mounted Secret)."""
    ca_file: str = ""
    """CA bundle (PEM) to verify the server's certificate with; empty: the system's."""
    people: list[MattermostPerson] = Field(default_factory=list)
    """Static mapping: Mattermost email → Kubernetes user and groups."""
    people_url: str = ""
    """HTTP backend asked for people not in ``people``: ``GET <people_url>?email=<email>``
    answers ``{"user": "...", "groups": [...]}`` (200) or 404 for someone it does not know."""
    people_token_env: str = ""
    """Environment variable with a bearer token for ``people_url`` (empty: none sent)."""
    sso_only: bool = False
    """Map only accounts that sign in through SSO or LDAP (``auth_service`` set), whose email
    the identity provider owns. The mapping is as trustworthy as Mattermost's emails: where
    people may sign up or change their email without verification, whoever sets a mapped
    email that no account holds yet acts as that person — turn this on there. Mattermost shows
    ``auth_service`` only to system admins: the bot account needs that role then."""
    people_cache_ttl: int = Field(default=300, ge=1)
    """Seconds a mapped (or unmapped) person is remembered in Redis; ``refresh`` forgets them."""
    memory_turns: int = Field(default=10, ge=0)
    """Turns (question or answer) kept per thread and per direct-message channel."""
    memory_ttl: int = Field(default=86400, ge=60)
    """Seconds a thread's memory lives after its last turn."""
    max_post_chars: int = Field(default=16383, ge=500)
    """Mattermost's post limit (the server's MaxPostSize); longer answers are split into
    numbered posts at paragraph boundaries."""
    progress_interval: float = Field(default=1.5, ge=0)
    """Least seconds between two edits of the "working…" post (progress never floods)."""
    typing_interval: float = Field(default=4.0, gt=0)
    """Seconds between typing indicators while an investigation runs (Mattermost shows one
    for about five seconds)."""
    lease_ttl: float = Field(default=10.0, ge=1)
    """Seconds a replica holds the listener lease without renewing it; another replica takes
    over within about this long after the holder dies."""
    reconnect_min: float = Field(default=1.0, gt=0)
    """First reconnect delay, doubled per failed attempt up to ``reconnect_max``."""
    reconnect_max: float = Field(default=30.0, gt=0)
    catch_up_window: float = Field(default=3600.0, ge=0)
    """Seconds back the adapter looks for posts missed while it was not listening (at most)."""
    max_channel_members: int = Field(default=50, ge=1)
    """A channel answer fits everyone in it: beyond this many members the bot answers only in
    direct messages (each member's access must be resolved)."""
    ignored_members: list[str] = Field(default_factory=list)
    """Usernames of accounts that read no answers (integration bots you vouch for): they do not
    count as readers of a channel. Everyone else must map to a Kubernetes identity for the bot
    to answer in a channel they are in."""
    request_timeout: float = Field(default=10.0, gt=0)
    """Seconds per REST call to Mattermost."""
    answered_ttl: int = Field(default=7 * 86400, ge=60)
    """Seconds a handled post id is remembered (no post is answered twice, across replicas)."""
    feedback_ttl: int = Field(default=90 * 86400, ge=60)
    """Seconds the bot remembers which job an answer post (and its thread) is from, so a 👍/👎
    reaction or a "fixed by:" reply there becomes feedback on it; like the agent's
    ``incidents.max_age_days`` (feedback on a forgotten incident is refused anyway)."""

    def bot_token(self) -> SecretStr | None:
        if self.token_env and os.environ.get(self.token_env, "").strip():
            return SecretStr(os.environ[self.token_env].strip())
        if self.token_file and Path(self.token_file).is_file():
            token = Path(self.token_file).read_text().strip()
            return SecretStr(token) if token else None
        return None


class GatewaySettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    host: str = "127.0.0.1"
    """Address the HTTP server (API, web chat, /healthz, /readyz, /metrics) listens on."""
    port: int = 8080
    """Port of the HTTP server."""
    public_url: str = ""
    """URL people reach the gateway at (shown in logs and links); empty = http://host:port."""
    question_limit: int = 4000
    """Longest question accepted, in characters; longer ones get 413."""
    answer_timeout: float = 60.0
    """Seconds to wait for an investigation result; the job's deadline is now + this."""
    publish_timeout: float = 5.0
    """Seconds to wait for JetStream to acknowledge a published job."""
    rate_limit_capacity: int = 10
    """Token-bucket size per user: questions that may be asked in a burst."""
    rate_limit_refill_per_second: float = 0.5
    """Tokens added back per second per user (0.5 = one question every two seconds, sustained)."""
    max_body_bytes: int = 65536
    """Largest request body accepted, in bytes; larger ones get 413."""
    auth_cache_ttl: float = 30.0
    """Seconds a successful authentication is remembered in-process (keyed by a hash of the token)."""
    conversation_ttl: int = 86400
    """Seconds a user's conversation stays in Redis after their last message."""
    conversation_max_messages: int = 100
    """Messages kept per user (oldest dropped first)."""
    history_turns: int = 10
    """Stored turns sent with a job as history when the request carries none."""
    channels: list[ChannelSettings] = Field(default_factory=list)
    """Web-chat channels (alert answers, ``alerts on|off|status``)."""
    channel_max_messages: int = 500
    """Messages kept per channel (oldest dropped first)."""
    alerts_timeout: float = 3.0
    """Seconds to wait for the alerts service to answer ``alerts on|off|status``."""
    schedules: bool = False
    """The scheduler runs in this deployment: offer ``schedule …``, ``schedules``, ``run``,
    ``pause``, ``resume``, ``unschedule`` (off: they answer that schedules are not switched on)."""
    reports: bool = False
    """The reporter runs in this deployment: offer ``report``."""
    commands_timeout: float = 3.0
    """Seconds to wait for the scheduler or the reporter to answer a command."""
    mcp: McpEndpointSettings = Field(default_factory=McpEndpointSettings)
    """The MCP endpoint ``/mcp`` (see ``McpEndpointSettings``)."""
    mattermost: MattermostSettings = Field(default_factory=MattermostSettings)
    """The Mattermost bot (see ``MattermostSettings``); off until ``url`` is set."""

    # -- abuse limits per user
    max_inflight_per_user: int = 4
    """Questions one user may have running at once, across replicas (kept in Redis); more get
    429 with Retry-After. 0 = no limit."""
    max_requests_per_user: int = 16
    """Requests of any kind one user may have in progress at once on one replica; more get 429
    at once, before they touch Redis (a burst cannot take the connections everyone shares).
    0 = no limit."""
    read_rate_limit_capacity: int = 60
    """Token-bucket size per user for everything that is not a question or a post: whoami,
    conversation and channel reads, channel lists, clearing the conversation."""
    read_rate_limit_refill_per_second: float = 2.0
    """Tokens added back per second per user to the read bucket (the web chat polls a channel
    every 3 s, well inside this)."""

    # -- backpressure: new questions wait behind every job no agent took yet (JOBS, read at most
    # every 5 s and shared by all questions); over a bound they get 503 with Retry-After.
    # Commands, retries of a question already accepted, alerts and schedules are never refused.
    max_queue_depth: int = Field(default=100, ge=0)
    """Jobs waiting for an agent (not yet taken) beyond which new questions get 503 "Sleuth is
    busy". 100 is many minutes of work for a few agents running ``max_concurrent_jobs`` 4 each.
    0 = no bound."""
    max_queue_wait: float = Field(default=60.0, ge=0)
    """Seconds the oldest job waiting for an agent may have waited before new questions get 503:
    a question behind it would not start before its ``answer_timeout`` (60 s) ran out. 0 = no bound."""
    busy_retry_after: float = Field(default=10.0, gt=0)
    """Seconds a refused asker is told to wait (``Retry-After``, and "try again in N s" in chat)."""

    # -- sign-in
    auth_failure_limit: int = 20
    """Refused tokens accepted from one client address per ``auth_failure_window``; after that,
    sign-ins from that address that would cost a TokenReview get 429 (identities already
    signed in keep working). IPv6 addresses count per /64. 0 = no limit."""
    max_sign_ins_per_address: int = 8
    """Token look-ups (tokens not already remembered) one client address may have in progress
    at once on one replica; more get 429 at once. 0 = no limit."""
    auth_failure_window: int = 60
    """Seconds over which refused sign-ins are counted per client address."""
    auth_negative_ttl: float = 5.0
    """Seconds a refused token is remembered (by its SHA-256, never the token), so repeating it
    costs no TokenReview. 0 = not remembered."""
    trusted_proxies: list[str] = Field(default_factory=list)
    """Addresses of reverse proxies whose ``X-Forwarded-For`` / ``X-Forwarded-Proto`` are
    believed (the client address of the limits above). Empty = nobody's: the address is the
    TCP peer. ``*`` trusts everyone (only behind a proxy that overwrites the header)."""
    refused_identities: list[str] = Field(
        default_factory=lambda: [
            "system:serviceaccount:sleuth:*",
            "sleuth-reader",
            "sleuth-authz",
            "group:system:serviceaccounts:sleuth",
        ]
    )
    """Identities that may not use chat or the API (Sleuth's own service identities): 403.
    ``user:NAME`` or a bare ``NAME`` matches the user name, ``group:NAME`` one of the groups; a
    trailing ``*`` matches any rest. Adjust the namespace when Sleuth runs outside ``sleuth``."""

    # -- HTTP server
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names the gateway answers to (against DNS rebinding), besides ``127.0.0.1``,
    ``localhost``, ``[::1]``, ``host`` (unless it listens on every address) and the host of
    ``public_url``, which are always allowed. ``name`` matches any port, ``name:port`` only
    that port, ``*.example.com`` any subdomain; ``*`` turns the check off. Others get 400
    "unknown host". ``/healthz``, ``/readyz`` and ``/metrics`` (no user data; probes and
    scrapers use the pod IP) are not checked."""
    cors_allowed_origins: list[str] = Field(default_factory=list)
    """Web origins (``https://ops.example.com``, exact) whose pages may call the API from a
    browser; their preflights are answered. Empty (the default) = none: no
    ``Access-Control-Allow-Origin`` on any response. The web chat is same-origin and needs none."""
    max_json_depth: int = 32
    """Deepest nesting of arrays and objects accepted in a request body; deeper gets 400."""
    header_timeout: float = 10.0
    """Seconds a client has to send a request's head (request line and headers) once it started
    it, or after connecting; then it gets 408 and the connection is closed (slow-header clients)."""
    body_timeout: float = 15.0
    """Seconds a client has to send a request body; then it gets 408."""
    keep_alive_timeout: int = 5
    """Seconds an idle keep-alive connection stays open between requests."""
    max_header_bytes: int = 16384
    """Largest request head (request line and headers) accepted, in bytes; larger gets 400."""
    max_connections: int = 1000
    """Open connections (and requests in progress) the server takes at once; beyond that new
    requests get 503 at once. 0 = no limit."""

    def channel(self, name: str) -> ChannelSettings | None:
        for c in self.channels:
            if c.name == name:
                return c
        return None

    def url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"

    def host_names(self) -> list[str]:
        """Every Host the gateway answers to (see ``allowed_hosts``); ``["*"]`` = any."""
        if "*" in self.allowed_hosts:
            return ["*"]
        names = ["127.0.0.1", "localhost", "[::1]"]
        if self.host not in ("", "0.0.0.0", "::", "[::]"):
            names.append(f"[{self.host}]" if ":" in self.host else self.host)
        if self.public_url:
            netloc = urlsplit(self.public_url).netloc.rpartition("@")[2]
            if netloc:
                names.append(netloc)
        return [*names, *self.allowed_hosts]


class Settings(ServiceSettings):
    """Everything the gateway reads from the stack's YAML file (``gateway:`` section and shared groups)."""

    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
