"""The words after ``schedule``: when to ask, then what.

    every <interval> [at <time>] [in <IANA zone>] [starting at <time>] <question>
    cron "<minute hour day-of-month month day-of-week>" [in <IANA zone>] <question>
    report every … | report cron "…"    (the same timing, no question: a best-practice report)

A ``report`` schedule asks the reporter for a best-practice report of its channel (or private
conversation) at each run instead of asking the agent a question; nothing may follow its timing.

``<interval>`` is elapsed time — ``5 minutes``, ``5m``, ``2h``, ``90 minutes``, ``hour`` — or a
calendar day — ``day``, ``weekday`` (Monday to Friday), ``weekend``, ``monday`` … ``sunday``
(``mon``, ``tue`` …; a plural is fine). ``<time>`` is ``09:00``, ``9:30``, ``9am``, ``9:30 pm``,
``noon`` or ``midnight``. The zone clause and ``starting at`` may come in either order.

- A calendar day runs at its ``at`` time (or its ``starting at`` time), else at 09:00, in the
  schedule's zone; it becomes a cron expression (``every weekday at 09:00`` = ``0 9 * * 1-5``),
  so both forms share one calendar (``timing``).
- Elapsed time runs every N seconds of real time from its first run: the next ``starting at``
  time (local, in the zone), else one interval after the minute the schedule was made. Its runs
  do not follow the clock across a DST change; say ``every day at …`` or ``cron`` for that.
- ``in <zone>`` is taken as a zone when it names one (``Europe/Berlin``, ``UTC``) or looks like one
  (has a ``/``): ``in Europe/Berln`` is an error naming the zone, while ``in team-a`` is part of
  the question. Without it the zone is the asker's (``ScheduleRequest.tz``) or ``default_tz``.

Daylight saving time, for calendar days and cron alike (the ``cronsim`` library, which follows
Debian's cron): a local time that does not exist on the spring-forward day (02:30 in
Europe/Berlin) runs **once, at the first valid instant after it** (03:00); a local time that
happens twice on the fall-back day runs **once**, at its first occurrence. A cron expression
with a wildcard hour (``30 * * * *``) runs every real hour, both 02:30s included.

An interval shorter than ``scheduler.min_interval`` is refused (for cron: the shortest gap
between its next runs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cronsim import CronSim, CronSimError

from sleuth_scheduler.timing import Timing, local_instant, min_gap, next_runs

__all__ = ["EXAMPLE", "GRAMMAR", "REPORT_QUESTION", "GrammarError", "Parsed", "parse", "zone"]

GRAMMAR = (
    "`schedule every <interval> [at <time>] [in <zone>] [starting at <time>] <question>` or "
    '`schedule cron "<minute hour day month weekday>" [in <zone>] <question>`; an interval is '
    "`5 minutes`, `2h`, `day`, `weekday`, `monday` …, a time `09:00` or `9am`, a zone an IANA name "
    "such as `Europe/Berlin`; `schedule report every monday at 09:00` (or `report cron \"…\"`) "
    "schedules a best-practice report instead of a question"
)
EXAMPLE = "`schedule every weekday at 09:00 in Europe/Berlin what is failing in team-a?`"

DEFAULT_TIME = (9, 0)
"""When a calendar day runs without ``at``: 09:00 in the schedule's zone."""

REPORT_QUESTION = "📋 best-practice report"
"""What a report schedule shows where a question schedule shows its question."""

_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
}
_DAYS = {"sunday": 0, "sun": 0, "monday": 1, "mon": 1, "tuesday": 2, "tue": 2, "tues": 2,
         "wednesday": 3, "wed": 3, "thursday": 4, "thu": 4, "thur": 4, "thurs": 4,
         "friday": 5, "fri": 5, "saturday": 6, "sat": 6}
_DAY_NAMES = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

_QUOTES = "\"'`“”‘’"
_TIME = r"(?:noon|midnight|\d{1,2}(?::\d{2})?(?:\s*(?:am|pm|a\.m\.|p\.m\.))?)"
_END = r"(?=[\s,:;.!?]|$)"
_RE_INTERVAL = re.compile(rf"(?:(?P<n>\d+)\s*(?P<unit>[a-z]+)|(?:an?\s+)?(?P<word>[a-z]+)){_END}", re.I)
_RE_AT = re.compile(rf"at\s+(?P<time>{_TIME}){_END}", re.I)
_RE_STARTING = re.compile(rf"(?:starting|from)(?:\s+at)?\s+(?P<time>{_TIME}){_END}", re.I)
_RE_IN = re.compile(rf"in\s+(?P<zone>[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*){_END}")
_RE_CRON = re.compile(rf"cron\s+[{_QUOTES}](?P<expr>[^{_QUOTES}]*)[{_QUOTES}]", re.I)


class GrammarError(ValueError):
    """A schedule that cannot be understood or is not allowed; the message is for the chat."""


