"""The report as chat Markdown: a summary line, the top findings (most severe first) each with
its one-sentence why and its fix in a code span (one line) or a code block (YAML, several
commands), then what was not checked and the notes."""

from __future__ import annotations

from sleuth_common.messages import SEVERITIES, Finding, ReportResult

__all__ = ["EVERY_FINDING", "TOP", "render"]

TOP = 12
"""Findings written out in the chat answer (``--json`` and the result carry all of them)."""
_NOT_CHECKED_SHOWN = 5


def _scope(result: ReportResult) -> str:
    parts = []
    for cluster, namespaces in result.namespaces.items():
        shown = ", ".join(namespaces[:8]) + (f" and {len(namespaces) - 8} more" if len(namespaces) > 8 else "")
        parts.append(f"{shown} on {cluster}" if len(result.namespaces) > 1 else f"{shown} ({cluster})")
    return "; ".join(parts) or "nothing"


def _fix(fix: str) -> str:
    if "\n" not in fix and "`" not in fix:
        return f"    `{fix}`"
    lang = "yaml" if fix.lstrip().startswith("#") and ":" in fix else "sh"
    body = "\n".join("    " + line for line in fix.splitlines())
    return f"    ```{lang}\n{body}\n    ```"


def _finding(i: int, f: Finding) -> str:
    where = f"{f.kind} `{f.namespace}/{f.name}`" if f.namespace else f"{f.kind} `{f.name}`"
    return f"{i}. **{f.severity}** · {where} · `{f.rule}`: {f.why}\n{_fix(f.fix)}"


EVERY_FINDING = "`sleuth report --json` lists every finding"
"""Where the findings past the top ones are (the CLI's; the reporter's posts say their own)."""


def render(result: ReportResult, subjects: int = 0, *, every_finding: str = EVERY_FINDING) -> str:
    if result.status == "denied":
        return result.answer_markdown
    counts = ", ".join(f"{result.counts.get(s, 0)} {s}" for s in SEVERITIES)
    n = len(result.findings)
    checked = f" across {subjects} object(s)" if subjects else ""
    lines = [
        f"**Best-practice report** for {result.user or 'you'} over {_scope(result)}: "
        f"{n} finding(s){checked} ({counts}); {len(result.rules)} rules.",
    ]
    if not result.clusters:
        lines.append("")
        lines.append("No cluster could be read, so there is nothing to report.")
    if result.findings:
        lines += ["", f"**Top findings**{f' ({TOP} of {n})' if n > TOP else ''}", ""]
        lines += [_finding(i, f) for i, f in enumerate(result.findings[:TOP], 1)]
        if n > TOP:
            lines += ["", f"… and {n - TOP} more ({every_finding})."]
    elif result.clusters:
        lines += ["", "No rule found anything to fix in what you can read."]
    if result.not_checked:
        lines += ["", f"**Not checked** ({len(result.not_checked)})", ""]
        for nc in result.not_checked[:_NOT_CHECKED_SHOWN]:
            by = f" by `{nc.rule}`" if nc.rule else ""
            lines.append(f"- {nc.kind} `{nc.namespace}/{nc.name}`{by}: {nc.reason}")
        if len(result.not_checked) > _NOT_CHECKED_SHOWN:
            lines.append(f"- … and {len(result.not_checked) - _NOT_CHECKED_SHOWN} more")
    if result.notes:
        lines += ["", "**Notes**", ""]
        lines += [f"- {note}" for note in result.notes]
    return "\n".join(lines)
