"""The "seen before" section of an answer: a few lines, after the runbook line if any.

```
**Seen before** (in your scope):
- 2026-12-01 14:02 UTC (3 d ago) — the same failure of `Deployment/team-a/api`: Container api … OOMKilled …
  Fixed by: raised the limit to 1Gi.
```
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

from sleuth_agent.incidents._index import SeenBefore

__all__ = ["seen_before_section"]

_SUMMARY_CHARS = 200
_WHY = {3: "the same failure of", 2: "another failure of", 1: "similar evidence:"}


def _ago(seconds: float) -> str:
    if seconds < 3600:
        return f"{max(1, int(seconds // 60))} min ago"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    text = text[: end + 1] if 0 < end < _SUMMARY_CHARS else text
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def plain_span(text: str, limit: int = 300) -> str:
    """A person's free text as one inline code span: no Markdown, link, image, heading or mention
    of it renders (in the web chat or Mattermost), whatever it holds."""
    flat = " ".join(text.replace("`", "'").split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return f"`{flat}`" if flat else ""


def seen_before_section(hits: Sequence[SeenBefore], *, now: float | None = None) -> str:
    """Markdown for ``hits`` ("" for none)."""
    if not hits:
        return ""
    now = time.time() if now is None else now
    lines = ["**Seen before** (in your scope):"]
    for hit in hits:
        i = hit.incident
        when = datetime.fromtimestamp(i.at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        what = f"{_WHY[hit.rank]} `{i.resource}` ({i.family})" if hit.rank > 1 else f"{_WHY[1]} `{i.family}` on `{i.resource}`"
        line = f"- {when} ({_ago(now - i.at)}) — {what}: {_first_sentence(i.summary)}"
        if i.fixed_by:
            line += f"\n  Fixed by: {plain_span(i.fixed_by)}"
        elif i.verdict == "down":
            line += "\n  That answer was marked wrong."
        lines.append(line)
    return "\n".join(lines)
