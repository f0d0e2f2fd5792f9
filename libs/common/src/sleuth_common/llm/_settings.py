"""``LlmSettings`` (config group ``agent.llm`` / ``agent.fallback_llm``) and the environment
variables that configure the primary endpoint without a config file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

__all__ = ["ENV_API_KEY", "ENV_BASE_URL", "ENV_MODEL", "ENV_PROVIDER", "LlmSettings", "resolve_llm_settings"]

ENV_BASE_URL = "SLEUTH_LLM_BASE_URL"
ENV_API_KEY = "SLEUTH_LLM_API_KEY"
ENV_MODEL = "SLEUTH_LLM_MODEL"
ENV_PROVIDER = "SLEUTH_LLM_PROVIDER"

_OPENAI_ALIASES = {"openai", "openai-compatible", "ollama", "vllm", "litellm", "azure", "azure-openai"}
_DEFAULT_BASE = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
_DEFAULT_MODEL = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o"}


class LlmSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    provider: Literal["anthropic", "openai"] = "anthropic"
    """``anthropic`` (Messages API through the anthropic SDK) or ``openai`` (any OpenAI-compatible
    chat-completions endpoint: Ollama, vLLM, LiteLLM, Azure OpenAI)."""
    base_url: str = ""
    """Endpoint; empty = the provider's public API. OpenAI-compatible URLs include ``/v1``."""
    model: str = ""
    """Model name; empty = a default of the provider."""
    api_key_env: str = ENV_API_KEY
    """Environment variable holding the API key (never put the key in the file)."""
    max_tokens: int = 4096
    """Output limit of one request; an answer cut here is continued by the agent loop."""
    timeout: float = 60.0
    """Seconds for one request (the whole streamed reply); a slower one is retried."""
    connect_timeout: float = 5.0
    """Seconds to connect to the endpoint."""
    retries: int = 3
    """Retries after the first attempt, on network errors, 408, 429, 5xx, cut streams and
    undecodable tool arguments (never on other 4xx)."""
    backoff: float = 0.5
    """First retry delay in seconds; doubles each retry, with jitter."""
    backoff_max: float = 8.0
    """Longest delay between two attempts (also caps a server's Retry-After)."""
    tool_name_limit: int = 64
    """Longest tool name the provider accepts (Anthropic and OpenAI: 64)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra HTTP headers (not secrets), e.g. for a proxy."""

    @field_validator("provider", mode="before")
    @classmethod
    def _provider_alias(cls, value: object) -> object:
        """``ollama``, ``vllm``, ``litellm``, ``azure`` ... all speak the OpenAI chat format."""
        v = str(value).strip().lower()
        return "openai" if v in _OPENAI_ALIASES else v

    def resolved_base_url(self) -> str:
        return (self.base_url or _DEFAULT_BASE[self.provider]).rstrip("/")

    def resolved_model(self) -> str:
        return self.model or _DEFAULT_MODEL[self.provider]

    def api_key(self, environ: Mapping[str, str] | None = None) -> SecretStr | None:
        env = os.environ if environ is None else environ
        value = env.get(self.api_key_env or ENV_API_KEY, "")
        return SecretStr(value) if value else None

    def describe(self) -> str:
        """Provider, model and host for logs and answers (never the key, nor a user, password or
        query the base URL may carry)."""
        split = urlsplit(self.resolved_base_url())
        shown = urlunsplit((split.scheme, split.netloc.rpartition("@")[2], split.path, "", ""))
        return f"{self.provider} {self.resolved_model()} at {shown}"


def resolve_llm_settings(
    configured: LlmSettings | None, environ: Mapping[str, str] | None = None
) -> LlmSettings | None:
    """The primary endpoint: ``configured`` (``agent.llm``) with any ``SLEUTH_LLM_*`` variable
    laid over it. ``None`` when neither is set: the deterministic investigator answers alone."""
    env = os.environ if environ is None else environ
    over: dict[str, str] = {}
    if env.get(ENV_BASE_URL):
        over["base_url"] = env[ENV_BASE_URL]
    if env.get(ENV_MODEL):
        over["model"] = env[ENV_MODEL]
    if env.get(ENV_PROVIDER):
        over["provider"] = env[ENV_PROVIDER].strip().lower()
    if configured is None and not over and not env.get(ENV_API_KEY):
        return None
    base = configured or LlmSettings()
    return base.model_validate({**base.model_dump(), **over}) if over else base
