"""What the bot says (Markdown): replies to the commands, and the posts of a schedule's runs.

A question is the owner's own words, said where its answers go; it is shown as one line of
plain text (``plain``), never as Markdown structure. Only the bot's words and the agent's answer
are Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from sleuth_common.messages import InvestigationResult, ScheduleInfo

__all__ = [
    "answer",
    "created",
    "disabled",
    "header",
    "listing",
    "no_answer",
    "plain",
    "report_failed",
    "when",
]

_MARKDOWN = re.compile(r"([\\`*_\[\]<>#|~])")


def plain(text: str, limit: int = 300) -> str:
    """One line of text with Markdown's special characters escaped, at most ``limit`` characters."""
    line = " ".join(text.split())
    if len(line) > limit:
        line = line[: limit - 1] + "…"
    return _MARKDOWN.sub(r"\\\1", line)


def when(iso: str) -> str:
    """``2026-03-30T09:00:00+02:00`` → ``Mon 30 Mar 09:00 (+02:00)``."""
    t = datetime.fromisoformat(iso)
    offset = t.strftime("%z")
    return f"{t.strftime('%a %d %b %H:%M')} ({offset[:3]}:{offset[3:]})"


def header(schedule_id: str, described: str, question: str) -> str:
    """``⏰ Schedule `abc123` (every weekday at 09:00 Europe/Berlin): what is failing in team-a?``"""
    return f"⏰ Schedule `{schedule_id}` ({plain(described, 120)}): {plain(question)}"


def created(info: ScheduleInfo, *, private: bool, members: int) -> str:
    runs = ", ".join(when(t) for t in info.next_runs) or "none (the calendar has no more runs)"
    fit = ("fitted to what you may read" if private else
           f"fitted to what every one of the {members} readers of this channel may read")
    return (
        f"⏰ Scheduled `{info.id}`: {plain(info.spec)} ({info.tz}) — “{plain(info.question)}”.\n\n"
        f"Next runs: {runs}. Answers are posted {'in your private conversation' if private else 'here'}, {fit}, with your access "
        f"as it is at each run. `run {info.id}` runs it now, `pause {info.id}` / `resume {info.id}` "
        f"stop and restart it, `unschedule {info.id}` deletes it."
    )


def _state(info: ScheduleInfo) -> str:
    if info.disabled_reason:
        return f"disabled: {plain(info.disabled_reason, 200)} (`resume {info.id}`)"
    if info.paused:
        return "paused"
    if info.next_runs:
        return f"next {when(info.next_runs[0])}"
    return "no more runs"


def listing(infos: Sequence[ScheduleInfo], *, private: bool) -> str:
    if not infos:
        where = "You have" if private else "This channel has"
        return (f"{where} no schedules. Say for example "
                "`schedule every weekday at 09:00 in Europe/Berlin what is failing in team-a?`.")
    title = "Your schedules" if private else "Schedules of this channel"
    lines = [f"**{title}** ({len(infos)}):", ""]
    for i in infos:
        where = "" if not private else (" — in your private conversation" if i.target.startswith("conversation:")
                                        else f" — posts to {plain(i.target, 80)}")
        owner = "" if private else f" — by **{plain(i.owner, 80)}**"
        failing = f", {i.failures} failed in a row" if i.failures and not i.disabled_reason else ""
        lines.append(f"- `{i.id}` {plain(i.spec)} ({i.tz}): “{plain(i.question, 120)}”{owner}{where} — "
                     f"{_state(i)}{failing}")
    return "\n".join(lines)


def answer(head: str, result: InvestigationResult) -> str:
    parts = [head, ""]
    rc = result.root_cause
    told = result.answer_markdown.strip()
    if rc is not None and rc.family not in told:
        parts.append(f"**Root cause** ({rc.confidence} confidence): `{rc.family}` — {rc.resource}. "
                     f"{rc.summary}".strip())
    elif not told:
        parts.append(f"**Outcome:** {result.status.replace('_', ' ')}")
    if told:
        parts += ["", told]
    return "\n".join(parts).strip() + "\n"


def no_answer(head: str, reason: str) -> str:
    return f"{head}\n\nThis run did not finish: {reason}. The next run is at its usual time.\n"


def report_failed(head: str, reason: str, said: str) -> str:
    """A report run the reporter refused (``said``: its words) or did not answer."""
    quoted = f" It said: “{plain(said, 400)}”" if said else ""
    return f"{head}\n\nNo report this time: {reason}.{quoted} The next run is at its usual time.\n"


def disabled(schedule_id: str, owner: str, failures: int, reason: str) -> str:
    return (
        f"⏸ @{owner}, I stopped your schedule `{schedule_id}`: its last {failures} runs failed "
        f"(the last one: {reason}). Nothing runs until you say `resume {schedule_id}`; "
        f"`unschedule {schedule_id}` deletes it."
    )
