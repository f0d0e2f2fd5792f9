"""Recency: a failure whose last sign is well in the past, on a pod that has been running and
ready since, is history ("recovered at T"), not a current root cause.

The investigator has no clock of its own that it can trust for the data it reads (a snapshot may
be replayed long after it was taken), so the reference time is the latest timestamp the
collected data itself carries (events, pod conditions, container starts). That is a lower bound
on the real "now": a failure judged old against it is at least that old."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

from sleuth_agent.rca._records import EventView, PodView
from sleuth_common.k8s import parse_time as k8s_parse_time

__all__ = ["HISTORY_AFTER", "parse_time", "recovered", "reference_time"]

HISTORY_AFTER = 15 * 60.0
"""Seconds since the last sign of a failure after which a pod that is ready again counts as recovered."""

_TS = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:?\d\d)?")
_TROUBLE = ("BackOff", "Killing", "Unhealthy", "OOMKilling", "Evicted", "Failed", "FailedMount", "NodeNotReady")


def parse_time(text: str) -> float | None:
    """Seconds since the epoch of the first RFC 3339 timestamp in ``text``, else None (the
    shared ``sleuth_common.k8s.parse_time`` reads it)."""
    m = _TS.search(text or "")
    t = k8s_parse_time(m.group(0)) if m else None
    return t.timestamp() if t is not None else None


def reference_time(pods: Iterable[PodView], events: Iterable[EventView]) -> float | None:
    """The latest timestamp the collected pods and events carry (a lower bound on now)."""
    stamps: list[float] = []
    for p in pods:
        stamps.extend(t for t in (parse_time(p.ready_since),) if t is not None)
        for c in p.all_containers:
            for text in (c.started_at, c.last_finished, c.last_started):
                t = parse_time(text)
                if t is not None:
                    stamps.append(t)
    for e in events:
        t = parse_time(e.last_seen)
        if t is not None:
            stamps.append(t)
    return max(stamps) if stamps else None


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def recovered(pod: PodView, events: Iterable[EventView], now: float | None, after: float = HISTORY_AFTER) -> str | None:
    """A note "recovered at T" when every sign of trouble on ``pod`` (its containers' last
    terminations, warning events about it) ended more than ``after`` seconds before ``now`` and
    the pod has been running and ready since, without restarting again; else None (it is current,
    or the data cannot tell: a sign without a timestamp is never taken as old)."""
    if now is None or not pod.healthy:
        return None
    last_bad = 0.0
    back = 0.0  # when it came back: the current run's start, or Ready's last transition
    for c in pod.containers:
        if not c.restart_count and not c.last_reason and c.last_exit_code is None:
            continue
        finished = parse_time(c.last_finished)
        if finished is None:
            return None
        started = parse_time(c.started_at)
        if started is None or started < finished:
            return None  # it cannot be shown to have run since the last termination
        last_bad, back = max(last_bad, finished), max(back, started)
    mine = [
        e
        for e in events
        if e.object_name == pod.name
        and ((e.type != "Normal" and e.reason in _TROUBLE) or (e.reason == "Killing" and "probe" in e.message.lower()))
    ]
    for e in mine:
        t = parse_time(e.last_seen)
        if t is None:
            return None
        last_bad = max(last_bad, t)
    if not last_bad:
        return None  # nothing went wrong: there is nothing to call recovered
    ready = parse_time(pod.ready_since)
    if ready is not None and ready > last_bad:
        back = max(back, ready)
    if now - last_bad <= after:
        return None
    what = []
    restarts = pod.restarts
    if restarts:
        codes = sorted({c.last_exit_code for c in pod.containers if c.last_exit_code is not None})
        what.append(f"{restarts} restart(s)" + (f" (last exit code {', '.join(map(str, codes))})" if codes else ""))
    if mine:
        what.append(", ".join(sorted({e.reason for e in mine})) + " event(s)")
    minutes = int((now - last_bad) // 60)
    since = f"; running and ready since {_stamp(back)}" if back else ""
    return (
        f"pod {pod.name}: {' and '.join(what)} last seen at {_stamp(last_bad)}, about {minutes} min before the "
        f"latest data{since}, with no restart or warning after it: recovered, history rather than a current cause"
    )