@dataclass(frozen=True)
class Parsed:
    timing: Timing
    question: str
    what: Literal["question", "report"] = "question"


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; :class:`GrammarError` naming it when there is none."""
    try:
        if name and not name.startswith(("/", ".")) and ".." not in name:
            return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        pass
    raise GrammarError(f"I do not know the time zone `{name}`: give an IANA name such as `Europe/Berlin`, "
                       "`America/New_York` or `UTC`.")


def _refuse(why: str) -> GrammarError:
    return GrammarError(f"I could not read that schedule: {why}.\n\nSay {GRAMMAR}.\n\nFor example: {EXAMPLE}")


def _clock(text: str) -> tuple[int, int]:
    """``09:00``, ``9am``, ``9:30 pm``, ``noon``, ``midnight`` → (hour, minute)."""
    t = text.lower().replace(".", "").replace(" ", "")
    if t == "noon":
        return 12, 0
    if t == "midnight":
        return 0, 0
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(am|pm)?", t)
    if m is None:
        raise _refuse(f"`{text}` is not a time")
    hour, minute, half = int(m.group(1)), int(m.group(2) or 0), m.group(3)
    if half:
        if not 1 <= hour <= 12:
            raise _refuse(f"`{text}` is not a time")
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        raise _refuse(f"`{text}` is not a time")
    return hour, minute


def _looks_like_zone(name: str) -> bool:
    return "/" in name or name in _ZONE_WORDS or name.upper() in ("UTC", "GMT")


_ZONE_WORDS = frozenset(z for z in available_timezones() if "/" not in z) | {"UTC", "GMT"}


def _question(rest: str, max_chars: int) -> str:
    """The question after the timing; for a report (``max_chars`` < 0) nothing may follow it."""
    if max_chars < 0:
        extra = rest.strip().strip(".!")
        if extra:
            raise _refuse(f"a scheduled report takes no question, and `{extra[:60]}` follows its timing")
        return REPORT_QUESTION
    q = rest.strip().lstrip(":,;–—-").strip()
    if len(q) >= 2 and q[0] in _QUOTES and q[-1] in _QUOTES:
        q = q[1:-1].strip()
    if not q:
        raise _refuse("it has no question after the timing")
    if len(q) > max_chars:
        raise GrammarError(f"That question is longer than {max_chars} characters; shorten it.")
    return q


def _duration(seconds: int) -> str:
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds % size == 0 and seconds >= size:
            n = seconds // size
            return f"{unit}" if n == 1 else f"{n} {unit}s"
    return f"{seconds} seconds"


def _clauses(rest: str, *, calendar: bool) -> tuple[str, tuple[int, int] | None, str, tuple[int, int] | None]:
    """Take ``at``, ``in <zone>`` and ``starting at`` off the front of ``rest`` (each once, any
    order): (rest, at, zone, starting)."""
    at: tuple[int, int] | None = None
    starting: tuple[int, int] | None = None
    tz = ""
    while True:
        rest = rest.lstrip()
        if (m := _RE_STARTING.match(rest)) and starting is None:
            starting = _clock(m.group("time"))
        elif (m := _RE_AT.match(rest)) and at is None:
            if not calendar:
                raise _refuse("`at` goes with a day (`every day at 09:00`); an interval takes `starting at`")
            at = _clock(m.group("time"))
        elif (m := _RE_IN.match(rest)) and not tz and _looks_like_zone(m.group("zone")):
            tz = m.group("zone")
            tz = tz.upper() if tz.upper() in ("UTC", "GMT") else tz
            zone(tz)
        else:
            return rest, at, tz, starting
        rest = rest[m.end():]


def parse(text: str, *, now: float, default_tz: str = "UTC", min_interval: float = 300.0,
          max_question_chars: int = 500) -> Parsed:
    """Read ``text`` (what follows ``schedule``) said at ``now`` (unix seconds)."""
    text = text.strip()
    if max_question_chars >= 0 and (m := re.match(r"report(?=\s|$)", text, re.I)):
        rest = text[m.end():].strip()
        if not rest:
            raise _refuse("`report` needs a timing: `schedule report every monday at 09:00`")
        parsed = parse(rest, now=now, default_tz=default_tz, min_interval=min_interval, max_question_chars=-1)
        return Parsed(parsed.timing, REPORT_QUESTION, "report")
    if m := _RE_CRON.match(text):
        return _parse_cron(m.group("expr"), text[m.end():], default_tz, now, min_interval, max_question_chars)
    if text.lower().startswith("cron"):
        raise _refuse('the cron expression goes in quotes: `cron "0 9 * * 1-5"`')
    if not re.match(r"every\s", text, re.I):
        raise _refuse("it does not start with `every` or `cron`")
    rest = text[5:].lstrip()
    m = _RE_INTERVAL.match(rest)
    if m is None:
        raise _refuse("`every` needs an interval")
    rest = rest[m.end():]
    n = m.group("n")
    unit = (m.group("unit") if n else m.group("word")).lower()
    count = int(n) if n else 1
    if unit in _UNITS:
        return _parse_interval(count * _UNITS[unit], rest, default_tz, now, min_interval, max_question_chars)
    if unit in ("d", "day", "days"):
        if count != 1:
            raise _refuse(f'`every {count} days` is not a calendar I keep; say `every day` or use `cron "…"`')
        return _parse_calendar("*", "day", rest, default_tz, now, min_interval, max_question_chars)
    if n:
        raise _refuse(f"`{m.group(0).strip()}` is not an interval")
    word = unit
    if word in ("weekday", "weekdays"):
        return _parse_calendar("1-5", "weekday", rest, default_tz, now, min_interval, max_question_chars)
    if word in ("weekend", "weekends"):
        return _parse_calendar("0,6", "weekend day", rest, default_tz, now, min_interval, max_question_chars)
    day = word[:-1] if word.endswith("s") and word[:-1] in _DAYS else word
    if day in _DAYS:
        dow = _DAYS[day]
        return _parse_calendar(str(dow), _DAY_NAMES[dow], rest, default_tz, now, min_interval, max_question_chars)
    raise _refuse(f"`{word}` is not an interval")


def _check_gap(timing: Timing, now: float, min_interval: float, said: str) -> None:
    gap = min_gap(timing, now)
    if gap is None:
        raise _refuse(f"{said} never runs")
    if gap < min_interval:
        raise GrammarError(
            f"{said} runs every {_duration(int(gap))}: the shortest interval allowed here is "
            f"{_duration(int(min_interval))}."
        )


def _parse_interval(every: int, rest: str, default_tz: str, now: float, min_interval: float,
                    max_chars: int) -> Parsed:
    rest, _, tz, starting = _clauses(rest, calendar=False)
    tz = tz or default_tz
    zone(tz)
    if every < min_interval:
        raise GrammarError(
            f"Every {_duration(every)} is too often: the shortest interval allowed here is "
            f"{_duration(int(min_interval))}."
        )
    if starting is not None:
        anchor = _next_local(now, starting, tz)
        said = f"every {_duration(every)} starting at {starting[0]:02d}:{starting[1]:02d}"
    else:
        anchor = math.ceil(now / 60) * 60 + every
        said = f"every {_duration(every)}"
    timing = Timing(kind="interval", every=every, anchor=anchor, tz=tz, text=said)
    return Parsed(timing, _question(rest, max_chars))


def _parse_calendar(dow: str, name: str, rest: str, default_tz: str, now: float, min_interval: float,
                    max_chars: int) -> Parsed:
    rest, at, tz, starting = _clauses(rest, calendar=True)
    if at is not None and starting is not None:
        raise _refuse("give either `at` or `starting at`, not both")
    hour, minute = at or starting or DEFAULT_TIME
    tz = tz or default_tz
    zone(tz)
    timing = Timing(kind="cron", cron=f"{minute} {hour} * * {dow}", tz=tz,
                    text=f"every {name} at {hour:02d}:{minute:02d}")
    _check_gap(timing, now, min_interval, f"Every {name}")
    return Parsed(timing, _question(rest, max_chars))


def _parse_cron(expr: str, rest: str, default_tz: str, now: float, min_interval: float,
                max_chars: int) -> Parsed:
    fields = expr.split()
    if len(fields) != 5:
        raise _refuse(f"`{expr}` has {len(fields)} fields; a cron expression has 5 "
                      "(minute hour day-of-month month day-of-week)")
    expr = " ".join(fields)
    try:
        CronSim(expr, datetime.now(UTC))
    except CronSimError as e:
        raise _refuse(f"`{expr}` is not a cron expression ({e})") from e
    rest, _, tz, starting = _clauses(rest, calendar=False)
    if starting is not None:
        raise _refuse("a cron expression says when it starts; drop `starting at`")
    tz = tz or default_tz
    zone(tz)
    timing = Timing(kind="cron", cron=expr, tz=tz, text=f'cron "{expr}"')
    _check_gap(timing, now, min_interval, f"`{expr}`")
    return Parsed(timing, _question(rest, max_chars))


def _next_local(now: float, hm: tuple[int, int], tz: str) -> int:
    """The first instant after ``now`` at local time ``hm`` in ``tz`` (a time the spring-forward
    day skips: the first valid instant after it)."""
    day = datetime.fromtimestamp(now, zone(tz)).date()
    for offset in range(3):
        t = local_instant(day + timedelta(days=offset), hm[0], hm[1], tz)
        if t > now:
            return t
    raise AssertionError("unreachable: a local time recurs within three days")


def upcoming(timing: Timing, now: float, n: int = 3) -> list[str]:
    """The next ``n`` runs as ISO 8601 with the zone's offset."""
    tz = zone(timing.tz)
    return [datetime.fromtimestamp(t, tz).isoformat() for t in next_runs(timing, now, n)]
