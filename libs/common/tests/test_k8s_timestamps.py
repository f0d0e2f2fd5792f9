"""Timestamps as Kubernetes writes them, and `kubectl logs --timestamps` lines."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth_common.k8s import format_time, parse_time, split_log_timestamp

T = datetime(2026, 11, 30, 8, 50, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Case:
    value: object
    expected: datetime | None


CASES = [
    Case("2026-11-30T08:50:00Z", T),
    Case("2026-11-30T08:50:00z", T),
    Case("2026-11-30t08:50:00Z", T),
    Case("  2026-11-30T08:50:00Z  ", T),
    Case("2026-11-30T08:50:00.123Z", T.replace(microsecond=123000)),
    Case("2026-11-30T08:50:00.123456Z", T.replace(microsecond=123456)),
    Case("2026-11-30T08:50:00.123456789Z", T.replace(microsecond=123456)),
    Case("2026-11-30T08:50:00.1234567890123Z", T.replace(microsecond=123456)),
    Case("2026-11-30T10:50:00+02:00", T),
    Case("2026-11-30T10:50:00+0200", T),
    Case("2026-11-30T10:50:00+02", T),
    Case("2026-11-30T03:20:00-05:30", T),
    Case("2026-11-30T08:50:00", T),  # no zone: UTC
    Case("2026-11-30 08:50:00", T),
    Case("2026-11-30 08:50:00,5", T.replace(microsecond=500000)),
    Case("2026-11-30T08:50Z", T),
    Case(T, T),
    Case(T.replace(tzinfo=None), T),
    Case(T.astimezone(timezone(timedelta(hours=3))), T),
    Case(None, None),
    Case("", None),
    Case("bogus", None),
    Case("2026-11-30", None),
    Case("20261130", None),
    Case("2026-13-30T08:50:00Z", None),
    Case("2026-02-30T08:50:00Z", None),
    Case("2026-11-30T24:00:00Z", None),
    Case("2026-11-30T08:50:60Z", None),
    Case("2026-11-30T08:50:00+24:00", None),
    Case("2026-11-30T08:50:00+02:60", None),
    Case("2026-11-30T08:50:00Z trailing", None),
    Case(1764492600, None),
]


@pytest.mark.parametrize("case", CASES, ids=[repr(c.value) for c in CASES])
def test_parse_time(case: Case) -> None:
    got = parse_time(case.value)
    assert got == case.expected
    if got is not None:
        assert got.tzinfo is not None


def test_parse_time_keeps_the_offset_written() -> None:
    got = parse_time("2026-11-30T10:50:00+02:00")
    assert got is not None and got.utcoffset() == timedelta(hours=2)
    assert parse_time("2026-11-30T08:50:00Z").tzinfo is UTC  # type: ignore[union-attr]


def test_format_time() -> None:
    assert format_time(T.replace(microsecond=999999)) == "2026-11-30T08:50:00Z"
    assert format_time(T.astimezone(timezone(timedelta(hours=-7)))) == "2026-11-30T08:50:00Z"
    assert format_time(T.replace(tzinfo=None)) == "2026-11-30T08:50:00Z"


@dataclass(frozen=True)
class LogCase:
    line: str
    time: datetime | None
    rest: str


LOG_CASES = [
    LogCase("2026-11-30T08:50:00.123456789Z connection refused", T.replace(microsecond=123456), "connection refused"),
    LogCase("2026-11-30T08:50:00Z  two spaces", T, " two spaces"),
    LogCase("2026-11-30T08:50:00Z", T, ""),
    LogCase("2026-11-30T08:50:00Z ", T, ""),
    LogCase("2026-11-30T10:50:00+02:00 offset", T, "offset"),
    LogCase("2026-11-30T08:50:00,5Z comma", T.replace(microsecond=500000), "comma"),
    LogCase("2026-11-30T08:50:00Zglued", None, "2026-11-30T08:50:00Zglued"),
    LogCase("2026-11-30T08:50:00Z\ttab", None, "2026-11-30T08:50:00Z\ttab"),
    LogCase("2026-11-30 08:50:00 app's own format", None, "2026-11-30 08:50:00 app's own format"),
    LogCase("2026-13-30T08:50:00Z bad month", None, "2026-13-30T08:50:00Z bad month"),
    LogCase(" 2026-11-30T08:50:00Z indented", None, " 2026-11-30T08:50:00Z indented"),
    LogCase("plain line", None, "plain line"),
    LogCase("", None, ""),
]


@pytest.mark.parametrize("case", LOG_CASES, ids=[c.line or "empty" for c in LOG_CASES])
def test_split_log_timestamp(case: LogCase) -> None:
    assert split_log_timestamp(case.line) == (case.time, case.rest)


_times = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC))


@given(_times, st.text(max_size=20))
def test_kubelet_lines_split_back(ts: datetime, message: str) -> None:
    nano = ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond:06d}" + "123Z"  # RFC3339Nano
    assert split_log_timestamp(f"{nano} {message}") == (ts, message)
    assert parse_time(format_time(ts)) == ts.replace(microsecond=0)


@given(_times, st.integers(-23 * 60, 23 * 60))
def test_offsets_name_the_same_instant(ts: datetime, minutes: int) -> None:
    local = ts.astimezone(timezone(timedelta(minutes=minutes)))
    assert parse_time(local.isoformat()) == ts
