"""Anthropic Messages API through the ``anthropic`` SDK: streamed, every delta accumulated."""

from __future__ import annotations

import json
from typing import Any, cast

import httpx2

from sleuth_common.llm._base import LlmClient, status_error
from sleuth_common.llm._types import (
    BadToolArguments,
    ChatMessage,
    IncompleteResponse,
    LlmError,
    LlmRequest,
    LlmResponse,
    LlmRetryableError,
    StopReason,
    ToolCall,
    Usage,
)
from sleuth_common.tracing import sdk_tracer_provider

__all__ = ["AnthropicClient", "anthropic_messages"]

_STOP: dict[str, StopReason] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
}


class AnthropicClient(LlmClient):
    provider = "anthropic"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        s = self.settings
        key = s.api_key()
        self._http = httpx2.AsyncClient(timeout=httpx2.Timeout(s.timeout, connect=s.connect_timeout))
        import anthropic  # ~1 s to import: only when a model is configured

        self._anthropic = anthropic
        self._sdk = anthropic.AsyncAnthropic(
            # An endpoint without auth (a local proxy) still needs some key for the SDK.
            api_key=key.get_secret_value() if key else "none",
            base_url=s.resolved_base_url(),
            max_retries=0,  # retries are ours: backoff with jitter, and only on what is retryable
            timeout=s.timeout,
            http_client=self._http,
            default_headers=s.headers or None,
            # The SDK's own span per call, never with prompts or answers (cluster data), whatever
            # ANTHROPIC_OPEN_TELEMETRY_* says: an explicit option is not overridden by them.
            open_telemetry=cast(Any, {"traces": {"content_mode": "metadata_only"}, **sdk_tracer_provider()}),
        )

    async def aclose(self) -> None:
        await self._sdk.close()
        await self._http.aclose()

    async def _attempt(self, request: LlmRequest) -> LlmResponse:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.settings.max_tokens,
            "messages": anthropic_messages(request.messages),
            "stream": True,
        }
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
        try:
            async with self._sdk.messages.with_streaming_response.create(**kwargs) as raw:
                if "text/event-stream" not in raw.headers.get("content-type", ""):
                    # A proxy that ignores "stream": the whole answer as JSON is fine too.
                    return self._from_json(await raw.json())
                acc = _Accumulator(self.model)
                stream = await raw.parse()
                async for event in stream:
                    acc.add(event)
                return acc.finish()
        except LlmError:
            raise
        except self._anthropic.APIStatusError as exc:
            status = exc.status_code
            if status < 400:
                # An `event: error` inside a 200 stream (overloaded, api_error ...).
                raise LlmRetryableError(f"stream error: {_short(exc)}", status=529) from exc
            raise status_error(status, _short(exc), exc.response.headers.get("retry-after")) from exc
        except self._anthropic.APIConnectionError as exc:
            raise LlmRetryableError(f"network: {_short(exc)}") from exc
        except (httpx2.TransportError, ValueError) as exc:
            raise LlmRetryableError(f"network: {type(exc).__name__}: {exc}") from exc
        except self._anthropic.AnthropicError as exc:
            raise LlmError(f"{type(exc).__name__}: {_short(exc)}") from exc

    def _from_json(self, body: Any) -> LlmResponse:
        if not isinstance(body, dict) or body.get("type") == "error":
            raise LlmRetryableError("the endpoint answered with an unexpected JSON body")
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in body.get("content") or []:
            if block.get("type") == "text":
                text.append(block.get("text") or "")
            elif block.get("type") == "tool_use":
                name = str(block.get("name") or "")
                args = block.get("input")
                if isinstance(args, str):
                    args = _decode(name, args)
                if not isinstance(args, dict):
                    raise BadToolArguments(name, "not an object")
                calls.append(ToolCall(str(block.get("id") or ""), name, args))
        stop = body.get("stop_reason")
        if stop is None:
            raise IncompleteResponse("the JSON answer has no stop_reason")
        usage = body.get("usage") or {}
        return LlmResponse(
            "".join(text),
            tuple(calls),
            _STOP.get(stop, "other"),
            Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)),
            str(body.get("model") or self.model),
            "anthropic",
        )


class _Accumulator:
    """Collects the raw stream events of one message."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop: str | None = None
        self.done = False
        self.input_tokens = 0
        self.output_tokens = 0

    def add(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            msg = event.message
            self.model = getattr(msg, "model", "") or self.model
            usage = getattr(msg, "usage", None)
            self.input_tokens = int(getattr(usage, "input_tokens", 0) or 0)
            self.output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
        elif kind == "content_block_start":
            block = event.content_block
            entry: dict[str, Any] = {"type": block.type, "text": "", "json": "", "done": False}
            if block.type == "tool_use":
                entry.update(id=block.id, name=block.name, input=getattr(block, "input", None))
            self.blocks[event.index] = entry
        elif kind == "content_block_delta":
            entry = self.blocks.setdefault(
                event.index, {"type": "text", "text": "", "json": "", "done": False}
            )
            delta = event.delta
            if delta.type == "text_delta":
                entry["text"] += delta.text
            elif delta.type == "input_json_delta":
                entry["json"] += delta.partial_json
        elif kind == "content_block_stop":
            if event.index in self.blocks:
                self.blocks[event.index]["done"] = True
        elif kind == "message_delta":
            self.stop = getattr(event.delta, "stop_reason", None) or self.stop
            usage = getattr(event, "usage", None)
            if usage is not None and getattr(usage, "output_tokens", None) is not None:
                self.output_tokens = int(usage.output_tokens)
        elif kind == "message_stop":
            self.done = True

    def finish(self) -> LlmResponse:
        if not self.done or self.stop is None:
            raise IncompleteResponse("the stream ended before the message was complete")
        text: list[str] = []
        calls: list[ToolCall] = []
        for _, b in sorted(self.blocks.items()):
            if b["type"] == "text":
                text.append(b["text"])
            elif b["type"] == "tool_use":
                if b["json"].strip():
                    args = _decode(b["name"], b["json"])
                else:
                    start = b.get("input")
                    args = start if isinstance(start, dict) else {}
                calls.append(ToolCall(b["id"], b["name"], args))
        return LlmResponse(
            "".join(text),
            tuple(calls),
            _STOP.get(self.stop, "other"),
            Usage(self.input_tokens, self.output_tokens),
            self.model,
            "anthropic",
        )


def _decode(tool: str, raw: str) -> dict[str, Any]:
    try:
        args = json.loads(raw)
    except ValueError as exc:
        raise BadToolArguments(tool, str(exc)) from exc
    if not isinstance(args, dict):
        raise BadToolArguments(tool, f"a JSON {type(args).__name__}, not an object")
    return args


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:300] + "…"


def anthropic_messages(messages: tuple[ChatMessage, ...] | list[ChatMessage]) -> list[dict[str, Any]]:
    """The Messages API form; adjacent turns of the same role are merged (tool results are user
    turns there)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        blocks: list[dict[str, Any]] = []
        if m.role == "tool":
            role = "user"
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": o.call_id,
                    "content": o.content,
                    "is_error": o.is_error,
                }
                for o in m.tool_outputs
            ]
        else:
            role = m.role
            if m.text.strip():
                blocks.append({"type": "text", "text": m.text.rstrip() if role == "assistant" else m.text})
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls
            )
        if not blocks:
            blocks = [{"type": "text", "text": "(no text)"}]
        if out and out[-1]["role"] == role:
            # Tool results must come first in a user turn.
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out
