"""The API server's human durations (`5m10s`, `3h`, `2d4h`) and ages; RFC 3339 parsing and
formatting are `sleuth_common.k8s`'s, re-exported here."""

from __future__ import annotations

from datetime import datetime

from sleuth_common.k8s import format_time, parse_time

__all__ = ["format_time", "human_duration", "parse_time", "since"]


def human_duration(seconds_float: float) -> str:
    """apimachinery's `duration.HumanDuration`, as kubectl prints AGE."""
    seconds = int(seconds_float)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def since(value: object, now: datetime) -> str:
    """`translateTimestampSince`: the age of a timestamp at `now`, `<unknown>` without one."""
    ts = parse_time(value)
    if ts is None:
        return "<unknown>"
    return human_duration((now - ts).total_seconds())
