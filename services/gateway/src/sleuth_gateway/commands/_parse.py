"""``parse_command``: whole-message chat commands (DESIGN §5).

A message is a command only when, once case, punctuation, mentions and politeness are set aside,
nothing but the command is left: "Help!", "refresh please", "@sleuth diagnostics", "Access?".
A message that merely mentions a command word ("can you help me understand why api restarts?",
"what does refresh do?", "help refresh") is a question.

Schedules and reports (when those services run): ``schedule every …`` / ``schedule cron "…" …``
(the rest, as typed, is the scheduler's to parse: timing, then the question), ``schedules``,
``run <id>``, ``unschedule <id>``, ``pause <id>``, ``resume <id>`` (an id as the scheduler makes
them: 10 letters and digits), ``report``. "What is the schedule of the backup job?" and "run the
migration?" stay questions.

Runbooks: ``kb list``, ``kb show <id>``, ``kb rm <id>``, and ``kb add <id>`` with the runbook (front
matter and body) on the lines after it, kept exactly as typed. "kb add" alone, or an id that is not
one, is the command with its usage (``arg`` = ``usage``), never a question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ALERT_OPS", "COMMANDS", "KB_OPS", "POLITE", "SCHEDULE_OPS", "Command", "parse_command"]

POLITE = frozenset(
    {"please", "pls", "plz", "thanks", "thank", "you", "thx", "hi", "hello", "hey", "sleuth", "kindly"}
)
"""Words that never change what a message asks for."""
COMMANDS = frozenset({"help", "refresh", "access", "diagnostics", "schedules", "report"})
"""One-word commands."""
SCHEDULE_OPS = {"run": "run", "unschedule": "delete", "pause": "pause", "resume": "resume"}
"""``<word> <id>`` → the scheduler's op."""
_SCHEDULE = re.compile(r"^\W*(?:@[\w.\-]+[\s,:]*)?(?:please\s+)?schedule\s+((?:every|cron|report)\b.*)$", re.I | re.S)
_ID = re.compile(r"[a-z2-9]{10}")
ALERT_OPS = frozenset({"on", "off", "status"})
"""``alerts <op>``."""
KB_OPS = {"add": "add", "show": "show", "list": "list", "ls": "list", "rm": "rm", "remove": "rm", "delete": "rm"}
"""``kb <word>`` → the op."""
_KB = re.compile(r"^\W*(?:@[\w.\-]+[\s,:]*)?(?:please\s+)?kb\s+(\w+)\b[ \t]*([^\n]*)(?:\n(.*))?$", re.I | re.S)
_KB_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


@dataclass(frozen=True)
class Command:
    name: str
    """``help``, ``refresh``, ``access``, ``diagnostics`` or ``alerts``."""
    arg: str = ""
    """``on``, ``off`` or ``status`` for ``alerts``; the schedule id for ``run``, ``delete``,
    ``pause``, ``resume``; for ``schedule``, the rest of the message as typed; for ``kb``, the op
    (``add``, ``show``, ``list``, ``rm``, or ``usage``); empty otherwise."""
    target: str = ""
    """``kb``: the runbook id."""
    text: str = ""
    """``kb add``: the runbook as typed (the lines after the command's)."""


def _words(text: str) -> list[str]:
    words = re.sub(r"[^\w\s-]", " ", text.lower().replace("@", " ")).split()
    stripped = (w.strip("-_") for w in words)
    return [w for w in stripped if w and w not in POLITE]


def parse_command(text: str) -> Command | None:
    """``Command`` when the whole message is a command, else ``None`` (a question)."""
    scheduled = _SCHEDULE.match(text.strip())
    if scheduled:
        return Command("schedule", scheduled.group(1).strip())
    kb = _KB.match(text.strip("\n "))
    if kb:
        return _kb(kb.group(1).lower(), kb.group(2).split(), kb.group(3) or "")
    words = _words(text)
    if words == ["kb"]:
        return Command("kb", "usage")
    if len(words) == 1 and words[0] in COMMANDS:
        return Command(words[0])
    if len(words) == 2 and words[0] == "alerts" and words[1] in ALERT_OPS:
        return Command("alerts", words[1])
    if len(words) == 2 and words[0] in SCHEDULE_OPS and _ID.fullmatch(words[1]):
        return Command(SCHEDULE_OPS[words[0]], words[1])
    if words == ["report", "now"]:
        return Command("report")
    return None


def _kb(word: str, words: list[str], body: str) -> Command:
    op = KB_OPS.get(word)
    rest = [w for w in (w.strip("?!.,;:") for w in words) if w and w.lower() not in POLITE]
    if op == "list" and not rest and not body.strip():
        return Command("kb", "list")
    if op in ("show", "rm") and len(rest) == 1 and _KB_ID.fullmatch(rest[0]) and not body.strip():
        return Command("kb", op, rest[0])
    if op == "add" and len(rest) == 1 and _KB_ID.fullmatch(rest[0]) and body.strip():
        return Command("kb", "add", rest[0], body)
    return Command("kb", "usage")
