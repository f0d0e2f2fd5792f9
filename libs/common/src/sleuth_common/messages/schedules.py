"""Saved recurring questions (``sleuth.schedules.<op>``, request/reply, gateway → scheduler; DESIGN §1).

The gateway parses the chat commands (``schedule …``, ``schedules``, ``run <id>``,
``unschedule <id>``, ``pause <id>``, ``resume <id>``), authenticates the person and sends one
``ScheduleRequest``; the scheduler answers with a ``ScheduleReply`` whose ``text`` is what the bot
says where the command was said. Answers of a schedule's runs arrive later as ``ChatPost``s
(``origin="schedule"``) on the CHAT stream.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from sleuth_common.messages.base import Message
from sleuth_common.messages.jobs import Requester

__all__ = [
    "CONVERSATION_PREFIX",
    "ScheduleInfo",
    "ScheduleOp",
    "ScheduleReply",
    "ScheduleRequest",
    "conversation_target",
    "conversation_user",
]

ScheduleOp = Literal["create", "list", "run", "delete", "pause", "resume"]

CONVERSATION_PREFIX = "conversation:"


def conversation_target(user: str) -> str:
    """The chat target of ``user``'s private conversation with Sleuth (web chat, API, MCP, or a
    chat without direct messages): only that person reads it."""
    return f"{CONVERSATION_PREFIX}{user}"


def conversation_user(target: str) -> str | None:
    """The person whose private conversation ``target`` is, or None for a channel."""
    return target[len(CONVERSATION_PREFIX):] if target.startswith(CONVERSATION_PREFIX) else None


class ScheduleRequest(Message):
    """One schedule command said by ``user`` in ``target``. The gateway authenticated the user
    (``user``/``groups`` are their Kubernetes identity) and checked they may post in ``target``."""

    kind: Literal["schedules.request"] = "schedules.request"
    schema_version: int = 1
    op: ScheduleOp
    user: str
    groups: tuple[str, ...] = ()
    target: str
    """Where the command was said and where a new schedule's answers go: ``web:<channel>``,
    ``mattermost:<channel_id>``, or ``conversation:<user>`` (the asker's private conversation:
    web chat, API, MCP, or a chat without direct messages)."""
    thread: str = ""
    """The thread answers are posted in (a Mattermost root post id); "" = none."""
    members: tuple[Requester, ...] = ()
    """Everyone who reads ``target``, as the gateway resolved them, the asker included. Empty for
    a private conversation (``conversation:<user>``: only the asker reads it). A ``create`` in any
    other target without them is refused: the answers must fit every reader. Any command in a
    channel that carries them also replaces the readers stored with all of that channel's
    schedules (someone joined or left): send them with every command."""
    text: str = ""
    """``create``: everything after the word ``schedule`` (the timing, then the question)."""
    id: str = ""
    """``run``, ``delete``, ``pause``, ``resume``: the schedule's id."""
    tz: str = ""
    """The asker's IANA time zone when the gateway knows it (a schedule without ``in <zone>``
    uses it); "" = the scheduler's ``default_tz``."""


class ScheduleInfo(BaseModel):
    """One schedule as ``list`` (and ``create``) shows it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    owner: str
    target: str
    thread: str = ""
    spec: str
    """The timing as the scheduler understood it (``every weekday at 09:00``, ``cron "0 9 * * 1-5"``)."""
    question: str
    tz: str
    next_runs: tuple[str, ...] = ()
    """The next three runs, ISO 8601 with the offset in the schedule's zone (none while paused
    or disabled)."""
    paused: bool = False
    failures: int = 0
    """Runs in a row that failed (no answer by the deadline, or an error or refusal)."""
    disabled_reason: str = ""
    """Why the scheduler stopped running it ("" = not disabled); ``resume`` starts it again."""


class ScheduleReply(Message):
    kind: Literal["schedules.reply"] = "schedules.reply"
    schema_version: int = 1
    ok: bool = True
    """False when nothing was done (a refusal, an error, an unknown id)."""
    text: str
    """Markdown for the chat, said where the command was said."""
    schedules: tuple[ScheduleInfo, ...] = ()
    """``create``: the new schedule; ``list``: those shown; the others: the one acted on."""
