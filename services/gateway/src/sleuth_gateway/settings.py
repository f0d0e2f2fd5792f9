"""The gateway's settings: the shared groups plus ``gateway``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.config import ServiceSettings

__all__ = ["GatewaySettings", "Settings"]


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

    def url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"


class Settings(ServiceSettings):
    """Everything the gateway reads from the stack's YAML file (``gateway:`` section and shared groups)."""

    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
