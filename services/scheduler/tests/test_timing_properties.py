"""Properties of the next-runs function, in zones with daylight saving time: strictly increasing,
never an occurrence twice (a fixed daily time runs at most once per local day, DST days
included), and the same next run whichever instant between two runs a replica looks from."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth_scheduler.timing import Timing, catch_up, jitter_of, next_after, next_runs

ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Tehran",
         "Europe/London", "UTC"]
"""Zones with DST (Lord Howe shifts by 30 minutes; Santiago changes at midnight), and UTC."""

# Instants around the DST changes of 2026 (and a few years around), where bugs live.
TRANSITIONS = [datetime(y, m, d, tzinfo=UTC).timestamp() for y in (2025, 2026, 2027)
               for m, d in ((3, 8), (3, 29), (4, 5), (9, 6), (10, 4), (10, 25), (11, 1))]

instants = st.one_of(
    st.sampled_from(TRANSITIONS).flatmap(lambda t: st.floats(t - 3 * 86400, t + 3 * 86400)),
    st.floats(datetime(2024, 1, 1, tzinfo=UTC).timestamp(), datetime(2030, 1, 1, tzinfo=UTC).timestamp()),
)

fixed_daily = st.builds(
    lambda h, m, dow, tz: Timing(kind="cron", cron=f"{m} {h} * * {dow}", tz=tz),
    st.integers(0, 23), st.integers(0, 59), st.sampled_from(["*", "1-5", "0,6", "1", "0"]), st.sampled_from(ZONES),
)
crons = st.one_of(
    fixed_daily,
    st.builds(lambda expr, tz: Timing(kind="cron", cron=expr, tz=tz),
              st.sampled_from(["30 * * * *", "*/15 * * * *", "0 2,3 * * *", "0 */6 * * *", "15 1-4 * * *",
                               "0 0 1 * *", "0 9 * * 1-5", "30 2 * 3,10 0", "0 0 29 2 *"]),
              st.sampled_from(ZONES)),
)
intervals = st.builds(lambda every, anchor, tz: Timing(kind="interval", every=every, anchor=anchor, tz=tz),
                      st.integers(300, 7 * 86400), st.integers(1_700_000_000, 1_900_000_000), st.sampled_from(ZONES))
timings = st.one_of(crons, intervals)


@settings(max_examples=150, deadline=None)
@given(timings, instants)
def test_runs_are_strictly_increasing_and_after_the_start(timing: Timing, start: float) -> None:
    runs = next_runs(timing, start, 12)
    assert runs, timing
    assert runs[0] > start
    assert all(a < b for a, b in itertools.pairwise(runs))


@settings(max_examples=150, deadline=None)
@given(fixed_daily, instants)
def test_a_fixed_daily_time_runs_at_most_once_per_local_day(timing: Timing, start: float) -> None:
    runs = next_runs(timing, start, 20)
    days = [datetime.fromtimestamp(t, ZoneInfo(timing.tz)).date() for t in runs]
    assert len(days) == len(set(days)), (timing, [datetime.fromtimestamp(t, ZoneInfo(timing.tz)) for t in runs])


@settings(max_examples=150, deadline=None)
@given(timings, instants, st.floats(0, 1))
def test_looking_again_from_anywhere_between_two_runs_finds_the_later_one(timing: Timing, start: float,
                                                                          where: float) -> None:
    """What makes a restart safe: a replica that recomputes from any instant after a run it
    fired never finds that run (or an earlier one) again, and never jumps over the next."""
    a, b = next_runs(timing, start, 2)
    between = a + (b - a) * where
    if between >= b:
        between = b - 1
    assert next_after(timing, between) == b
    assert next_after(timing, a) == b


@settings(max_examples=120, deadline=None)
@given(timings, instants, st.floats(0, 5 * 86400), st.floats(0, 30))
def test_catch_up_lands_on_the_newest_due_occurrence(timing: Timing, start: float, outage: float,
                                                     jitter: float) -> None:
    first = next_after(timing, start)
    assert first is not None
    now = first + jitter + outage
    latest, passed = catch_up(timing, first, now, jitter)
    assert latest + jitter <= now
    nxt = next_after(timing, latest)
    assert nxt is None or nxt + jitter > now
    assert passed == len([t for t in next_runs(timing, first, passed + 1) if t <= latest])


def test_jitter_is_fixed_per_schedule_and_within_bounds() -> None:
    values = [jitter_of(f"id{i}", 30.0) for i in range(2000)]
    assert all(0 <= v < 30 for v in values)
    assert jitter_of("abc", 30.0) == jitter_of("abc", 30.0)
    # spread: every 3-second slice of the window gets some of 2,000 schedules
    assert {int(v // 3) for v in values} == set(range(10))
    assert jitter_of("abc", 0) == 0
