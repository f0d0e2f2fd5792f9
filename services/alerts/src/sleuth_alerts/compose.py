"""The messages the bot posts in an alert channel (Markdown).

Every string an alert carries (labels, annotations) goes through ``text.plain``: one line of
escaped text, never Markdown structure. Only the bot's own words and the agent's answer are
Markdown.
"""

from __future__ import annotations

from collections.abc import Sequence

from sleuth_alerts.text import plain
from sleuth_alerts.triage import UNKNOWN_CLUSTER
from sleuth_common.messages import AlertRef, InvestigationResult

__all__ = [
    "access_note",
    "answer",
    "left_out",
    "listing",
    "no_identity",
    "no_readers",
    "not_finished",
    "nothing_stored",
    "outside_access",
    "unknown_clusters",
]

_MAX_LISTED = 50
_NAME = 120  # characters of a label value shown
_SUMMARY = 200  # characters of a summary or description shown


def _where(cluster: str) -> str:
    if cluster == UNKNOWN_CLUSTER:
        return "clusters Sleuth does not know"
    return f"cluster **{plain(cluster, _NAME)}**" if cluster else "alerts without a cluster label"


def _line(alert: AlertRef) -> str:
    labels = alert.labels
    parts = [f"**{plain(labels.get('alertname', 'alert'), _NAME)}**"]
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
            parts.append(f"{key} {plain(labels[key], _NAME)}")
            break
    if labels.get("namespace"):
        parts.append(f"in {plain(labels['namespace'], _NAME)}")
    if labels.get("severity"):
        parts.append(f"({plain(labels['severity'], 40)})")
    summary = plain(alert.annotations.get("summary") or alert.annotations.get("description") or "", _SUMMARY)
    text = " ".join(parts)
    if summary:
        text += f" — {summary}"
    return f"- {text}"


def listing(alerts: Sequence[AlertRef], *, limit: int = _MAX_LISTED) -> str:
    lines = [_line(a) for a in alerts[:limit]]
    if len(alerts) > limit:
        lines.append(f"- … and {len(alerts) - limit} more")
    return "\n".join(lines)


def access_note(run_as: str, marked_by: str) -> str:
    if marked_by:
        return (
            f"Investigated as **{plain(run_as, _NAME)}** (they said `alerts on` here), showing only what "
            "every member of this channel may read."
        )
    return (f"Investigated as **{plain(run_as, _NAME)}** (this alert route's identity), showing only what "
            "every member of this channel may read.")


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


def outside_access(cluster: str, hidden: int, ctx: int, *, run_as: str, marked_by: str) -> str:
    """Every new alert concerns something the identity cannot read: say so without naming it."""
    who = f"**{plain(run_as, _NAME)}**" + (
        " (who said `alerts on` here)" if marked_by else " (this route's identity)"
    )
    return (
        f"{_header(cluster, hidden, ctx, 0)}\n\n"
        f"{'This alert is' if hidden == 1 else f'These {hidden} alerts are'} about namespaces or objects "
        f"outside {who}'s access, so Sleuth did not investigate and does not show "
        f"{'it' if hidden == 1 else 'them'} here. Someone with access to them can say `alerts on` in "
        "this channel, or route them to a channel of the team that owns them.\n"
    )


def unknown_clusters(alerts: Sequence[AlertRef], ctx: int, values: Sequence[str], *, more: int = 0) -> str:
    """Alerts whose cluster label names no configured cluster: counted, not investigated, not
    listed (nobody's access can be checked on a cluster Sleuth does not know)."""
    n = len(alerts)
    named = ", ".join(plain(v, 60) for v in values)
    if more:
        named += f" and {more} more"
    return (
        f"{_header(UNKNOWN_CLUSTER, n, ctx, 0)}\n\n"
        f"{'1 alert names' if n == 1 else f'{n} alerts name'} a cluster that is not in Sleuth's "
        f"configuration ({named}), so Sleuth did not investigate or show "
        f"{'it' if n == 1 else 'them'}. If it is one of your clusters, add it or the label's value "
        "as an alias to `clusters`.\n"
    )


def nothing_stored(cluster: str, ctx: int) -> str:
    """A window that received only alerts over the limits (see ``left_out``)."""
    return f"{_header(cluster, 0, ctx, 0)}\n\nNo alert of this window was stored.\n"


def left_out(over_request: int, over_window: int, *, per_request: int, per_window: int) -> str:
    """What the limits kept out of a window ("" when nothing was)."""

    def some(n: int) -> str:
        return "1 more alert was" if n == 1 else f"{n} more alerts were"

    lines = []
    if over_request:
        lines.append(
            f"⚠️ {some(over_request)} left out: their notification carried more than "
            f"`max_alerts_per_request` ({per_request}) alerts."
        )
    if over_window:
        lines.append(
            f"⚠️ {some(over_window)} left out: this window already held `max_stored_per_window` "
            f"({per_window}) alerts."
        )
    return "\n".join(lines)


def no_identity(cluster: str, alerts: Sequence[AlertRef]) -> str:
    return (
        f"{_header(cluster, len(alerts), 0, 0)}\n\n{listing(alerts)}\n\n"
        "Not investigated: nobody said `alerts on` in this channel and its alert route names no "
        "identity to investigate as.\n"
    )


def no_readers(cluster: str, alerts: Sequence[AlertRef], *, marked: bool) -> str:
    """A chat whose members only the gateway knows, and it has not said who they are: an
    investigation could not be fitted to everyone reading, so there is none."""
    then = (
        "say `alerts status` here (or `alerts on` again) so Sleuth learns who is in the channel now"
        if marked
        else "someone in this channel can say `alerts on`: Sleuth then learns who is in the channel and "
        "investigates with their access, showing only what all of you may read"
    )
    return (
        f"{_header(cluster, len(alerts), 0, 0)}\n\n{listing(alerts)}\n\n"
        "Not investigated: Sleuth does not know who reads this channel, and an investigation's "
        f"answer must fit every reader. To change that, {then}.\n"
    )


def not_finished(cluster: str, alerts: Sequence[AlertRef], reason: str) -> str:
    return (
        f"{_header(cluster, len(alerts), 0, 0)}\n\n{listing(alerts)}\n\n"
        f"The investigation did not finish: {reason}. The alerts are listed above; they will be "
        "investigated again after their cooldown if they keep firing.\n"
    )
