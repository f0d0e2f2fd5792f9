"""The shortest interval between two runs of a cron schedule (five fields as CronJobs take them,
and the ``@hourly``-style macros). Used to tell a long run from an overlapping one."""

from __future__ import annotations

import itertools

__all__ = ["shortest_interval"]

_MACROS = {"@yearly": 366 * 86400, "@annually": 366 * 86400, "@monthly": 28 * 86400, "@weekly": 7 * 86400,
           "@daily": 86400, "@midnight": 86400, "@hourly": 3600}
_DOW = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}


def _values(field: str, low: int, high: int, names: dict[str, int] | None = None) -> list[int]:
    out: set[int] = set()
    for part in field.lower().split(","):
        rng, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(f"cron step {part!r}")
        if rng in ("*", "?"):
            a, b = low, high
        elif "-" in rng:
            x, y = rng.split("-", 1)
            a, b = _num(x, names), _num(y, names)
        else:
            a = _num(rng, names)
            b = high if step_text else a
        top = high + 1 if names is _DOW else high  # weekday 7 is Sunday too
        if not (low <= a <= top and low <= b <= top):
            raise ValueError(f"cron value {part!r} is out of range")
        out.update(range(a, b + 1, step))
    return sorted(v % 7 if names is _DOW else v for v in out)


def _num(text: str, names: dict[str, int] | None) -> int:
    if names and text in names:
        return names[text]
    return int(text)


def _gap(values: list[int], period: int) -> int:
    """The shortest distance between consecutive values on a cycle of ``period``."""
    vs = sorted(set(values))
    if len(vs) == 1:
        return period
    return min([b - a for a, b in itertools.pairwise(vs)] + [vs[0] + period - vs[-1]])


def shortest_interval(schedule: str) -> int:
    """Seconds; a lower bound where months and weekdays interact (every day is taken as possible
    when both day fields are open). Raises ValueError for a schedule it cannot read."""
    text = schedule.strip()
    for prefix in ("CRON_TZ=", "TZ="):
        if text.startswith(prefix):
            text = text.split(None, 1)[1] if " " in text else ""
    if text in _MACROS:
        return _MACROS[text]
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(f"cron schedule {schedule!r} does not have five fields")
    minute, hour, dom, _month, dow = fields
    minutes = [h * 60 + m for h in _values(hour, 0, 23) for m in _values(minute, 0, 59)]
    if len(minutes) > 1:
        return min(_gap(minutes, 24 * 60), _gap_days(dom, dow) * 24 * 60) * 60
    return _gap_days(dom, dow) * 86400


def _gap_days(dom: str, dow: str) -> int:
    if dom in ("*", "?") and dow in ("*", "?"):
        return 1
    if dom in ("*", "?"):
        return _gap(_values(dow, 0, 6, _DOW), 7)
    if dow in ("*", "?"):
        return _gap(_values(dom, 1, 31), 31) if len(_values(dom, 1, 31)) > 1 else 28
    return 1  # either field matching: runs on days of both kinds, possibly consecutive
