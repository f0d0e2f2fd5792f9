"""Tracing: off (nothing patched, started or sent) without OTEL_* settings; on, one trace across
NATS publish / request / JetStream / pull consumers; trace ids in log lines; no credentials on
spans. The cross-service trace is checked in tests/test_e2e_stack.py."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import nats
import pytest
from nats.aio.client import Client
from nats.js.client import JetStreamContext
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import INVALID_SPAN

from sleuth.embedded import NatsServer
from sleuth_common.llm import ChatMessage, LlmRequest, LlmSettings, build_client
from sleuth_common.logs import JsonFormatter
from sleuth_common.tracing import (
    broker_middlewares,
    consumed,
    current_ids,
    internal_span,
    setup_tracing,
    shutdown_tracing,
    traced_asgi,
    tracing_enabled,
)
from sleuth_common.tracing._api import STATE
from sleuth_common.tracing._setup import exporter_from_env
from tests.fakes.model_server import FakeModelServer, say
from tests.fakes.otlp import OtlpReceiver

ORIGINALS = {(Client, "publish"): Client.publish, (Client, "request"): Client.request,
             (Client, "subscribe"): Client.subscribe, (JetStreamContext, "publish"): JetStreamContext.publish}


@dataclass(frozen=True)
class Case:
    env: dict[str, str]
    exporter: str | None


CASES = [
    Case({}, None),
    Case({"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, None),
    Case({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "otlp"),
    Case({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, "otlp"),
    Case({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, None),
    Case({"OTEL_TRACES_EXPORTER": "otlp"}, "otlp"),
    Case({"OTEL_TRACES_EXPORTER": "console"}, "console"),
    Case({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, None),
    Case({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, None),
    Case({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.env.items()) or "empty")
def test_which_exporter_the_environment_asks_for(case: Case) -> None:
    assert exporter_from_env(case.env) == case.exporter


def test_without_otel_settings_nothing_is_patched_started_or_sent() -> None:
    async def app(scope: object, receive: object, send: object) -> None: ...

    with OtlpReceiver() as rx:
        threads = {t.name for t in threading.enumerate()}
        for env in ({"OTEL_SERVICE_NAME": "x"}, {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.url, "OTEL_SDK_DISABLED": "true"}):
            assert setup_tracing("sleuth-test", environ=env) is False
        assert not tracing_enabled()
        with internal_span("work") as span:
            assert span is INVALID_SPAN
            assert current_ids() == {}
        with consumed(object(), "job") as span:
            assert span is INVALID_SPAN
        assert traced_asgi(app) is app
        assert broker_middlewares() == ()
        assert {(cls, n): getattr(cls, n) for cls, n in ORIGINALS} == ORIGINALS
        assert {t.name for t in threading.enumerate()} == threads
        assert rx.raw() == []


@pytest.fixture
def traced() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    assert setup_tracing("sleuth-test", exporter=exporter, install_global=False)
    try:
        yield exporter
    finally:
        shutdown_tracing()
        assert {(cls, n): getattr(cls, n) for cls, n in ORIGINALS} == ORIGINALS


def _finished(exporter: InMemorySpanExporter) -> list:
    STATE.provider.force_flush()
    return list(exporter.get_finished_spans())


async def test_one_trace_across_request_reply_jetstream_and_callbacks(
    traced: InMemorySpanExporter, nats_server: NatsServer
) -> None:
    asker, worker = await nats.connect(nats_server.url), await nats.connect(nats_server.url)
    seen: list[dict[str, str]] = []
    done = asyncio.Event()

    async def responder(msg: nats.aio.msg.Msg) -> None:
        seen.append(dict(msg.headers or {}))
        await msg.respond(b"pong")

    async def on_done(msg: nats.aio.msg.Msg) -> None:
        done.set()

    try:
        await worker.subscribe("t.authz", cb=responder)
        await asker.subscribe("t.done", cb=on_done)
        js = asker.jetstream()
        await js.add_stream(name="T", subjects=["t.jobs"])
        headers = {"x-caller": "1"}
        with internal_span("question") as root:
            await asker.request("t.authz", b"ping", timeout=5, headers=headers)
            await js.publish("t.jobs", b"job")
        sub = await worker.jetstream().pull_subscribe("t.jobs", durable="w")
        (msg,) = await sub.fetch(1, timeout=5)
        with consumed(msg, "investigate job"):
            await worker.publish("t.done", b"answer")
            await msg.ack()
        await asyncio.wait_for(done.wait(), 5)
    finally:
        await asker.close()
        await worker.close()

    assert headers == {"x-caller": "1"}  # the caller's dict is left alone
    assert seen[0]["x-caller"] == "1" and seen[0]["traceparent"].split("-")[1] == f"{root.get_span_context().trace_id:032x}"
    spans = _finished(traced)
    by_name = {s.name: s for s in spans}
    assert set(by_name) == {"question", "request t.authz", "process t.authz", "publish (reply)", "publish t.jobs",
                            "investigate job", "publish t.done", "process t.done"}  # no $JS.API fetch / ack spans
    assert {s.context.trace_id for s in spans} == {root.get_span_context().trace_id}

    def parent(name: str) -> str:
        return next(s.name for s in spans if s.context.span_id == by_name[name].parent.span_id)

    assert parent("process t.authz") == "request t.authz"
    assert parent("publish (reply)") == "process t.authz"
    assert parent("investigate job") == "publish t.jobs"
    assert parent("process t.done") == "publish t.done"
    assert parent("publish t.done") == "investigate job"
    for s in spans:
        assert "ping" not in json.dumps(dict(s.attributes or {}), default=str)


def test_log_lines_carry_the_active_trace(traced: InMemorySpanExporter) -> None:
    fmt = JsonFormatter()

    def line() -> dict:
        record = logging.LogRecord("sleuth", logging.INFO, __file__, 1, "hello", (), None)
        record.job_id = "j1"
        return json.loads(fmt.format(record))

    assert "trace_id" not in line()
    with internal_span("job") as span:
        doc = line()
    ctx = span.get_span_context()
    assert (doc["trace_id"], doc["span_id"], doc["job_id"]) == (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", "j1")


async def test_no_credential_reaches_a_span_even_when_headers_are_captured(
    traced: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sekrit-token-4f1c"
    for side in ("SERVER_REQUEST", "CLIENT_REQUEST"):
        monkeypatch.setenv(f"OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_{side}", ".*")

    async def app(scope: dict, receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    served = traced_asgi(app)
    creds = {"Authorization": f"Bearer {secret}", "Cookie": f"s={secret}", "X-Remote-User": "alice",
             "Sleuth-Identity": f"jwt.{secret}", "X-Api-Key": secret, "X-Other": "kept"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(served), base_url="http://gw") as client:
        assert (await client.post("/v1/query", headers=creds)).status_code == 204
    with OtlpReceiver() as rx:  # a real HTTP server, so the instrumented httpx transport runs
        async with httpx.AsyncClient() as client:
            await client.post(f"{rx.url}/elsewhere", headers=creds)
    spans = _finished(traced)
    kinds = {s.kind.name for s in spans}
    assert {"SERVER", "CLIENT"} <= kinds
    attrs = json.dumps([dict(s.attributes or {}) for s in spans], default=str)
    assert "kept" in attrs and "[REDACTED]" in attrs  # headers were captured: the check below means something
    assert secret not in attrs and "alice" not in attrs


async def test_an_llm_call_is_a_chat_span_with_usage_and_no_key_or_text(
    traced: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLEUTH_TEST_KEY", "sk-test-9d2e")
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")  # asked for, never honoured
    with FakeModelServer() as fake:
        fake.add(say("checkout-api is OOM-killed at 256Mi [E02]."))
        settings = LlmSettings(provider="anthropic", base_url=fake.url, model="m", api_key_env="SLEUTH_TEST_KEY")
        client = build_client(settings)
        with internal_span("investigate job") as job:
            await client.complete(LlmRequest("You investigate.", (ChatMessage.user("why is checkout-api failing?"),)))
        await client.aclose()
    spans = _finished(traced)
    (chat,) = [s for s in spans if s.name == "chat m"]
    assert chat.parent.span_id == job.get_span_context().span_id
    attrs = dict(chat.attributes or {})
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (120, 30)
    # The Anthropic SDK's span of the API call sits under it, in the same trace.
    assert any(s.kind.name == "CLIENT" and s.parent and s.parent.span_id == chat.context.span_id for s in spans)
    dumped = json.dumps([[dict(s.attributes or {}), *(dict(e.attributes or {}) for e in s.events)] for s in spans],
                        default=str)
    assert "sk-test-9d2e" not in dumped and "OOM" not in dumped and "checkout-api" not in dumped


def test_span_names_keep_per_job_tokens_out():
    from sleuth_common.tracing._nats import _template

    assert _template("sleuth.jobs.done.b68a0aff68ed40c2bc016d0b51d6597a") == "sleuth.jobs.done.{id}"
    assert _template("sleuth.alerts.results.0123456789abcdef") == "sleuth.alerts.results.{id}"
    assert _template("sleuth.jobs.investigate") == "sleuth.jobs.investigate"
    assert _template("sleuth.authz.authenticate") == "sleuth.authz.authenticate"  # long words without digits stay
