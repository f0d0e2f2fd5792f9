"""The gateway's settings: the shared groups plus ``gateway``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.config import ServiceSettings

__all__ = ["ChannelSettings", "GatewaySettings", "Settings"]


class ChannelSettings(BaseModel):
    """A named web-chat channel beside each person's private conversation (alert answers land here).

    ``members`` entries: ``user:NAME``, ``group:NAME``, or a bare ``NAME`` matching a user name or
    one of the user's groups (as authenticated from their token). Only members read or post.
    """

    model_config = ConfigDict(extra="ignore")

    name: str
    """Channel name (``team-a-alerts``); the alert route's ``channel``."""
    members: list[str] = Field(default_factory=list)
    """Who may read and post: users and groups (see above)."""

    def admits(self, user: str, groups: tuple[str, ...]) -> bool:
        for entry in self.members:
            kind, _, name = entry.partition(":") if ":" in entry else ("", "", entry)
            if kind in ("", "user") and name == user:
                return True
            if kind in ("", "group") and name in groups:
                return True
        return False


class GatewaySettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    host: str = "127.0.0.1"
    """Address the HTTP server (API, web chat, /healthz, /metrics) listens on."""
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

    def channel(self, name: str) -> ChannelSettings | None:
        for c in self.channels:
            if c.name == name:
                return c
        return None

    def url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"


class Settings(ServiceSettings):
    """Everything the gateway reads from the stack's YAML file (``gateway:`` section and shared groups)."""

    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
