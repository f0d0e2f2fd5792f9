"""The LLM clients against the fake model server, for both wire formats: streaming accumulation,
non-streaming JSON, retries on what is retryable only, cut streams never returned half,
undecodable tool arguments, the output limit, slow answers, the key as a Bearer header."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from sleuth_common.llm import (
    BadToolArguments,
    ChatMessage,
    LlmClient,
    LlmObserver,
    LlmRejected,
    LlmRequest,
    LlmSettings,
    LlmUnavailable,
    RetryPolicy,
    ToolCall,
    ToolOutput,
    ToolSpec,
    build_client,
    resolve_llm_settings,
)
from tests.fakes.model_server import (
    FakeModelServer,
    bad_json,
    call,
    cut,
    fail,
    json_reply,
    max_tokens,
    say,
    slow,
)

PROVIDERS = ["anthropic", "openai"]
TOOLS = (ToolSpec("demo__list_pods", "[cluster demo] list pods"), ToolSpec("demo__list_events", "events"))


class Counting(LlmObserver):
    def __init__(self) -> None:
        self.outcomes: list[str] = []
        self.states: list[str] = []

    def attempt(self, provider: str, outcome: str, seconds: float) -> None:
        self.outcomes.append(outcome)

    def breaker(self, name: str, state: str) -> None:
        self.states.append(state)


@dataclass
class Rig:
    fake: FakeModelServer
    provider: str

    def client(
        self, *, attempts: int = 3, timeout: float = 10.0, observer: LlmObserver | None = None
    ) -> LlmClient:
        url = self.fake.url if self.provider == "anthropic" else self.fake.openai_url
        settings = LlmSettings(
            provider=self.provider,
            base_url=url,
            model="m",
            api_key_env="SLEUTH_TEST_KEY",
            timeout=timeout,  # type: ignore[arg-type]
        )
        return build_client(settings, observer=observer, retry=RetryPolicy(attempts, 0.001, 0.002))


@pytest.fixture(params=PROVIDERS)
def rig(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    monkeypatch.setenv("SLEUTH_TEST_KEY", "sk-test-123")
    with FakeModelServer() as fake:
        yield Rig(fake, request.param)


def req(*tools: ToolSpec) -> LlmRequest:
    return LlmRequest("You investigate.", (ChatMessage.user("why is checkout-api failing?"),), tools)


async def test_text_is_accumulated_and_the_key_is_a_bearer_header(rig: Rig) -> None:
    rig.fake.add(say("checkout-api is OOM-killed at 256Mi [E02]."))
    client = rig.client()
    r = await client.complete(req())
    await client.aclose()
    assert r.text == "checkout-api is OOM-killed at 256Mi [E02]." and r.stop == "end"
    assert r.usage.input_tokens == 120 and r.usage.output_tokens == 30
    sent = rig.fake.requests[0]
    assert sent.headers["authorization"] == "Bearer sk-test-123"
    assert sent.body["stream"] is True and sent.body["model"] == "m"
    assert "You investigate." in sent.system


async def test_parallel_tool_calls_and_tool_results_round_trip(rig: Rig) -> None:
    rig.fake.add(
        call(
            ("list_pods", {"namespace": "team-a"}), ("list_events", {"namespace": "team-a"}), text="Reading."
        ),
        say("done"),
    )
    client = rig.client()
    r = await client.complete(req(*TOOLS))
    assert r.stop == "tool_use" and r.text == "Reading."
    assert [(c.name, c.arguments) for c in r.tool_calls] == [
        ("demo__list_pods", {"namespace": "team-a"}),
        ("demo__list_events", {"namespace": "team-a"}),
    ]
    follow = LlmRequest(
        "s",
        (
            ChatMessage.user("q"),
            ChatMessage.assistant(r.text, r.tool_calls),
            ChatMessage.tools(tuple(ToolOutput(c.id, c.name, f"output of {c.name}") for c in r.tool_calls)),
        ),
        TOOLS,
    )
    assert (await client.complete(follow)).text == "done"
    await client.aclose()
    second = rig.fake.requests[1]
    assert "output of demo__list_events" in second.raw
    ids = [c.id for c in r.tool_calls]
    assert all(i in second.raw for i in ids)
    assert rig.fake.requests[0].tool_names == ["demo__list_pods", "demo__list_events"]


async def test_a_non_streaming_json_answer_is_accepted(rig: Rig) -> None:
    rig.fake.add(json_reply(call("list_pods", {"namespace": "team-a"}, text="json")))
    client = rig.client()
    r = await client.complete(req(*TOOLS))
    await client.aclose()
    assert r.text == "json" and r.tool_calls[0].arguments == {"namespace": "team-a"}


@pytest.mark.parametrize("fault", [fail(429, retry_after="0"), fail(500), fail(529), cut()], ids=str)
async def test_retryable_faults_are_retried_and_never_returned_half(rig: Rig, fault) -> None:
    rig.fake.add(fault, say("complete answer"))
    obs = Counting()
    client = rig.client(observer=obs)
    r = await client.complete(req())
    await client.aclose()
    assert r.text == "complete answer"
    assert len(rig.fake.requests) == 2 and obs.outcomes[-1] == "ok"
    assert obs.outcomes[0] in {"rate_limited", "server_error", "incomplete"}


async def test_other_4xx_are_not_retried(rig: Rig) -> None:
    rig.fake.add(fail(400), say("never"))
    client = rig.client()
    with pytest.raises(LlmRejected) as err:
        await client.complete(req())
    await client.aclose()
    assert err.value.status == 400 and err.value.request_fault
    assert len(rig.fake.requests) == 1


async def test_retries_give_up_with_unavailable(rig: Rig) -> None:
    rig.fake.add(fail(503), fail(503), fail(503), say("too late"))
    client = rig.client(attempts=3)
    with pytest.raises(LlmUnavailable) as err:
        await client.complete(req())
    await client.aclose()
    assert err.value.status == 503 and len(rig.fake.requests) == 3


async def test_undecodable_tool_arguments_are_a_retryable_error_naming_the_tool(rig: Rig) -> None:
    rig.fake.add(bad_json("list_pods"), call("list_pods", {"namespace": "team-a"}))
    client = rig.client()
    r = await client.complete(req(*TOOLS))
    assert r.tool_calls[0].arguments == {"namespace": "team-a"}, "retried, never an empty argument map"
    rig.fake.add(bad_json("list_pods"), bad_json("list_pods", '["team-a"]'))
    with pytest.raises(LlmUnavailable, match="demo__list_pods"):
        await rig.client(attempts=2).complete(req(*TOOLS))
    await client.aclose()
    assert BadToolArguments("t", "x").retryable


async def test_the_output_limit_is_reported(rig: Rig) -> None:
    rig.fake.add(max_tokens("cut here"))
    client = rig.client()
    r = await client.complete(req())
    await client.aclose()
    assert r.stop == "max_tokens" and r.text == "cut here"


async def test_a_response_slower_than_the_deadline_is_retried(rig: Rig) -> None:
    rig.fake.add(slow(5.0), say("fast"))
    obs = Counting()
    client = rig.client(timeout=0.3, observer=obs)
    r = await client.complete(req())
    await client.aclose()
    assert r.text == "fast" and obs.outcomes[0] in {"timeout", "network"}


async def test_failover_opens_after_consecutive_failures_then_probes_the_primary(monkeypatch) -> None:
    monkeypatch.setenv("SLEUTH_TEST_KEY", "k")
    now = [0.0]
    obs = Counting()
    with FakeModelServer(default=fail(500)) as primary, FakeModelServer(default=say("from backup")) as backup:
        p = LlmSettings(base_url=primary.url, model="p", api_key_env="SLEUTH_TEST_KEY")
        b = LlmSettings(provider="openai", base_url=backup.openai_url, model="b")
        client = build_client(
            p, fallback=b, observer=obs, failure_threshold=2, cooldown=30, retry=RetryPolicy(2, 0.001, 0.002)
        )
        client.breaker.clock = lambda: now[0]  # type: ignore[attr-defined]
        for _ in range(3):
            assert (
                await client.complete(req())
            ).text == "from backup"  # the failing request retried on backup
        assert len(primary.requests) == 4, "two failed requests (2 attempts each), then the circuit is open"
        assert obs.states == ["open"]
        now[0] = 31.0
        primary.add(say("primary is back"))
        assert (await client.complete(req())).text == "primary is back"
        assert obs.states == ["open", "half_open", "closed"]
        now[0] = 32.0
        primary.add(fail(500), fail(500), fail(500), fail(500))
        await client.complete(req())
        await client.complete(req())
        assert obs.states[-1] == "open" and len(backup.requests) == 5
        await client.aclose()


async def test_a_request_fault_does_not_fail_over(monkeypatch) -> None:
    with FakeModelServer([fail(400)]) as primary, FakeModelServer(default=say("backup")) as backup:
        client = build_client(
            LlmSettings(base_url=primary.url, model="p"),
            fallback=LlmSettings(base_url=backup.url, model="b"),
            retry=RetryPolicy(2, 0.001, 0.002),
        )
        with pytest.raises(LlmRejected):
            await client.complete(req())
        await client.aclose()
    assert backup.requests == []


def test_settings_from_config_and_environment() -> None:
    assert resolve_llm_settings(None, {}) is None
    s = resolve_llm_settings(None, {"SLEUTH_LLM_API_KEY": "k"})
    assert s is not None and s.describe() == "anthropic claude-sonnet-4-5 at https://api.anthropic.com"
    assert s.api_key({"SLEUTH_LLM_API_KEY": "k"}).get_secret_value() == "k"  # type: ignore[union-attr]
    configured = LlmSettings(provider="openai", base_url="http://127.0.0.1:11434/v1", model="llama3")
    env = {"SLEUTH_LLM_MODEL": "qwen", "SLEUTH_LLM_API_KEY": "sk-distinct-xyz"}
    s = resolve_llm_settings(configured, env)
    assert s is not None and s.provider == "openai" and s.model == "qwen"
    assert "sk-distinct-xyz" not in repr(s) + s.describe(), "the key lives in the environment only"
    # Credentials some gateways take in the URL never reach a log line either.
    leaky = LlmSettings(provider="openai", base_url="https://bob:pw-123@llm.example/v1?api-key=q-456", model="m")
    assert leaky.describe() == "openai m at https://llm.example/v1"
    s = resolve_llm_settings(
        None, {"SLEUTH_LLM_PROVIDER": "Ollama", "SLEUTH_LLM_BASE_URL": "http://127.0.0.1:11434/v1"}
    )
    assert s is not None and s.provider == "openai" and s.resolved_base_url() == "http://127.0.0.1:11434/v1"


def test_tool_call_values_are_frozen() -> None:
    c = ToolCall("1", "t", {"a": 1})
    with pytest.raises(AttributeError):
        c.name = "x"  # type: ignore[misc]
