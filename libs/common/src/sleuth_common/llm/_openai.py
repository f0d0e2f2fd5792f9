"""OpenAI-compatible chat completions (Ollama, vLLM, LiteLLM, Azure OpenAI) over httpx:
streamed (SSE) or a whole JSON answer, every delta accumulated."""

from __future__ import annotations

import json
from typing import Any

import httpx

from sleuth_common.llm._base import LlmClient, status_error
from sleuth_common.llm._types import (
    BadToolArguments,
    ChatMessage,
    IncompleteResponse,
    LlmRequest,
    LlmResponse,
    LlmRetryableError,
    StopReason,
    ToolCall,
    Usage,
)

__all__ = ["OpenAIClient", "openai_messages"]

_STOP: dict[str, StopReason] = {
    "stop": "end",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


class OpenAIClient(LlmClient):
    provider = "openai"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        s = self.settings
        headers = {"content-type": "application/json", **s.headers}
        key = s.api_key()
        if key:
            headers["authorization"] = f"Bearer {key.get_secret_value()}"
        self._http = httpx.AsyncClient(
            base_url=s.resolved_base_url() + "/",
            headers=headers,
            timeout=httpx.Timeout(s.timeout, connect=s.connect_timeout),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _attempt(self, request: LlmRequest) -> LlmResponse:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": openai_messages(request.system, request.messages),
            "max_tokens": request.max_tokens or self.settings.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
                }
                for t in request.tools
            ]
        try:
            async with self._http.stream("POST", "chat/completions", json=body) as resp:
                if resp.status_code >= 400:
                    text = (await resp.aread()).decode("utf-8", "replace")[:300]
                    raise status_error(resp.status_code, text, resp.headers.get("retry-after"))
                if "text/event-stream" not in resp.headers.get("content-type", ""):
                    return self._from_json(json.loads(await resp.aread()))
                acc = _Accumulator(self.model)
                async for line in resp.aiter_lines():
                    if line.startswith("data:"):
                        acc.add(line[5:].strip())
                return acc.finish()
        except httpx.TransportError as exc:
            raise LlmRetryableError(f"network: {type(exc).__name__}: {exc}") from exc
        except ValueError as exc:
            raise LlmRetryableError(f"undecodable answer: {exc}") from exc

    def _from_json(self, body: Any) -> LlmResponse:
        choices = body.get("choices") if isinstance(body, dict) else None
        if not choices:
            raise LlmRetryableError("the endpoint answered with an unexpected JSON body")
        choice = choices[0]
        message = choice.get("message") or {}
        finish = choice.get("finish_reason")
        if finish is None:
            raise IncompleteResponse("the JSON answer has no finish_reason")
        calls = tuple(
            ToolCall(
                str(c.get("id") or f"call_{i}"),
                (c.get("function") or {}).get("name", ""),
                _decode(
                    (c.get("function") or {}).get("name", ""), (c.get("function") or {}).get("arguments")
                ),
            )
            for i, c in enumerate(message.get("tool_calls") or [])
        )
        usage = body.get("usage") or {}
        return LlmResponse(
            str(message.get("content") or ""),
            calls,
            _STOP.get(finish, "other"),
            Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
            str(body.get("model") or self.model),
            "openai",
        )


class _Accumulator:
    def __init__(self, model: str) -> None:
        self.model = model
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()

    def add(self, data: str) -> None:
        if data == "[DONE]" or not data:
            return
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            return
        self.model = chunk.get("model") or self.model
        if chunk.get("usage"):
            u = chunk["usage"]
            self.usage = Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.text.append(delta["content"])
            for tc in delta.get("tool_calls") or []:
                entry = self.calls.setdefault(int(tc.get("index") or 0), {"id": "", "name": "", "args": ""})
                entry["id"] = tc.get("id") or entry["id"]
                fn = tc.get("function") or {}
                entry["name"] += fn.get("name") or ""
                entry["args"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def finish(self) -> LlmResponse:
        if self.finish_reason is None:
            raise IncompleteResponse("the stream ended before the answer was complete")
        calls = tuple(
            ToolCall(c["id"] or f"call_{i}", c["name"], _decode(c["name"], c["args"]))
            for i, c in sorted(self.calls.items())
        )
        return LlmResponse(
            "".join(self.text),
            calls,
            _STOP.get(self.finish_reason, "other"),
            self.usage,
            self.model,
            "openai",
        )


def _decode(tool: str, raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        args = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise BadToolArguments(tool, str(exc)) from exc
    if not isinstance(args, dict):
        raise BadToolArguments(tool, f"a JSON {type(args).__name__}, not an object")
    return args


def openai_messages(
    system: str, messages: tuple[ChatMessage, ...] | list[ChatMessage]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role == "tool":
            out.extend(
                {"role": "tool", "tool_call_id": o.call_id, "content": o.content} for o in m.tool_outputs
            )
        elif m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in m.tool_calls
                ]
            out.append(msg)
        else:
            out.append({"role": "user", "content": m.text})
    return out
