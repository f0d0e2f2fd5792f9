"""Server-Sent Events as the gateway streams an answer (``POST /v1/query?stream=1``), for tests."""

from __future__ import annotations

import json
from typing import Any

Event = tuple[str, dict[str, Any]]


def take_events(buf: str) -> tuple[list[Event], str]:
    """The complete events at the start of ``buf`` as (event name, JSON data), and what is left
    (an event not yet complete)."""
    events: list[Event] = []
    while "\n\n" in buf:
        raw, buf = buf.split("\n\n", 1)
        name, data = "message", ""
        for line in raw.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
        if data:
            events.append((name, json.loads(data)))
    return events, buf
