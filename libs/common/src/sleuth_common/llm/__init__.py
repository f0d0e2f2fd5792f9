"""LLM clients behind one interface (DESIGN §1: "LLM clients" live in libs/common).

``build_client(settings, fallback=...)`` → ``LlmClient``; ``await client.complete(LlmRequest)``
→ ``LlmResponse`` (text, decoded tool calls, stop reason, token usage). Providers: the Anthropic
Messages API through the ``anthropic`` SDK, and OpenAI-compatible chat completions over httpx.
Both stream and accumulate every delta; a stream that ends early, undecodable tool arguments,
network errors, 408/429/5xx are retried with exponential backoff and jitter; other 4xx raise
``LlmRejected`` at once; ``LlmUnavailable`` when every attempt failed. Configuration:
``LlmSettings`` (config ``agent.llm``) and ``SLEUTH_LLM_BASE_URL`` / ``_API_KEY`` / ``_MODEL`` /
``_PROVIDER`` (``resolve_llm_settings``).
"""

from sleuth_common.llm._anthropic import AnthropicClient
from sleuth_common.llm._base import LlmClient, LlmObserver, RetryPolicy
from sleuth_common.llm._build import build_client
from sleuth_common.llm._failover import CircuitBreaker, FailoverClient
from sleuth_common.llm._openai import OpenAIClient
from sleuth_common.llm._settings import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    ENV_PROVIDER,
    LlmSettings,
    resolve_llm_settings,
)
from sleuth_common.llm._types import (
    BadToolArguments,
    ChatMessage,
    IncompleteResponse,
    LlmError,
    LlmRejected,
    LlmRequest,
    LlmResponse,
    LlmRetryableError,
    LlmUnavailable,
    StopReason,
    ToolCall,
    ToolOutput,
    ToolSpec,
    Usage,
)

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_PROVIDER",
    "AnthropicClient",
    "BadToolArguments",
    "ChatMessage",
    "CircuitBreaker",
    "FailoverClient",
    "IncompleteResponse",
    "LlmClient",
    "LlmError",
    "LlmObserver",
    "LlmRejected",
    "LlmRequest",
    "LlmResponse",
    "LlmRetryableError",
    "LlmSettings",
    "LlmUnavailable",
    "OpenAIClient",
    "RetryPolicy",
    "StopReason",
    "ToolCall",
    "ToolOutput",
    "ToolSpec",
    "Usage",
    "build_client",
    "resolve_llm_settings",
]
