"""A fake LLM endpoint speaking the Anthropic Messages API (SSE or JSON) and the OpenAI chat
completions format, for tests: the real client code runs against it over HTTP.

It plays a script: each request takes the next ``Step`` (or a callable that builds one from the
request), and every request is RECORDED (path, headers, raw body, parsed body), so a test can
assert on exactly what reached "the model". Faults are steps too: an HTTP error status, a stream
cut mid-way, a ``max_tokens`` stop, malformed tool-call JSON, a response slower than the
client's deadline, a non-streaming JSON answer to a streaming request.

    with FakeModelServer([call("list_pods", {"namespace": "team-a"}), say("done [E01]")]) as fake:
        fake.url          # Anthropic base URL (the SDK posts to {url}/v1/messages)
        fake.openai_url   # OpenAI-compatible base URL ({url}/v1, posts to /chat/completions)
        fake.requests     # [Recorded(path, headers, raw, body), ...]

Tool names in steps may be given without the cluster prefix the agent adds (``list_pods``): the
fake resolves them against the tools offered in that request (exact name, else the first offered
name ending in ``__list_pods``).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeModelServer",
    "Recorded",
    "Step",
    "bad_json",
    "call",
    "cite_everything",
    "cut",
    "fail",
    "json_reply",
    "max_tokens",
    "say",
    "slow",
]


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]
    raw: str
    body: Any

    @property
    def is_anthropic(self) -> bool:
        return self.path.endswith("/messages")

    @property
    def tool_names(self) -> list[str]:
        tools = (self.body or {}).get("tools") or []
        return [t.get("name") or (t.get("function") or {}).get("name", "") for t in tools]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def system(self) -> str:
        body = self.body or {}
        if "system" in body:
            s = body["system"]
            return s if isinstance(s, str) else " ".join(b.get("text", "") for b in s)
        for m in self.messages:
            if m.get("role") == "system":
                return str(m.get("content") or "")
        return ""

    def last_user_text(self) -> str:
        """The text of the last user turn (tool results included, as raw JSON)."""
        for m in reversed(self.messages):
            if m.get("role") in ("user", "tool"):
                c = m.get("content")
                return c if isinstance(c, str) else json.dumps(c)
        return ""


@dataclass(frozen=True)
class Step:
    """One scripted model reply (or fault)."""

    text: str = ""
    tool_calls: tuple[tuple[str, Any], ...] = ()
    """(tool name, arguments): a dict is sent as JSON; a str is sent verbatim (malformed JSON)."""
    stop: str = ""
    """Anthropic stop reason: end_turn | tool_use | max_tokens (default from the content)."""
    status: int = 200
    error_type: str = "api_error"
    retry_after: str = ""
    cut_after: int | None = None
    """Close the connection after this many SSE events (no completion event)."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    as_json: bool = False
    """Answer with a non-streaming JSON body even when streaming was asked."""
    usage: tuple[int, int] = (120, 30)


def say(text: str, **kw: Any) -> Step:
    return Step(text=text, **kw)


def call(*calls: tuple[str, Any] | str, text: str = "", **kw: Any) -> Step:
    """``call(("list_pods", {"namespace": "team-a"}), ("list_events", {...}))`` or
    ``call("list_pods", {"namespace": "team-a"})`` for one call."""
    if calls and isinstance(calls[0], str):
        name, args = calls[0], (calls[1] if len(calls) > 1 else {})
        pairs: tuple[tuple[str, Any], ...] = ((name, args),)
    else:
        pairs = tuple(calls)  # type: ignore[arg-type]
    return Step(text=text, tool_calls=pairs, **kw)


def fail(status: int, *, error_type: str = "", retry_after: str = "") -> Step:
    kinds = {
        429: "rate_limit_error",
        529: "overloaded_error",
        400: "invalid_request_error",
        401: "authentication_error",
    }
    return Step(
        status=status, error_type=error_type or kinds.get(status, "api_error"), retry_after=retry_after
    )


def cut(text: str = "The pods in team-a are failing because", after: int = 3) -> Step:
    return Step(text=text, cut_after=after)


def max_tokens(text: str) -> Step:
    return Step(text=text, stop="max_tokens")


