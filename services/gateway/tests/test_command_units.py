"""Pure parts of the chat commands: the parser (a whole message is a command; one that merely
mentions a command word is a question, DESIGN §5: a scenario table and properties over generated
messages), and the helpers of ``diagnostics`` (URLs shown without credentials, the commit, the
agent's LLM state in words)."""

from __future__ import annotations

import string
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth_common.messages import LlmEndpointReport, LlmReport
from sleuth_gateway import Settings
from sleuth_gateway.commands import Command, parse_command
from sleuth_gateway.commands._diagnostics import (
    _health_base,
    _llm_section,
    _masked,
    _secrets,
    git_commit,
    shown_url,
)
from sleuth_gateway.commands._parse import ALERT_OPS, COMMANDS, POLITE


@dataclass(frozen=True)
class Case:
    text: str
    command: Command | None


CASES = [
    Case("Access?", Command("access")),
    Case("access please", Command("access")),
    Case("ACCESS", Command("access")),
    Case("@sleuth diagnostics!", Command("diagnostics")),
    Case("Diagnostics, please.", Command("diagnostics")),
    Case("hey sleuth, diagnostics", Command("diagnostics")),
    Case("Alerts on, please", Command("alerts", "on")),
    Case("alerts STATUS?", Command("alerts", "status")),
    Case("can you help me understand why api restarts?", None),
    Case("show my access", None),
    Case("what does diagnostics say about team-a?", None),
    Case("access diagnostics", None),
    Case("alerts", None),
    Case("alerts maybe", None),
    Case("diagnostics for prod-1", None),
    Case("why was access to team-a denied?", None),
    Case("kb list", Command("kb", "list")),
    Case("@sleuth KB LIST please", Command("kb", "list")),
    Case("kb", Command("kb", "usage")),
    Case("kb show pg-disk?", Command("kb", "show", "pg-disk")),
    Case("kb rm pg-disk", Command("kb", "rm", "pg-disk")),
    Case("kb delete pg-disk", Command("kb", "rm", "pg-disk")),
    Case("kb add pg-disk\n---\ntitle: Disk\n---\n1. Look.\n", Command("kb", "add", "pg-disk",
                                                                       "---\ntitle: Disk\n---\n1. Look.")),
    Case("kb add pg-disk", Command("kb", "usage")),  # no runbook below it
    Case("kb add Bad_Id\n---\ntitle: x\n---\nbody", Command("kb", "usage")),
    Case("kb show a b", Command("kb", "usage")),
    Case("kb explode", Command("kb", "usage")),
    Case("what is in the kb for postgres?", None),
    Case("is the kb list up to date?", None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_commands_and_questions(case: Case) -> None:
    assert parse_command(case.text) == case.command


_VOCABULARY = POLITE | COMMANDS | ALERT_OPS | {"alerts"}
polite = st.lists(st.sampled_from(sorted(POLITE | {"@sleuth"})), max_size=3)
punctuation = st.sampled_from(["", "!", "?", ".", ",", "!!", "?!", " ..."])
case_of = st.sampled_from([str.lower, str.upper, str.title])
content = st.text(string.ascii_lowercase + "-", min_size=2, max_size=10).filter(
    lambda w: w.strip("-_") not in _VOCABULARY and bool(w.strip("-_"))
)


def _say(words: list[str], end: str, shape: object) -> str:
    assert callable(shape)
    return str(shape(" ".join(words) + end))


@given(st.sampled_from(sorted(COMMANDS)), polite, polite, punctuation, case_of)
def test_a_command_word_alone_is_a_command_however_said(
    word: str, before: list[str], after: list[str], end: str, shape: object
) -> None:
    assert parse_command(_say([*before, word, *after], end, shape)) == Command(word)


@given(st.sampled_from(sorted(ALERT_OPS)), polite, polite, punctuation, case_of)
def test_alerts_with_an_op_alone_is_a_command(
    op: str, before: list[str], after: list[str], end: str, shape: object
) -> None:
    assert parse_command(_say([*before, "alerts", op, *after], end, shape)) == Command("alerts", op)


@given(
    st.sampled_from([*sorted(COMMANDS), *(f"alerts {op}" for op in sorted(ALERT_OPS))]),
    st.lists(content, min_size=1, max_size=4),
    st.integers(min_value=0, max_value=4),
    polite,
    punctuation,
    case_of,
)
def test_a_message_that_merely_mentions_a_command_is_a_question(
    said: str, others: list[str], at: int, courtesy: list[str], end: str, shape: object
) -> None:
    words = [*others]
    words.insert(min(at, len(words)), said)
    assert parse_command(_say([*courtesy, *words], end, shape)) is None


def test_urls_shown_without_credentials_and_health_beside_mcp() -> None:
    url = "https://u:pw@kube-mcp.sleuth.svc:8181/mcp?token=t#f"
    assert shown_url(url) == "https://kube-mcp.sleuth.svc:8181/mcp"
    assert _health_base(url) == "https://u:pw@kube-mcp.sleuth.svc:8181"
    assert _health_base("http://h/prefix/mcp/") == "http://h/prefix"
    assert _health_base("http://h/sse") == "http://h"


async def test_git_commit_from_the_environment_else_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEUTH_GIT_COMMIT", "0123abc")
    assert await git_commit() == "0123abc"
    monkeypatch.setenv("SLEUTH_GIT_COMMIT", "abc; rm -rf /")
    assert await git_commit() == "unknown"
    monkeypatch.delenv("SLEUTH_GIT_COMMIT")
    assert await git_commit() == _checkout_head()


def _checkout_head() -> str:
    here = Path(__file__).parent
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True)
    return head.stdout.strip() if head.returncode == 0 else "unknown"


def test_every_configured_secret_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last guard of ``diagnostics``: should a reason ever quote a URL or a password."""
    monkeypatch.setenv("SLEUTH_REDIS_PASSWORD", "redis-env-pw")
    monkeypatch.setenv("SLEUTH_LLM_API_KEY", "sk-live-key")
    settings = Settings(
        nats={"url": "nats://natstoken@n1:4222, nats://u:nats-pw@n2:4222"},
        redis={"url": "redis://:redis-url-pw@r:6379/0"},
        clusters=[{"name": "c", "mcp_servers": [{"url": "https://m/mcp?api_key=mcp-key"}]}],
    )
    found = _secrets(SimpleNamespace(settings=settings))  # type: ignore[arg-type]
    text = "natstoken nats-pw redis-url-pw redis-env-pw sk-live-key mcp-key n1 r m"
    assert _masked(text, found) == "*** *** *** *** *** *** n1 r m"


PRIMARY = LlmEndpointReport(provider="anthropic", model="claude-x", endpoint="https://u:pw@api.example/v1?k=1")
BACKUP = LlmEndpointReport(provider="openai", model="llama3", endpoint="http://ollama:11434/v1")


@pytest.mark.parametrize(("report", "expected"), [
    (LlmReport(), ["**LLM** (the agent's): none configured; the deterministic investigator answers alone."]),
    (LlmReport(primary=PRIMARY, requests={"ok": 2}), [
        "**LLM** (the agent's): anthropic `claude-x` at https://api.example/v1",
        "- no backup endpoint, so no circuit breaker: a failed request is retried, then the deterministic "
        "answer stands",
        "- requests since the agent started: 2 ok",
    ]),
    (LlmReport(primary=PRIMARY, backup=BACKUP, circuit="half_open", consecutive_failures=1, failure_threshold=3,
               cooldown_seconds=30, last_used="backup"), [
        "**LLM** (the agent's): anthropic `claude-x` at https://api.example/v1",
        "- backup: openai `llama3` at http://ollama:11434/v1",
        "- circuit half-open: one request is probing the primary; 1 consecutive failure of the primary "
        "(3 open the circuit for 30s); last request answered by the backup",
        "- requests since the agent started: none",
    ]),
])
def test_the_agents_llm_state_in_words(report: LlmReport, expected: list[str]) -> None:
    assert _llm_section(report) == expected
