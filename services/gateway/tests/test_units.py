"""Pure parts of the gateway: command parsing, Markdown rendering, settings, the page's policy."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sleuth_gateway import Settings
from sleuth_gateway.auth import bearer_token
from sleuth_gateway.commands import parse_command
from sleuth_gateway.errors import Unauthorized
from sleuth_gateway.render import render_markdown
from sleuth_gateway.web import page


@dataclass(frozen=True)
class Case:
    text: str
    command: str | None


COMMANDS = [
    Case("help", "help"),
    Case("Help!", "help"),
    Case("  HELP?  ", "help"),
    Case("please help", "help"),
    Case("@sleuth help", "help"),
    Case("refresh", "refresh"),
    Case("Refresh, please!", "refresh"),
    Case("refresh thanks", "refresh"),
    Case("help me with team-a", None),
    Case("what does refresh do?", None),
    Case("help refresh", None),
    Case("why is api crashing in team-a?", None),
    Case("", None),
]


@pytest.mark.parametrize("case", COMMANDS, ids=lambda c: c.text or "empty")
def test_whole_message_commands(case: Case) -> None:
    parsed = parse_command(case.text)
    assert (parsed.name if parsed else None) == case.command


def test_markdown_is_rendered_with_raw_html_escaped() -> None:
    html = render_markdown("## Title\n\n<img src=x onerror=alert(1)> [link](javascript:alert(1)) `code`")
    assert "<h2>Title</h2>" in html
    assert "<img" not in html and "&lt;img" in html
    assert 'href="javascript' not in html
    assert "<code>code</code>" in html


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer   ", "Basic dXNlcg==", "t-alice"])
def test_bad_authorization_headers_are_401(header: str | None) -> None:
    with pytest.raises(Unauthorized):
        bearer_token(header)


def test_bearer_token_is_read() -> None:
    assert bearer_token("Bearer t-alice") == "t-alice"
    assert bearer_token("bearer   t-alice ") == "t-alice"


def test_settings_defaults_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    g = Settings().gateway
    assert (g.host, g.port, g.question_limit, g.answer_timeout) == ("127.0.0.1", 8080, 4000, 60.0)
    assert (g.rate_limit_capacity, g.rate_limit_refill_per_second, g.max_body_bytes) == (10, 0.5, 65536)
    assert g.url() == "http://127.0.0.1:8080"
    monkeypatch.setenv("SLEUTH_GATEWAY__PORT", "9999")
    assert Settings().gateway.port == 9999


def test_page_is_self_contained_and_its_script_is_pinned_by_hash() -> None:
    html, csp = page()
    assert "<script src" not in html and "<link" not in html
    assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "connect-src 'self'" in csp
