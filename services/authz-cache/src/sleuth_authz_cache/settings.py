"""Settings of authz-cache: the shared groups plus ``authz_cache`` (listen address, metrics)."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.config import ServiceSettings

__all__ = ["AuthzCacheSettings", "Settings"]


class AuthzCacheSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    host: str = "127.0.0.1"
    """Address the health/metrics server listens on."""
    metrics_port: int = 9101
    """Port of ``/healthz``, ``/readyz`` and ``/metrics``; 0 turns the server off."""
    token_cache_ttl: float = 30.0
    """Seconds a successful TokenReview stays cached (keyed by the token's SHA-256); 0 = off."""
    max_concurrent_requests: int = 64
    """Bus requests handled at once per subscription by one replica."""
    inventory_max_bytes: int = Field(default=900_000, ge=1_000)
    """Largest ``sleuth.authz.inventory`` reply, in bytes; must stay under the NATS server's
    ``max_payload`` (1 MiB by default). A bigger inventory drops its least distinctive names first
    and says ``truncated``."""
    cache_key_env: str = "SLEUTH_AUTHZ_CACHE_KEY"
    """Environment variable holding the secret that seals cached entries in Redis (HMAC): give all
    replicas the same one. Unset: each process makes its own (replicas then share no entries)."""

    def cache_secret(self) -> bytes:
        return os.environ.get(self.cache_key_env, "").encode() if self.cache_key_env else b""


class Settings(ServiceSettings):
    """authz-cache settings. The ``authz`` group (cache_ttl, backend_timeout, review_concurrency …)
    and ``clusters`` (api_server, ca_file, authz_token_env/_file) come from ``ServiceSettings``."""

    authz_cache: AuthzCacheSettings = Field(default_factory=AuthzCacheSettings)
