"""What people read, without any server: the full list's cap, the email's parts with hostile
names escaped, the chart (counts, no script, nothing fetched from elsewhere), who reads a report."""

from __future__ import annotations

import re

from sleuth_common.channels import audience_claims
from sleuth_common.messages import Finding, InvestigationResult, ReportResult, Requester
from sleuth_reporter import compose
from sleuth_reporter.commands import reads
from sleuth_reporter.mail import report_email, severity_chart

from .conftest import findings, report_result


def test_the_full_list_is_capped_and_says_where_the_rest_is() -> None:
    r = report_result("alice", n=400)
    text = compose.every_finding("abc", r, limit=3000, emailed=True)
    assert text is not None and len(text) <= 3200
    listed = text.count("\n- ")
    assert 0 < listed < 400 and text.endswith(f"… and {400 - listed} more, not listed here (the email has every one).")
    assert compose.every_finding("abc", report_result("alice", n=5), limit=3000, emailed=True) is None  # all shown


def test_the_summary_footer_names_the_report_the_thread_and_the_email() -> None:
    r = report_result("alice", n=14)
    result = InvestigationResult(status="diagnosed", answer_markdown=r.answer_markdown, report=r)
    text = compose.summary("abc", result, emails=2)
    assert text.endswith("_Report `abc` · every finding follows in this thread · emailed to 2 address(es)._")
    refused = InvestigationResult(status="denied", answer_markdown="Refused.")
    assert compose.summary("abc", refused, emails=2) == "Refused.\n\n_Report `abc`._"


def test_the_email_escapes_what_the_cluster_named() -> None:
    hostile = Finding(rule="probes_missing", severity="high", cluster="demo", namespace="team-a", kind="Deployment",
                      name="x<img src=y onerror=alert(1)>", why="<b>bold</b> claim.", fix="echo '</pre><script>'")
    r = report_result("alice", n=2).model_copy(update={"findings": (hostile, *findings(2))})
    msg = report_email("abc", r, "web:team-a-alerts", "Sleuth <sleuth@example.com>", ["a@example.com"])
    html = msg.get_body(("html",)).get_content()
    plain = msg.get_body(("plain",)).get_content()
    assert "<img src=y" not in html and "&lt;img src=y onerror=alert(1)&gt;" in html
    assert "<script>" not in html and "&lt;/pre&gt;&lt;script&gt;" in html and "&lt;b&gt;bold" in html
    assert "x<img src=y onerror=alert(1)>" in plain  # plain text is text
    assert msg["Message-ID"] == "<report-abc@example.com>" and msg["Auto-Submitted"] == "auto-generated"
    assert msg.get_content_type() == "multipart/alternative"


def test_the_chart_draws_each_count_and_nothing_else() -> None:
    svg = severity_chart({"critical": 1, "high": 0, "medium": 7, "low": 3})
    assert svg.startswith("<svg ") and svg.endswith("</svg>")
    values = re.findall(r'<text[^>]*class="value[^"]*"[^>]*>([^<]*)</text>', svg)
    assert sorted(set(values)) == ["0", "1", "3", "7"]
    assert "<script" not in svg and "<!--" not in svg
    assert not re.findall(r"https?://(?!www\.w3\.org/)", svg)  # nothing to fetch
    assert 'aria-label="Findings by severity: 1 critical, 0 high, 7 medium, 3 low"' in svg


def test_who_reads_a_report() -> None:
    readers = list(audience_claims((Requester(user="alice", groups=("team-a",)),
                                    Requester(user="", groups=("team-a", "devs")))))
    assert reads(readers, "alice", ())
    assert reads(readers, "dave", ("devs", "team-a", "x"))
    assert not reads(readers, "dave", ("team-a",))  # one of the entry's groups is not enough
    assert not reads(readers, "bob", ("team-b",))
    assert not reads([], "alice", ("team-a",))


def test_an_empty_report_says_so_in_the_email() -> None:
    r = ReportResult(user="alice", clusters=("demo",), namespaces={"demo": ("team-a",)},
                     counts={"critical": 0, "high": 0, "medium": 0, "low": 0})
    msg = report_email("abc", r, "conversation:alice", "sleuth@example.com", ["a@example.com"])
    assert "No rule found anything to fix" in msg.get_body(("html",)).get_content()
    assert msg["Subject"] == "Sleuth best-practice report for your conversation with Sleuth: 0 finding(s)"
