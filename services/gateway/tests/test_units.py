"""Pure parts of the gateway: command parsing, Markdown rendering, settings, the page's policy,
which identities are refused, what failed sign-ins are counted by, how deep a body nests."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth_gateway import Settings
from sleuth_gateway.auth import Identity, bearer_token, is_refused
from sleuth_gateway.body import _depth
from sleuth_gateway.commands import parse_command
from sleuth_gateway.errors import Unauthorized
from sleuth_gateway.ratelimit import client_key
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


def test_page_has_no_inline_script_or_style_and_its_policy_allows_none() -> None:
    html, csp = page()
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/app.js">']
    assert re.search(r"<script[^>]*>\s*</script>", html)  # an empty element: no inline code
    assert "<style" not in html and "style=" not in html
    assert re.search(r"<[^>]*\son\w+\s*=", html) is None  # no inline event handlers
    assert "javascript:" not in html
    assert '<link rel="stylesheet" href="/static/app.css">' in html
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert directives["default-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert directives["connect-src"] == "'self'"


@dataclass(frozen=True)
class RefusedCase:
    user: str
    groups: tuple[str, ...]
    refused: bool


REFUSED = [
    RefusedCase("system:serviceaccount:sleuth:agent", (), True),
    RefusedCase("system:serviceaccount:sleuth:", (), True),
    RefusedCase("sleuth-reader", ("sleuth:readers",), True),
    RefusedCase("sleuth-authz", (), True),
    RefusedCase("robot", ("system:serviceaccounts:sleuth",), True),
    RefusedCase("system:serviceaccount:sleuth-other:agent", (), False),
    RefusedCase("system:serviceaccount:team-a:sleuth", ("system:serviceaccounts:team-a",), False),
    RefusedCase("sleuth-reader-fan", (), False),
    RefusedCase("alice", ("team-a", "system:serviceaccounts:sleuthy"), False),
]


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.user or "empty")
def test_sleuths_own_identities_are_recognised(case: RefusedCase) -> None:
    entries = Settings().gateway.refused_identities
    assert is_refused(Identity(case.user, case.groups), entries) is case.refused


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("", "unknown"),
        ("/run/sleuth.sock", "/run/sleuth.sock"),
    ],
)
def test_failed_sign_ins_are_counted_per_address_and_per_ipv6_slash_64(address: str, key: str) -> None:
    assert client_key(address) == key


def test_host_names_follow_host_and_public_url() -> None:
    g = Settings(gateway={"host": "10.1.2.3", "public_url": "https://sleuth.example.com:8443/"}).gateway
    assert g.host_names() == ["127.0.0.1", "localhost", "[::1]", "10.1.2.3", "sleuth.example.com:8443"]
    assert Settings(gateway={"host": "0.0.0.0"}).gateway.host_names() == ["127.0.0.1", "localhost", "[::1]"]
    assert Settings(gateway={"allowed_hosts": ["a.example", "*"]}).gateway.host_names() == ["*"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.sampled_from('ab"\\[]{}:,é\n')),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=30,
)


def _nesting(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    return 0


@given(_JSON, st.booleans())
def test_body_depth_counts_nesting_not_brackets_in_strings(value: object, ascii_only: bool) -> None:
    assert _depth(json.dumps(value, ensure_ascii=ascii_only)) == _nesting(value)
