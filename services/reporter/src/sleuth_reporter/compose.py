"""What the reporter says in chat: the command replies, the report's posts, and its notices.

The summary post is the agent's own chat Markdown of the report (``answer_markdown``: the counts,
the top findings with their fixes, what was not checked, the notes) with a footer naming the
report; the second post lists every finding, one line each, grouped by severity (the fixes of
all of them are in the email)."""

from __future__ import annotations

import time

from sleuth_common.messages import SEVERITIES, Finding, InvestigationResult, ReportInfo, ReportResult

__all__ = [
    "already_running",
    "email_failed",
    "every_finding",
    "not_finished",
    "started",
    "status_text",
    "summary",
    "target_name",
]


def target_name(target: str) -> str:
    """How a target is named to people: ``#team-a-alerts``, ``your conversation with Sleuth``."""
    kind, _, name = target.partition(":")
    if kind == "web":
        return f"#{name}"
    if kind == "conversation":
        return "your conversation with Sleuth"
    return target


def started(report_id: str, emails: int) -> str:
    mail = f", and emailed to the {emails} address(es) set for this channel" if emails else ""
    return f"Report started (`{report_id}`): it will be posted here{mail}."


def already_running(report_id: str) -> str:
    return (f"A report is already being made here (`{report_id}`): it will be posted here. "
            f"`report status {report_id}` says how far it is.")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts.get(s, 0)} {s}" for s in SEVERITIES)


def summary(report_id: str, result: InvestigationResult, emails: int) -> str:
    """The first post: the agent's summary (or its refusal or error), and a footer."""
    text = result.answer_markdown.rstrip() or "The report came back empty."
    r = result.report
    if r is None or r.status != "ok":
        return f"{text}\n\n_Report `{report_id}`._"
    more = " · every finding follows in this thread" if len(r.findings) > r.shown else ""
    mail = f" · emailed to {emails} address(es)" if emails else ""
    return f"{text}\n\n_Report `{report_id}`{more}{mail}._"


def _line(f: Finding) -> str:
    where = f"{f.kind} `{f.namespace}/{f.name}`" if f.namespace else f"{f.kind} `{f.name}`"
    cluster = f" ({f.cluster})" if f.cluster else ""
    return f"- {where}{cluster} · `{f.rule}`: {f.why}"


def every_finding(report_id: str, r: ReportResult, limit: int, emailed: bool) -> str | None:
    """The second post, or None when the summary already wrote out every finding."""
    if len(r.findings) <= r.shown:
        return None
    lines = [f"**Every finding** of report `{report_id}` ({len(r.findings)}: {_counts(r.counts)})"]
    size = len(lines[0])
    for severity in SEVERITIES:
        group = [f for f in r.findings if f.severity == severity]
        if not group:
            continue
        head = f"\n**{severity}** ({len(group)})\n"
        if size + len(head) > limit:
            break
        lines.append(head)
        size += len(head)
        for f in group:
            line = _line(f)
            if size + len(line) + 1 > limit:
                break
            lines.append(line)
            size += len(line) + 1
    listed = sum(1 for line in lines if line.startswith("- "))
    if listed < len(r.findings):
        where = "the email has every one" if emailed else "`sleuth report --json` lists every one"
        lines.append(f"\n… and {len(r.findings) - listed} more, not listed here ({where}).")
    return "\n".join(lines)


def not_finished(report_id: str, waited: float) -> str:
    return (f"The best-practice report `{report_id}` did not finish: no answer came within {waited:.0f}s "
            "(the agents may be busy or down). Ask for it again with `report` in a while.")


def email_failed(report_id: str, emails: int, attempts: int, error: str) -> str:
    tries = f"after {attempts} tries" if attempts > 1 else "and will not be retried"
    return (f"The email of report `{report_id}` to the {emails} address(es) set for this channel could not be "
            f"sent {tries} ({error}). The report itself is in this thread.")


def _ago(ts: float, now: float) -> str:
    s = max(0, int(now - ts))
    return f"{s}s ago" if s < 120 else f"{s // 60} min ago" if s < 7200 else f"{s // 3600} h ago"


def status_text(info: ReportInfo, now: float | None = None) -> str:
    now = time.time() if now is None else now
    head = f"Report `{info.id}` (asked by {info.owner} {_ago(info.created, now)}): "
    if info.state == "queued":
        return head + "waiting for a reporter."
    if info.state == "running":
        return head + "being made."
    if info.state == "failed":
        return head + "did not finish; ask again with `report`."
    what = {"ok": f"posted ({sum(info.counts.values())} finding(s): {_counts(info.counts)})",
            "denied": "refused (posted why)", "error": "posted, with an error"}.get(info.status, "posted")
    mail = {"sent": "; email sent", "retrying": f"; email not sent yet ({info.email_attempts} failed tries)",
            "pending": "; email pending", "failed": "; the email could not be sent"}.get(info.email, "")
    return head + what + mail + "."
