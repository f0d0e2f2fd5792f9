"""Timestamps as Kubernetes writes them: RFC 3339 (``metav1.Time`` ``2024-05-01T10:00:00Z``,
``metav1.MicroTime`` and ``kubectl logs --timestamps`` with up to nine fractional digits)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

__all__ = ["format_time", "parse_time", "split_log_timestamp"]

_TIME = (
    r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[Tt ](?P<h>\d\d):(?P<mi>\d\d)(?::(?P<s>\d\d)(?:[.,](?P<f>\d+))?)?"
    r"(?:(?P<z>[Zz])|(?P<sign>[+-])(?P<oh>\d\d)(?::?(?P<om>\d\d))?)?"
)
_RFC3339 = re.compile(_TIME)
_LOG_PREFIX = re.compile(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[Zz]|[+-]\d\d(?::?\d\d)?)?(?= |$)")


def parse_time(value: object) -> datetime | None:
    """An aware datetime, or None for None, ``""`` and anything that is not a time.

    Takes RFC 3339 as Kubernetes prints it (``2024-05-01T10:00:00Z``, ``…:00.123456789Z``,
    ``…:00+02:00``), and the looser forms logs carry: a space for ``T``, ``,`` before the
    fraction, ``+0200``/``+02`` offsets, no seconds, no zone (read as UTC). Fractions are cut to
    microseconds. The offset written is kept (``Z`` is UTC). A datetime is returned as it is,
    UTC assumed when naive."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    m = _RFC3339.fullmatch(value.strip())
    if m is None:
        return None
    tz: timezone = UTC
    if m["sign"]:
        minutes = int(m["oh"]) * 60 + int(m["om"] or 0)
        if minutes >= 24 * 60 or int(m["om"] or 0) >= 60:
            return None
        tz = timezone(timedelta(minutes=minutes if m["sign"] == "+" else -minutes))
    micro = int((m["f"] or "")[:6].ljust(6, "0"))
    try:
        return datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]),
                        int(m["s"] or 0), micro, tzinfo=tz)
    except ValueError:  # month 13, second 60 …
        return None


def format_time(value: datetime) -> str:
    """``metav1.Time`` as the API server writes it: UTC, whole seconds, ``Z`` (naive is UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def split_log_timestamp(line: str) -> tuple[datetime | None, str]:
    """``kubectl logs --timestamps`` lines: ``(time, message)`` when the line starts with an
    RFC 3339 time (``T`` between date and time, seconds present) followed by one space, which is
    dropped, or by the end of the line; ``(None, line)`` otherwise."""
    m = _LOG_PREFIX.match(line)
    if m is None:
        return None, line
    ts = parse_time(m.group())
    if ts is None:
        return None, line
    return ts, line[m.end() + 1 :]
