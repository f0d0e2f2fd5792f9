"""When did it start, and what changed just before? The onset of a symptom is the earliest
telling event (or container termination) about the affected workload; an object created or
changed shortly before it is a suspect, and the answer says by how much it preceded the onset."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sleuth_common.k8s import parse_time

if TYPE_CHECKING:
    from sleuth_agent.rca._observe import WorkloadObservation

__all__ = ["NEAR_ONSET_S", "before_onset", "onset"]

NEAR_ONSET_S = 6 * 3600  # a change up to this long before the first failure is worth naming


def onset(obs: WorkloadObservation) -> datetime | None:
    """The earliest sign of trouble: Warning events' first time, container terminations."""
    stamps: list[datetime] = []
    for e in obs.events:
        if e.type == "Warning":
            t = parse_time(e.first_seen or e.last_seen)
            if t is not None:
                stamps.append(t)
    for p in obs.pods:
        for c in p.all_containers:
            if c.last_reason and c.last_reason != "Completed":
                t = parse_time(c.last_started or c.last_finished)
                if t is not None:
                    stamps.append(t)
    return min(stamps) if stamps else None


def before_onset(created: object, obs: WorkloadObservation) -> str:
    """``"created 08:55, 4 min before the first failure"`` when ``created`` precedes the onset by
    less than ``NEAR_ONSET_S``; "" otherwise (or when either time is unknown)."""
    when, start = parse_time(created), onset(obs)
    if when is None or start is None:
        return ""
    gap = (start - when).total_seconds()
    if gap < -120 or gap > NEAR_ONSET_S:
        return ""
    if gap < 60:
        return f"created {when:%H:%M} UTC, just as the failures began"
    minutes = round(gap / 60)
    span = f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"
    return f"created {when:%H:%M} UTC, {span} before the first failure"
