"""When a schedule runs: its occurrences as unix seconds (the calendar is the ``cronsim`` library's,
in the schedule's IANA zone; DST behaviour as described in ``grammar``).

Every function here is pure: it takes the time it reasons about, never reads a clock.

- :func:`next_after` — the first occurrence strictly after an instant. Restarting from any
  instant between two occurrences gives the later one, so the scheduler can keep only "the next
  occurrence" in Redis and recompute from it after a restart.
- :func:`next_runs` — the next N occurrences, strictly increasing.
- :func:`catch_up` — after an outage: the newest occurrence that is due and how many older ones
  were passed over, without walking millions of occurrences.
- :func:`jitter_of` — a schedule's fixed offset within ``scheduler.jitter`` (a hash of its id), so
  500 schedules at 09:00 spread over the jitter window the same way on every replica.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Literal
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

__all__ = ["Timing", "catch_up", "jitter_of", "local_instant", "min_gap", "next_after", "next_runs"]

_MAX_STEPS = 10_000
"""Occurrences walked at most when counting the ones an outage passed over (cron only)."""


@dataclass(frozen=True)
class Timing:
    """When a schedule runs."""

    kind: Literal["interval", "cron"]
    tz: str = "UTC"
    text: str = ""
    """How it is said back (``every weekday at 09:00``)."""
    every: int = 0
    """``interval``: seconds between runs."""
    anchor: int = 0
    """``interval``: the first run (unix seconds); the others are ``anchor + k * every``."""
    cron: str = ""
    """``cron``: the 5-field expression, evaluated in ``tz``."""

    def describe(self) -> str:
        """``every weekday at 09:00 Europe/Berlin``."""
        return f"{self.text} {self.tz}"


@lru_cache(maxsize=256)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def next_after(timing: Timing, after: float) -> int | None:
    """The first occurrence strictly after ``after``; None when there is none (a cron
    expression that never matches again within cronsim's 50-year horizon)."""
    if timing.kind == "interval":
        if after < timing.anchor:
            return timing.anchor
        k = math.floor((after - timing.anchor) / timing.every) + 1
        return timing.anchor + k * timing.every
    start = math.floor(after)
    tz = _zone(timing.tz)
    try:
        it = CronSim(timing.cron, datetime.fromtimestamp(start, tz))
        for _ in range(64):
            # cronsim resolves a start inside a repeated (fall-back) hour as its first pass and
            # may answer an occurrence that is already behind ``after``: skip those.
            t = int(next(it).timestamp())
            if t > after:
                return t
    except (StopIteration, CronSimError):
        return None
    return None


def next_runs(timing: Timing, after: float, n: int) -> list[int]:
    """The next ``n`` occurrences after ``after`` (fewer if the calendar ends)."""
    out: list[int] = []
    t: float = after
    while len(out) < n:
        nxt = next_after(timing, t)
        if nxt is None:
            break
        out.append(nxt)
        t = nxt
    return out


def min_gap(timing: Timing, now: float, sample: int = 200) -> float | None:
    """The shortest time between two of the next ``sample`` runs (an interval: ``every``);
    None when it never runs, ``inf`` when it runs once."""
    if timing.kind == "interval":
        return float(timing.every)
    runs = next_runs(timing, now, sample)
    if not runs:
        return None
    if len(runs) == 1:
        return math.inf
    return float(min(b - a for a, b in itertools.pairwise(runs)))


def catch_up(timing: Timing, due: int, now: float, jitter: float) -> tuple[int, int]:
    """``due`` is the schedule's next occurrence and ``due + jitter <= now``. Returns (the newest
    occurrence whose time plus ``jitter`` has come, how many occurrences before it were passed
    over). At most ``_MAX_STEPS`` are walked for a cron calendar; an outage longer than that
    counts what it walked and lands on the newest it reached."""
    if timing.kind == "interval":
        k = max(0, math.floor((now - jitter - due) / timing.every))
        return due + k * timing.every, k
    latest, passed = due, 0
    for _ in range(_MAX_STEPS):
        nxt = next_after(timing, latest)
        if nxt is None or nxt + jitter > now:
            break
        latest, passed = nxt, passed + 1
    return latest, passed


def jitter_of(schedule_id: str, jitter: float) -> float:
    """A fixed offset in ``[0, jitter)`` seconds for this schedule, the same on every replica."""
    if jitter <= 0:
        return 0.0
    h = int.from_bytes(hashlib.sha256(schedule_id.encode()).digest()[:8], "big")
    return round(h / 2**64 * jitter, 3)


def local_instant(day: date, hour: int, minute: int, tz: str) -> int:
    """The instant ``day`` at ``hour:minute`` local time in ``tz``: the first one when the fall-back
    hour repeats it, the first valid instant after it when the spring-forward gap skips it."""
    zone = _zone(tz)
    wall = datetime(day.year, day.month, day.day, hour, minute)
    first = int(wall.replace(tzinfo=zone, fold=0).timestamp())
    back = datetime.fromtimestamp(first, zone).replace(tzinfo=None)
    if back == wall:
        return first
    # In the gap: fold=0 reads the wall time with the offset before the change, fold=1 with the
    # one after; the change lies between. Find the first instant whose wall time reaches ``wall``.
    lo, hi = sorted((first, int(wall.replace(tzinfo=zone, fold=1).timestamp())))
    while lo < hi:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).replace(tzinfo=None) >= wall:
            hi = mid
        else:
            lo = mid + 1
    return lo


def utc_iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat()
