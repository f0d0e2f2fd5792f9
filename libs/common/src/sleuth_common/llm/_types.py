"""Provider-neutral conversation types and the errors every LLM client raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BadToolArguments",
    "ChatMessage",
    "IncompleteResponse",
    "LlmError",
    "LlmRejected",
    "LlmRequest",
    "LlmResponse",
    "LlmRetryableError",
    "LlmUnavailable",
    "StopReason",
    "ToolCall",
    "ToolOutput",
    "ToolSpec",
    "Usage",
]

StopReason = Literal["end", "tool_use", "max_tokens", "other"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as offered to a model (name within the provider's limit, JSON-schema input)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolOutput:
    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class ChatMessage:
    """``user`` (text), ``assistant`` (text and/or tool calls) or ``tool`` (tool outputs)."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_outputs: tuple[ToolOutput, ...] = ()

    @classmethod
    def user(cls, text: str) -> ChatMessage:
        return cls("user", text=text)

    @classmethod
    def assistant(cls, text: str, tool_calls: tuple[ToolCall, ...] = ()) -> ChatMessage:
        return cls("assistant", text=text, tool_calls=tool_calls)

    @classmethod
    def tools(cls, outputs: tuple[ToolOutput, ...]) -> ChatMessage:
        return cls("tool", tool_outputs=outputs)

    def size(self) -> int:
        """Characters this message puts in the context (a cheap stand-in for tokens)."""
        return (
            len(self.text)
            + sum(len(c.name) + len(str(c.arguments)) for c in self.tool_calls)
            + sum(len(o.content) for o in self.tool_outputs)
        )


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@dataclass(frozen=True)
class LlmRequest:
    system: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    """Output limit of this request (``None``: the client's configured ``max_tokens``)."""


@dataclass(frozen=True)
class LlmResponse:
    """A complete reply: every streamed delta accumulated, tool arguments decoded."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    stop: StopReason = "end"
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    provider: str = ""


class LlmError(Exception):
    """Base of every client error. ``kind`` labels the outcome in metrics."""

    retryable = False
    kind = "error"

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class LlmRetryableError(LlmError):
    """Network trouble, 408/429/5xx, a stream that ended early, undecodable tool arguments."""

    retryable = True
    kind = "retryable"


class IncompleteResponse(LlmRetryableError):
    """The stream ended before the model finished: never returned half."""

    kind = "incomplete"


class BadToolArguments(LlmRetryableError):
    """A tool call whose arguments are not a JSON object (never turned into ``{}``)."""

    kind = "bad_tool_arguments"

    def __init__(self, tool: str, detail: str) -> None:
        super().__init__(f"the arguments of tool call {tool!r} do not decode as a JSON object: {detail}")
        self.tool = tool


class LlmRejected(LlmError):
    """A 4xx other than 408/429: the request (or the key) is wrong; retrying does not help.
    ``request_fault`` is True when the request itself was refused (400/413/422), so another
    endpoint would refuse it too."""

    kind = "rejected"

    @property
    def request_fault(self) -> bool:
        return self.status in (400, 413, 422)


class LlmUnavailable(LlmError):
    """Every attempt failed (or the circuit is open and there is no backup)."""

    kind = "unavailable"