def bad_json(tool: str, raw: str = '{"namespace": "team-a", ') -> Step:
    return Step(tool_calls=((tool, raw),))


def slow(seconds: float, step: Step | None = None) -> Step:
    return replace(step or say("late answer"), delay=seconds)


def json_reply(step: Step) -> Step:
    return replace(step, as_json=True)


_EVIDENCE = re.compile(r"\bE\d{2,3}\b")


def cite_everything(prefix: str = "Root cause found") -> Callable[[Recorded], Step]:
    """A final answer citing every evidence id the request shows (E01, E07 ...)."""

    def build(req: Recorded) -> Step:
        ids = sorted(set(_EVIDENCE.findall(req.raw)))
        cites = f" [{', '.join(ids)}]" if ids else ""
        return say(f"**Problem:** {prefix}.{cites}\n\n**Root cause:** see the evidence{cites}.")

    return build


ScriptItem = Step | Callable[[Recorded], Step]


class FakeModelServer:
    def __init__(
        self,
        script: Sequence[ScriptItem] = (),
        *,
        default: ScriptItem | None = None,
        model: str = "fake-model",
        host: str = "127.0.0.1",
    ) -> None:
        self.script: list[ScriptItem] = list(script)
        self.default = default or say("No further scripted reply.")
        self.model = model
        self.requests: list[Recorded] = []
        self.exhausted = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> FakeModelServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting --------------------------------------------------------------------------
    def add(self, *steps: ScriptItem) -> None:
        with self._lock:
            self.script.extend(steps)

    def bodies(self) -> str:
        """Every recorded request body, joined (what a leak test greps)."""
        return "\n".join(r.raw for r in self.requests)

    def _next(self, rec: Recorded) -> Step:
        with self._lock:
            self.requests.append(rec)
            if self.script:
                item = self.script.pop(0)
            else:
                self.exhausted += 1
                item = self.default
        return item(rec) if callable(item) else item

    def next_id(self) -> int:
        return next(self._ids)


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeModelServer
    protocol_version = "HTTP/1.0"  # one response per connection; a stream ends when the socket closes

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        rec = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, raw, body)
        if not (self.path.endswith("/v1/messages") or self.path.endswith("/chat/completions")):
            self._send_json(404, {"error": {"type": "not_found_error", "message": self.path}})
            return
        step = fake._next(rec)
        if step.delay and fake._stopping.wait(step.delay):
            return
        try:
            self._answer(rec, step)
        except (BrokenPipeError, ConnectionResetError):
            return

    def _answer(self, rec: Recorded, step: Step) -> None:
        fake = self.server_fake
        if step.status != 200:
            body = (
                {"type": "error", "error": {"type": step.error_type, "message": f"fake {step.status}"}}
                if rec.is_anthropic
                else {
                    "error": {"type": step.error_type, "message": f"fake {step.status}", "code": step.status}
                }
            )
            self._send_json(step.status, body, {"retry-after": step.retry_after} if step.retry_after else {})
            return
        calls = [(_resolve(name, rec.tool_names), args) for name, args in step.tool_calls]
        stop = step.stop or ("tool_use" if calls else "end_turn")
        n = fake.next_id()
        streaming = bool((rec.body or {}).get("stream")) and not step.as_json
        if rec.is_anthropic:
            if not streaming:
                self._send_json(200, _anthropic_json(n, fake.model, step, calls, stop))
            else:
                self._send_sse(_anthropic_events(n, fake.model, step, calls, stop), step.cut_after)
        elif not streaming:
            self._send_json(200, _openai_json(n, fake.model, step, calls, stop))
        else:
            self._send_sse(_openai_events(n, fake.model, step, calls, stop), step.cut_after)

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, events: list[tuple[str | None, str]], cut_after: int | None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        for i, (name, data) in enumerate(events):
            if cut_after is not None and i >= cut_after:
                break
            chunk = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
            self.wfile.write(chunk.encode())
            self.wfile.flush()
        self.close_connection = True


def _resolve(name: str, offered: list[str]) -> str:
    if name in offered or "__" in name:
        return name
    for o in offered:
        if o.endswith("__" + name):
            return o
    return name


def _pieces(text: str, n: int = 3) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


