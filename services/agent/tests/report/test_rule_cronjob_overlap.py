"""cronjob_overlap: concurrencyPolicy Allow (the default) and runs longer than the interval."""

from __future__ import annotations

import pytest
from report_objects import cronjob, findings, inventory, job, run

from sleuth_agent.report.rules._cron import shortest_interval


def test_a_run_longer_than_the_interval_with_allow_gets_forbid() -> None:
    got = findings("cronjob_overlap",
                   cronjob(schedule="*/10 * * * *", policy=None),
                   job("nightly-1", cron="nightly", start="2026-11-30T08:00:00Z", end="2026-11-30T08:25:00Z"),
                   job("nightly-2", cron="nightly", start="2026-11-30T08:10:00Z", end="2026-11-30T08:12:00Z"))
    (f,) = got
    assert f.observed == {"schedule": "*/10 * * * *", "concurrency_policy": "Allow", "interval_seconds": 600,
                          "longest_run_seconds": 1500, "longest_run": "nightly-1", "active_runs": 0}
    assert "every 10min" in f.why and "nightly-1 took 25min" in f.why
    assert f.fix.startswith("""kubectl patch cronjob nightly -n team-a -p '{"spec":{"concurrencyPolicy":"Forbid"}}'""")


def test_a_run_still_active_is_measured_to_the_latest_data() -> None:
    (f,) = findings("cronjob_overlap", cronjob(schedule="@hourly", policy="Allow"),
                    job("nightly-9", cron="nightly", start="2026-11-30T06:00:00Z", active=1),
                    now="2026-11-30T09:00:00Z")
    assert f.observed["longest_run_seconds"] == 3 * 3600


def test_two_active_runs_are_an_overlap_already() -> None:
    (f,) = findings("cronjob_overlap", cronjob(policy="Allow", active=2))
    assert "2 runs are active at once" in f.why


def test_forbid_short_runs_suspended_and_other_cronjobs_jobs_are_fine() -> None:
    long_run = job("nightly-1", cron="nightly", start="2026-11-30T00:00:00Z", end="2026-11-30T23:00:00Z")
    assert findings("cronjob_overlap", cronjob(schedule="0 * * * *", policy="Forbid"), long_run) == []
    short = job("nightly-1", cron="nightly", start="2026-11-30T02:00:00Z", end="2026-11-30T02:05:00Z")
    assert findings("cronjob_overlap", cronjob(policy=None), short) == []
    suspended = cronjob(schedule="0 * * * *", policy="Allow")
    suspended["spec"]["suspend"] = True
    assert findings("cronjob_overlap", suspended, long_run) == []
    other = job("other-1", cron="other", start="2026-11-30T00:00:00Z", end="2026-11-30T23:00:00Z")
    assert findings("cronjob_overlap", cronjob(schedule="0 * * * *", policy="Allow"), other) == []


def test_an_unreadable_schedule_is_not_checked() -> None:
    out = run("cronjob_overlap", inventory(cronjob(schedule="every day", policy="Allow")))
    assert out.findings == [] and "five fields" in out.not_checked[0].reason


@pytest.mark.parametrize(("schedule", "seconds"), [
    ("*/5 * * * *", 300), ("0 6 * * *", 86400), ("0 */2 * * *", 7200), ("0 6 * * 1-5", 86400),
    ("0 6 * * 1", 7 * 86400), ("0 6 * * 7", 7 * 86400), ("0 0,12 * * *", 43200), ("@hourly", 3600),
    ("CRON_TZ=Europe/Berlin 30 1 * * *", 86400), ("*/15 9-17 * * mon-fri", 900), ("0 3 1,15 * *", 14 * 86400),
])
def test_shortest_interval(schedule: str, seconds: int) -> None:
    assert shortest_interval(schedule) == seconds


@pytest.mark.parametrize("schedule", ["", "* * *", "61 * * * *", "*/0 * * * *", "x * * * *"])
def test_shortest_interval_refuses_what_it_cannot_read(schedule: str) -> None:
    with pytest.raises(ValueError):
        shortest_interval(schedule)
