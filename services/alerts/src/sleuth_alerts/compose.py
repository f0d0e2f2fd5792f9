"""The messages the bot posts in an alert channel (Markdown)."""

from __future__ import annotations

from collections.abc import Sequence

from sleuth_common.messages import AlertRef, InvestigationResult

__all__ = ["access_note", "answer", "listing", "not_finished", "outside_access"]

_MAX_LISTED = 50


def _where(cluster: str) -> str:
    return f"cluster **{cluster}**" if cluster else "alerts without a cluster label"


def _line(alert: AlertRef) -> str:
    labels = alert.labels
    parts = [f"**{labels.get('alertname', 'alert')}**"]
    for key in (
        "pod",
        "deployment",
        "statefulset",
        "daemonset",
        "job",
        "service",
        "node",
        "persistentvolumeclaim",
    ):
        if labels.get(key):
            parts.append(f"{key} `{labels[key]}`")
            break
    if labels.get("namespace"):
        parts.append(f"in `{labels['namespace']}`")
    if labels.get("severity"):
        parts.append(f"({labels['severity']})")
    summary = alert.annotations.get("summary") or alert.annotations.get("description") or ""
    text = " ".join(parts)
    if summary:
        text += f" — {summary[:200]}"
    return f"- {text}"


def listing(alerts: Sequence[AlertRef], *, limit: int = _MAX_LISTED) -> str:
    lines = [_line(a) for a in alerts[:limit]]
    if len(alerts) > limit:
        lines.append(f"- … and {len(alerts) - limit} more")
    return "\n".join(lines)


def access_note(run_as: str, marked_by: str) -> str:
    if marked_by:
        return (
            f"Investigated with **{run_as}**'s access (they said `alerts on` here): everyone in this "
            "channel sees what they can see."
        )
    return f"Investigated with the access of **{run_as}** (this alert route's identity)."


def _header(cluster: str, new: int, ctx: int, hidden: int) -> str:
    head = f"### 🔔 Alerts on {_where(cluster)}: {new} new"
    extra = []
    if ctx:
        extra.append(f"{ctx} still firing and already investigated (in cooldown)")
    if hidden:
        extra.append(f"{hidden} outside the investigating identity's access, not shown")
    return head + (f" ({'; '.join(extra)})" if extra else "")


def answer(
    cluster: str,
    investigated: Sequence[AlertRef],
    over_limit: Sequence[AlertRef],
    ctx: Sequence[AlertRef],
    hidden: int,
    result: InvestigationResult,
    *,
    run_as: str,
    marked_by: str,
) -> str:
    """One message for one batch: the cluster, the alerts, the root cause, the evidence."""
    parts = [
        _header(cluster, len(investigated) + len(over_limit), len(ctx), hidden),
        "",
        listing(investigated),
    ]
    if over_limit:
        parts += [
            "",
            f"Not in this investigation (over `max_per_window`, {len(over_limit)}):",
            listing(over_limit),
        ]
    if ctx:
        parts += [
            "",
            "Also still firing (investigated earlier, not diagnosed again):",
            listing(ctx, limit=10),
        ]
    parts += ["", access_note(run_as, marked_by), ""]
    rc = result.root_cause
    told = result.answer_markdown
    if rc is not None and rc.family not in told:
        parts.append(
            f"**Root cause** ({rc.confidence} confidence): `{rc.family}` — {rc.resource}. {rc.summary}".strip()
        )
    elif rc is None and result.status != "diagnosed" and not told:
        parts.append(f"**Outcome:** {result.status.replace('_', ' ')}")
    if result.evidence and not any(e.id in result.answer_markdown for e in result.evidence):
        parts += ["", "**Evidence**"]
        parts += [f"- {e.id} `{e.command}` — {e.summary}" for e in result.evidence]
    if result.answer_markdown:
        parts += ["", result.answer_markdown.strip()]
    return "\n".join(parts).strip() + "\n"


def outside_access(
    cluster: str, hidden: int, ctx: int, *, run_as: str, marked_by: str, unknown_cluster: bool = False
) -> str:
    """Every new alert concerns something the identity cannot read: say so without naming it."""
    who = f"**{run_as}**" + (" (who said `alerts on` here)" if marked_by else " (this route's identity)")
    return (
        f"{_header(cluster, hidden, ctx, 0)}\n\n"
        f"{'This alert is' if hidden == 1 else f'These {hidden} alerts are'} about namespaces or objects "
        f"outside {who}'s access, so Sleuth did not investigate and does not show "
        f"{'it' if hidden == 1 else 'them'} here. Someone with access to them can say `alerts on` in "
        "this channel, or route them to a channel of the team that owns them.\n"
        + (
            f"\nSleuth has no cluster named {cluster} in its configuration (`clusters`).\n"
            if unknown_cluster
            else ""
        )
    )


def no_identity(cluster: str, alerts: Sequence[AlertRef]) -> str:
    return (
        f"{_header(cluster, len(alerts), 0, 0)}\n\n{listing(alerts)}\n\n"
        "Not investigated: nobody said `alerts on` in this channel and its alert route names no "
        "identity to investigate as.\n"
    )


def not_finished(cluster: str, alerts: Sequence[AlertRef], reason: str) -> str:
    return (
        f"{_header(cluster, len(alerts), 0, 0)}\n\n{listing(alerts)}\n\n"
        f"The investigation did not finish: {reason}. The alerts are listed above; they will be "
        "investigated again after their cooldown if they keep firing.\n"
    )
