"""Log lines → patterns: error and warning lines that differ only in timestamps, ids, UUIDs, hex,
IPs and numbers are one pattern, counted with the pods that printed it and when (pure functions)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from sleuth_common.k8s import format_time, split_log_timestamp

__all__ = ["PatternTable", "is_problem_line", "line_level", "normalize"]

_LEVEL = [
    (
        "error",
        re.compile(
            r"\b(error|err|fatal|panic|exception|traceback|critical|crit|failed|failure|refused|denied|forbidden|"
            r"unable to|cannot|can't|could not|couldn't|no such host|timed? ?out|timeout|killed|out of memory|"
            r"oom|no space left|unreachable|exited|unexpected|not found|invalid|expired|segfault)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "warning",
        re.compile(r"\b(warn|warning|retry(ing)?|deprecated|slow|throttl\w*|backoff)\b", re.IGNORECASE),
    ),
]
_JSON_LEVEL = re.compile(r'"(?:level|severity|lvl)"\s*:\s*"(\w+)"', re.IGNORECASE)
_INFO_LEVELS = {"info", "debug", "trace", "notice"}
_SUBS = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<ts>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.I), "<hex>"),
    (re.compile(r"(?<=[-_])[a-z0-9]{5}\b(?=[^-]|$)"), "<id>"),
    (re.compile(r"\b\d+(?:\.\d+)?(?:ms|s|m|h|Mi|Gi|Ki|MB|GB|KB|B|%)?\b"), "<n>"),
]


def line_level(message: str) -> str:
    """``error``, ``warning`` or "" (an ordinary line)."""
    m = _JSON_LEVEL.search(message)
    if m:
        level = m.group(1).lower()
        if level in _INFO_LEVELS:
            return ""
        return "warning" if level.startswith("warn") else "error"
    for name, rx in _LEVEL:
        if rx.search(message):
            return name
    return ""


def is_problem_line(message: str) -> bool:
    return bool(line_level(message))


def normalize(message: str) -> str:
    """The pattern of a line: variable parts replaced by placeholders, spaces collapsed."""
    out = message.strip()
    for rx, repl in _SUBS:
        out = rx.sub(repl, out)
    return " ".join(out.split())[:300]


@dataclass
class _Pattern:
    pattern: str
    level: str
    example: str
    count: int = 0
    pods: set[str] = field(default_factory=set)
    first: datetime | None = None
    last: datetime | None = None
    previous: bool = False


@dataclass
class PatternTable:
    """Accumulates lines from many pods; ``rows(reference)`` gives the patterns, most frequent first."""

    patterns: dict[str, _Pattern] = field(default_factory=dict)

    def add(self, pod: str, line: str, previous: bool = False) -> None:
        ts, message = split_log_timestamp(line)
        level = line_level(message)
        if not level:
            return
        key = normalize(message)
        if not key:
            return
        p = self.patterns.get(key)
        if p is None:
            p = self.patterns[key] = _Pattern(key, level, message.strip()[:300])
        p.count += 1
        p.pods.add(pod)
        p.previous = p.previous or previous
        if ts is not None:
            p.first = ts if p.first is None or ts < p.first else p.first
            p.last = ts if p.last is None or ts > p.last else p.last

    def rows(self, reference: datetime | None, limit: int = 30) -> list[dict[str, object]]:
        ordered = sorted(self.patterns.values(), key=lambda p: (p.level != "error", -p.count, p.pattern))
        out: list[dict[str, object]] = []
        for p in ordered[:limit]:
            row: dict[str, object] = {
                "pattern": p.pattern,
                "level": p.level,
                "count": p.count,
                "pods": sorted(p.pods),
                "example": p.example,
                "first_seen": _iso(p.first),
                "last_seen": _iso(p.last),
                "in_previous_instance": p.previous,
            }
            if reference is not None and p.first is not None:
                row["first_seen_offset_seconds"] = round((p.first - reference).total_seconds(), 1)
            out.append(row)
        return out


def _iso(ts: datetime | None) -> str | None:
    return format_time(ts) if ts else None