# -- Anthropic ----------------------------------------------------------------------------------
def _anthropic_json(
    n: int, model: str, step: Step, calls: list[tuple[str, Any]], stop: str
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if step.text:
        content.append({"type": "text", "text": step.text})
    for i, (name, args) in enumerate(calls):
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{n}_{i}",
                "name": name,
                "input": args if isinstance(args, dict) else {},
            }
        )
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": step.usage[0], "output_tokens": step.usage[1]},
    }


def _anthropic_events(
    n: int, model: str, step: Step, calls: list[tuple[str, Any]], stop: str
) -> list[tuple[str | None, str]]:
    ev: list[tuple[str | None, str]] = []

    def add(name: str, data: dict[str, Any]) -> None:
        ev.append((name, json.dumps({"type": name, **data})))

    add(
        "message_start",
        {
            "message": {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": step.usage[0], "output_tokens": 1},
            }
        },
    )
    ev.append(("ping", json.dumps({"type": "ping"})))
    index = 0
    if step.text:
        add("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
        for piece in _pieces(step.text):
            add("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
        add("content_block_stop", {"index": index})
        index += 1
    for i, (name, args) in enumerate(calls):
        add(
            "content_block_start",
            {
                "index": index,
                "content_block": {"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": {}},
            },
        )
        for piece in _pieces(_args_text(args), 2):
            add(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
            )
        add("content_block_stop", {"index": index})
        index += 1
    add(
        "message_delta",
        {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": step.usage[1]}},
    )
    add("message_stop", {})
    return ev


# -- OpenAI -------------------------------------------------------------------------------------
_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _openai_json(n: int, model: str, step: Step, calls: list[tuple[str, Any]], stop: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": _args_text(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _OPENAI_FINISH.get(stop, "stop")}],
        "usage": {"prompt_tokens": step.usage[0], "completion_tokens": step.usage[1]},
    }


def _openai_events(
    n: int, model: str, step: Step, calls: list[tuple[str, Any]], stop: str
) -> list[tuple[str | None, str]]:
    ev: list[tuple[str | None, str]] = []

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        ev.append(
            (
                None,
                json.dumps(
                    {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion.chunk",
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    }
                ),
            )
        )

    chunk({"role": "assistant", "content": ""})
    for piece in _pieces(step.text):
        chunk({"content": piece})
    for i, (name, args) in enumerate(calls):
        chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": f"call_{n}_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(_args_text(args), 2):
            chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    chunk({}, _OPENAI_FINISH.get(stop, "stop"))
    ev.append(
        (
            None,
            json.dumps(
                {
                    "id": f"chatcmpl-{n}",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": {"prompt_tokens": step.usage[0], "completion_tokens": step.usage[1]},
                }
            ),
        )
    )
    ev.append((None, "[DONE]"))
    return ev


def demo_responder(req: Recorded) -> Step:
    """A plausible unscripted model for trying the stack by hand: first it reads the pods and
    events of the first namespace the findings mention, then it answers citing every id."""
    has_results = any(
        m.get("role") == "tool"
        or (isinstance(m.get("content"), list) and any(c.get("type") == "tool_result" for c in m["content"]))
        for m in req.messages
    )
    if has_results or not req.tool_names:
        return cite_everything("The AI model checked the findings against fresh reads")(req)
    found = re.search(r"-n ([a-z0-9][-a-z0-9]*)", req.raw)
    ns = found.group(1) if found else "default"
    return call(("list_pods", {"namespace": ns}), ("list_events", {"namespace": ns}), text="Reading.")


def main() -> None:
    """``python -m tests.fakes.model_server --port 8199``: serve ``demo_responder`` until Ctrl-C
    (point SLEUTH_LLM_BASE_URL at the printed URL; OpenAI clients use URL + /v1)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    opts = parser.parse_args()
    server = FakeModelServer(default=demo_responder, host=opts.host)
    if opts.port:
        server._server.server_close()
        server._server = ThreadingHTTPServer((opts.host, opts.port), server._server.RequestHandlerClass)
        server._server.daemon_threads = True
    server.start()
    print(json.dumps({"url": server.url, "openai_url": server.openai_url}), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
