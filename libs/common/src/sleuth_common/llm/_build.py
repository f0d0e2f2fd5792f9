"""``build_client``: settings → one ``LlmClient`` (with a backup behind a circuit breaker)."""

from __future__ import annotations

from sleuth_common.llm._anthropic import AnthropicClient
from sleuth_common.llm._base import LlmClient, LlmObserver, RetryPolicy
from sleuth_common.llm._failover import CircuitBreaker, FailoverClient
from sleuth_common.llm._openai import OpenAIClient
from sleuth_common.llm._settings import LlmSettings

__all__ = ["build_client"]


def _one(settings: LlmSettings, observer: LlmObserver | None, retry: RetryPolicy | None) -> LlmClient:
    cls = AnthropicClient if settings.provider == "anthropic" else OpenAIClient
    return cls(settings, observer=observer, retry=retry)


def build_client(
    settings: LlmSettings,
    *,
    fallback: LlmSettings | None = None,
    observer: LlmObserver | None = None,
    failure_threshold: int = 3,
    cooldown: float = 30.0,
    retry: RetryPolicy | None = None,
) -> LlmClient:
    """The client for ``settings`` (``provider`` picks Anthropic or OpenAI-compatible); with
    ``fallback``, a ``FailoverClient`` that opens after ``failure_threshold`` consecutive failed
    requests and probes the primary again after ``cooldown`` seconds. Connects nothing yet."""
    primary = _one(settings, observer, retry)
    if fallback is None:
        return primary
    return FailoverClient(
        primary,
        _one(fallback, observer, retry),
        CircuitBreaker(failure_threshold, cooldown),
        observer=observer,
    )
