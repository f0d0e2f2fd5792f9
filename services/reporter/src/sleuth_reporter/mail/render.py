"""A report as an email: one message per report to every address set for its target, with a
plain-text part and an HTML part (the counts per severity as a table and a chart, then every
finding with its fix). Everything taken from the cluster (names, reasons, fixes) is escaped.

The Message-ID is derived from the report id, so a copy sent twice after a crash at the wrong
moment is the same message to the recipients' mail clients."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

from sleuth_common.messages import SEVERITIES, Finding, ReportResult
from sleuth_reporter.compose import target_name
from sleuth_reporter.mail.chart import COLORS, severity_chart

__all__ = ["report_email"]


def _where(r: ReportResult) -> str:
    parts = [f"{', '.join(ns) or 'nothing'} on {cluster}" for cluster, ns in r.namespaces.items()]
    return "; ".join(parts) or "nothing"


def _ref(f: Finding) -> str:
    return f"{f.kind} {f.namespace}/{f.name}" if f.namespace else f"{f.kind} {f.name}"


def _subject(r: ReportResult, target: str) -> str:
    worst = [f"{r.counts.get(s, 0)} {s}" for s in SEVERITIES if r.counts.get(s, 0)][:2]
    counts = f" ({', '.join(worst)})" if worst else ""
    return f"Sleuth best-practice report for {target_name(target)}: {len(r.findings)} finding(s){counts}"


def _plain(report_id: str, r: ReportResult, target: str, when: str) -> str:
    lines = [
        f"Best-practice report for {target_name(target)} ({target})",
        f"Asked by {r.user} on {when}; it covers {_where(r)}.",
        "",
        f"{len(r.findings)} finding(s): " + ", ".join(f"{r.counts.get(s, 0)} {s}" for s in SEVERITIES),
        "",
    ]
    for i, f in enumerate(r.findings, 1):
        lines.append(f"{i}. [{f.severity}] {_ref(f)} ({f.cluster}) - {f.rule}")
        lines.append(f"   Why: {f.why}")
        fix = f.fix.splitlines() or [""]
        lines.append(f"   Fix: {fix[0]}")
        lines += [f"        {line}" for line in fix[1:]]
        lines.append("")
    if r.not_checked:
        lines.append(f"Not checked ({len(r.not_checked)}):")
        lines += [f"- {n.kind} {n.namespace}/{n.name}: {n.reason}" for n in r.not_checked]
        lines.append("")
    if r.notes:
        lines.append("Notes:")
        lines += [f"- {n}" for n in r.notes]
        lines.append("")
    lines.append(f"Report {report_id}, made by Sleuth with rules in code over what every reader of "
                 f"{target_name(target)} may read.")
    return "\n".join(lines) + "\n"


_CELL = "padding:6px 8px;border-bottom:1px solid #e0e0e0;vertical-align:top;text-align:left"


def _html(report_id: str, r: ReportResult, target: str, when: str) -> str:
    e = html.escape
    counts_rows = "".join(
        f'<tr><td style="{_CELL}"><span style="color:{COLORS[s]};font-weight:bold">{s}</span></td>'
        f'<td style="{_CELL};text-align:right">{r.counts.get(s, 0)}</td></tr>'
        for s in SEVERITIES
    )
    rows = "".join(
        f'<tr><td style="{_CELL};color:{COLORS[f.severity]};font-weight:bold">{e(f.severity)}</td>'
        f'<td style="{_CELL}">{e(_ref(f))}<br><span style="color:#777">{e(f.cluster)}</span></td>'
        f'<td style="{_CELL}"><code>{e(f.rule)}</code></td><td style="{_CELL}">{e(f.why)}</td>'
        f'<td style="{_CELL}"><pre style="margin:0;white-space:pre-wrap;font-size:12px">{e(f.fix)}</pre></td></tr>'
        for f in r.findings
    )
    head = "".join(f'<th style="{_CELL};background:#f5f5f5">{h}</th>' for h in ("Severity", "Object", "Rule", "Why",
                                                                                 "Fix"))
    findings = (f'<table style="border-collapse:collapse;width:100%;font-size:13px"><thead><tr>{head}</tr></thead>'
                f"<tbody>{rows}</tbody></table>") if r.findings else "<p>No rule found anything to fix.</p>"
    extra = ""
    if r.not_checked:
        items = "".join(f"<li>{e(n.kind)} {e(n.namespace)}/{e(n.name)}: {e(n.reason)}</li>" for n in r.not_checked)
        extra += f"<h3>Not checked ({len(r.not_checked)})</h3><ul>{items}</ul>"
    if r.notes:
        extra += "<h3>Notes</h3><ul>" + "".join(f"<li>{e(n)}</li>" for n in r.notes) + "</ul>"
    return (
        '<!doctype html><html><head><meta charset="utf-8"></head>'
        '<body style="font-family:Helvetica,Arial,sans-serif;color:#222;max-width:960px">'
        f"<h2>Best-practice report for {e(target_name(target))}</h2>"
        f"<p>Asked by <b>{e(r.user)}</b> on {e(when)}; it covers {e(_where(r))}. "
        f"{len(r.findings)} finding(s), {len(r.rules)} rules.</p>"
        f'<table style="border-collapse:collapse;margin-bottom:8px;font-size:14px">{counts_rows}</table>'
        f"<div>{severity_chart(r.counts)}</div>"
        f"<h3>Findings ({len(r.findings)})</h3>{findings}{extra}"
        f'<p style="color:#777;font-size:12px">Report {e(report_id)}, made by Sleuth with rules in code over what '
        f"every reader of {e(target_name(target))} may read.</p></body></html>"
    )


def report_email(report_id: str, r: ReportResult, target: str, sender: str, to: list[str]) -> EmailMessage:
    """The email of report ``report_id`` (``r`` made for ``target``), from ``sender`` to ``to``."""
    when = datetime.fromtimestamp(r.created, UTC)
    stamp = when.strftime("%Y-%m-%d %H:%M UTC")
    msg = EmailMessage()
    msg["Subject"] = _subject(r, target)
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    msg["Date"] = format_datetime(when)
    domain = parseaddr(sender)[1].rpartition("@")[2] or "sleuth.invalid"
    msg["Message-ID"] = f"<report-{report_id}@{domain}>"
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content(_plain(report_id, r, target, stamp))
    msg.add_alternative(_html(report_id, r, target, stamp), subtype="html")
    return msg
