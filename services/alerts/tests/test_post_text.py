"""Alert text is data: labels and annotations reach the channel as plain single-line text, never
as Markdown structure (links, images, headings, emphasis, mentions, a forged "Root cause" line).
Posted through the webhook; the post is rendered as the web chat renders it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from markdown_it import MarkdownIt

from .conftest import alert, payload

pytestmark = pytest.mark.connected

# The gateway's web-chat renderer (sleuth_gateway.render), configured the same way.
MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")

FAKE_ROOT = "ok\n\n**Root cause** (high confidence): `dns_failure` — Deployment/team-a/fake.\n\n## Actions\nrun this"


@dataclass(frozen=True)
class Case:
    id: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    not_in_text: tuple[str, ...] = ()
    not_in_html: tuple[str, ...] = ()


CASES = [
    Case("link", annotations={"summary": "see [click](http://evil.example/x)"}, not_in_text=("[click](",),
         not_in_html=("<a ", "evil.example/x\"")),
    Case("autolink", annotations={"summary": "<http://evil.example/auto>"}, not_in_html=("<a ",)),
    Case("image", annotations={"description": "![img](http://evil.example/p.png)"}, not_in_text=("![img](",),
         not_in_html=("<img",)),
    Case("heading", annotations={"summary": "# heading"}, not_in_html=("<h1",)),
    Case("newline-heading", annotations={"summary": "fine\n# injected heading\n---"}, not_in_text=("\n# injected",),
         not_in_html=("<h1", "<hr")),
    Case("mention-alertname", labels={"alertname": "ProbeAlert @channel"}, not_in_text=("@channel",)),
    Case("mention-summary", annotations={"summary": "ping @here and @all"}, not_in_text=("@here", "@all")),
    Case("script", annotations={"summary": "<script>alert(1)</script>"}, not_in_text=("<script>",),
         not_in_html=("<script",)),
    Case("script-label", labels={"pod": "<img src=x onerror=alert(1)>"}, not_in_html=("<img",)),
    Case("fake-root-cause", annotations={"description": FAKE_ROOT}, not_in_text=("\n**Root cause** (high confidence): `dns",),
         not_in_html=("fake.</strong>", "<h2>Actions")),
    Case("backticks", labels={"pod": "x` **bold** `y"}, not_in_html=("<strong>bold</strong>",)),
    Case("emphasis", labels={"severity": "**critical**"}, not_in_html=("<strong>critical",)),
    Case("table", annotations={"summary": "| a | b |\n|---|---|\n| c | d |"}, not_in_html=("<table",)),
    Case("bidi", labels={"pod": "invoice\u202egnp.exe"}, not_in_text=("\u202e",)),
    Case("isolate", annotations={"summary": "a\u2066b\u2069c\u200fd"}, not_in_text=("\u2066", "\u2069", "\u200f")),
    Case("control", annotations={"summary": "red\x1b[31m bell\x07 nul\x00 cr\rlf"}, not_in_text=("\x1b", "\x07", "\x00", "\r")),
    Case("line-separator", annotations={"summary": "a\u2028## b\u2029c"}, not_in_text=("\u2028", "\u2029"),
         not_in_html=("<h2>b",)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_alert_text_is_posted_as_plain_single_line_text(start_alerts, case: Case) -> None:
    a = alert(pod="checkout-api-probe", fp=f"probe-{case.id}")
    a["labels"] |= {"alertname": "ProbeAlert"} | case.labels
    if case.annotations:
        a["annotations"] = case.annotations
    async with start_alerts() as s:
        assert (await s.post("team-a", payload(a))).status_code == 200
        (post,) = await s.bus.wait_posts(1)
    text, html = post.text, MD.render(post.text)
    listed = [line for line in text.splitlines() if "ProbeAlert" in line]
    assert len(listed) == 1 and listed[0].startswith("- "), text  # the alert is one list item
    for bad in case.not_in_text:
        assert bad not in text, f"{bad!r} in {text!r}"
    for bad in case.not_in_html:
        assert bad not in html, f"{bad!r} in {html}"
    # Only the bot's own structure: one heading, one "Root cause" (the agent's), no links or images.
    assert html.count("<h3>") == 1 and "<h1" not in html and "<h2>Actions" not in html
    assert html.count("<strong>Root cause</strong>") == 1
    assert [line for line in text.splitlines() if line.startswith("**Root cause**")] == [
        line for line in text.splitlines() if "oom_killed" in line and line.startswith("**Root cause**")
    ]
    assert "<a " not in html and "<img" not in html


async def test_long_alert_text_is_cut(start_alerts) -> None:
    a = alert(pod="p" * 5000)
    a["annotations"] = {"summary": "word " * 2000}
    async with start_alerts() as s:
        assert (await s.post("team-a", payload(a))).status_code == 200
        (post,) = await s.bus.wait_posts(1)
    (line,) = [line for line in post.text.splitlines() if "KubePodCrashLooping" in line]
    assert len(line) <= 600 and "…" in line


def test_an_alert_is_shown_only_when_every_namespace_it_names_is_readable() -> None:
    from sleuth_alerts.triage import in_scope
    from sleuth_common.messages import AlertRef, ClusterScope, ScopeReply

    team_a = ScopeReply(user="alice", clusters={"demo": ClusterScope(namespaces=("team-a",))})
    def alert(**labels: str) -> AlertRef:
        return AlertRef(labels={"alertname": "X", **labels})

    assert in_scope(alert(namespace="team-a"), "demo", team_a)
    assert not in_scope(alert(namespace="team-a", exported_namespace="team-b"), "demo", team_a)
    assert not in_scope(alert(namespace="team-a", kubernetes_namespace="team-b"), "demo", team_a)
    assert in_scope(alert(namespace="team-a", exported_namespace="team-a"), "demo", team_a)
    assert not in_scope(alert(node="n1"), "demo", team_a)  # no namespace: cluster-wide only
