"""Whole-message chat commands. A message that merely mentions a command word is a question.

Parsing ignores case, punctuation and politeness ("Help!", "refresh please", "@sleuth help").
Known: ``help``, ``refresh`` and ``alerts on|off|status`` (in a channel). Later: ``access``,
``schedule …``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["HELP_TEXT", "Command", "parse_command"]

_POLITE = {"please", "pls", "plz", "thanks", "thank", "you", "thx", "hi", "hello", "hey", "sleuth", "kindly"}
_COMMANDS = {"help", "refresh"}

HELP_TEXT = """\
**Sleuth** investigates your Kubernetes clusters read-only and answers with evidence.

Ask a question in plain words, for example:

- `what is failing in team-a?`
- `why is the api deployment in team-a crashing?`

Commands (the whole message):

- `help` — this text
- `refresh` — re-check your access now (after your permissions changed)
- `alerts on` / `alerts off` / `alerts status` — in a channel: investigate the alerts posted there
  with your access (everyone in the channel then sees what you can see), stop that, or show who does

You only ever see what your own Kubernetes credentials let you read.
"""


@dataclass(frozen=True)
class Command:
    name: str
    arg: str = ""


def parse_command(text: str) -> Command | None:
    """``Command`` when the whole message is a command, else ``None`` (a question)."""
    words = re.sub(r"[^\w\s-]", " ", text.lower().replace("@", " ")).split()
    words = [w.strip("-_") for w in words]
    words = [w for w in words if w and w not in _POLITE]
    if len(words) == 1 and words[0] in _COMMANDS:
        return Command(words[0])
    if len(words) == 2 and words[0] == "alerts" and words[1] in {"on", "off", "status"}:
        return Command("alerts", words[1])
    return None
