"""What ``schedule …`` accepts, what it refuses and why, and when the result runs (DST included)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from sleuth_scheduler.grammar import EXAMPLE, GrammarError, parse, upcoming

NOW = datetime(2026, 3, 27, 8, 0, tzinfo=UTC).timestamp()
"""Friday 27 March 2026, 08:00 UTC (09:00 in Berlin, two days before the spring-forward)."""


@dataclass(frozen=True)
class Case:
    text: str
    spec: str
    tz: str
    question: str
    next_runs: tuple[str, ...]


CASES = [
    Case("every 5 minutes what is failing in team-a?", "every 5 minutes", "UTC", "what is failing in team-a?",
         ("2026-03-27T08:05:00+00:00", "2026-03-27T08:10:00+00:00")),
    Case("every 2h in Europe/Berlin how is checkout?", "every 2 hours", "Europe/Berlin", "how is checkout?",
         ("2026-03-27T11:00:00+01:00", "2026-03-27T13:00:00+01:00")),
    Case("every day what changed?", "every day at 09:00", "UTC", "what changed?",
         ("2026-03-27T09:00:00+00:00", "2026-03-28T09:00:00+00:00")),
    Case("every weekday at 09:00 in Europe/Berlin what is failing in team-a?", "every weekday at 09:00",
         "Europe/Berlin", "what is failing in team-a?", ("2026-03-30T09:00:00+02:00", "2026-03-31T09:00:00+02:00")),
    Case("every monday in Europe/Berlin weekly check", "every monday at 09:00", "Europe/Berlin", "weekly check",
         ("2026-03-30T09:00:00+02:00", "2026-04-06T09:00:00+02:00")),
    Case("every monday at 09:00 in America/New_York: any OOM kills?", "every monday at 09:00", "America/New_York",
         "any OOM kills?", ("2026-03-30T09:00:00-04:00", "2026-04-06T09:00:00-04:00")),
    Case("every day at 9am in Europe/Berlin what is failing", "every day at 09:00", "Europe/Berlin",
         "what is failing", ("2026-03-28T09:00:00+01:00", "2026-03-29T09:00:00+02:00")),
    Case("every day at 9:30 pm how are the nodes", "every day at 21:30", "UTC", "how are the nodes",
         ("2026-03-27T21:30:00+00:00", "2026-03-28T21:30:00+00:00")),
    Case("every tuesdays at noon q", "every tuesday at 12:00", "UTC", "q",
         ("2026-03-31T12:00:00+00:00", "2026-04-07T12:00:00+00:00")),
    Case("every hour starting at 10:00 how is prod?", "every hour starting at 10:00", "UTC", "how is prod?",
         ("2026-03-27T10:00:00+00:00", "2026-03-27T11:00:00+00:00")),
    Case("every 6h starting at 03:00 in Europe/Berlin q", "every 6 hours starting at 03:00", "Europe/Berlin", "q",
         ("2026-03-28T03:00:00+01:00", "2026-03-28T09:00:00+01:00")),
    Case("every weekend at 10:00 in UTC q", "every weekend day at 10:00", "UTC", "q",
         ("2026-03-28T10:00:00+00:00", "2026-03-29T10:00:00+00:00")),
    Case('cron "0 9 * * 1-5" in Europe/Berlin what is failing?', 'cron "0 9 * * 1-5"', "Europe/Berlin",
         "what is failing?", ("2026-03-30T09:00:00+02:00", "2026-03-31T09:00:00+02:00")),
    Case("cron '*/30 9-17 * * MON-FRI' q", 'cron "*/30 9-17 * * MON-FRI"', "UTC", "q",
         ("2026-03-27T09:00:00+00:00", "2026-03-27T09:30:00+00:00")),
    # "in team-a" is not a time zone: it stays in the question
    Case("every day in team-a what is failing", "every day at 09:00", "UTC", "in team-a what is failing",
         ("2026-03-27T09:00:00+00:00", "2026-03-28T09:00:00+00:00")),
    Case('every day at 08:00 "what is failing?"', "every day at 08:00", "UTC", "what is failing?",
         ("2026-03-28T08:00:00+00:00", "2026-03-29T08:00:00+00:00")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text[:40])
def test_examples(case: Case) -> None:
    p = parse(case.text, now=NOW)
    assert (p.timing.text, p.timing.tz, p.question) == (case.spec, case.tz, case.question)
    assert tuple(upcoming(p.timing, NOW, 2)) == case.next_runs


def test_the_askers_zone_is_the_default() -> None:
    p = parse("every day at 09:00 q", now=NOW, default_tz="Asia/Tokyo")
    assert p.timing.tz == "Asia/Tokyo"
    assert upcoming(p.timing, NOW, 1) == ["2026-03-28T09:00:00+09:00"]


@dataclass(frozen=True)
class Refusal:
    text: str
    says: tuple[str, ...]
    grammar: bool = True
    """The reply carries the grammar and an example."""


REFUSALS = [
    Refusal("sometimes what is failing", ("does not start with `every` or `cron`",)),
    Refusal("every fortnight q", ("`fortnight` is not an interval",)),
    Refusal("every day at 25:00 q", ("`25:00` is not a time",)),
    Refusal("every day at 13pm q", ("`13pm` is not a time",)),
    Refusal("every day at 09:00", ("no question",)),
    Refusal("every 2 days q", ("`every 2 days`", "cron")),
    Refusal("every 2h at 09:00 q", ("`starting at`",)),
    Refusal("every day at 09:00 starting at 10:00 q", ("not both",)),
    Refusal('cron "0 9 * *" q', ("4 fields", "5")),
    Refusal('cron "0 9 * * * *" q', ("6 fields",)),
    Refusal('cron "0 25 * * *" q', ("not a cron expression", "Bad hour")),
    Refusal("cron 0 9 * * * q", ("in quotes",)),
    Refusal('cron "0 0 31 2 *" q', ("not a cron expression",)),
    Refusal("every day in Europe/Berln q", ("`Europe/Berln`",), grammar=False),
    Refusal("every 5 minutes in Mars/Olympus_Mons q", ("`Mars/Olympus_Mons`",), grammar=False),
    Refusal("every 1 minute q", ("too often", "5 minutes"), grammar=False),
    Refusal("every 30s q", ("too often",), grammar=False),
    Refusal("every 4 min q", ("too often",), grammar=False),
    Refusal('cron "* * * * *" q', ("runs every minute", "5 minutes"), grammar=False),
    Refusal('cron "*/2 9 * * *" q', ("runs every 2 minutes",), grammar=False),
]


@pytest.mark.parametrize("case", REFUSALS, ids=lambda c: c.text[:40])
def test_refusals_say_why(case: Refusal) -> None:
    with pytest.raises(GrammarError) as e:
        parse(case.text, now=NOW)
    for words in case.says:
        assert words in str(e.value)
    assert (EXAMPLE in str(e.value)) is case.grammar


def test_min_interval_is_configurable() -> None:
    assert parse("every 1 minute q", now=NOW, min_interval=60).timing.every == 60
    with pytest.raises(GrammarError, match="shortest interval allowed here is 2 hours"):
        parse("every hour q", now=NOW, min_interval=7200)


def test_a_long_question_is_refused() -> None:
    with pytest.raises(GrammarError, match="longer than 20"):
        parse("every day " + "x" * 21, now=NOW, max_question_chars=20)


# ----------------------------------------------------------------------------- DST (Europe/Berlin)
# 2026: spring forward on Sunday 29 March 02:00 → 03:00; fall back on Sunday 25 October 03:00 → 02:00.

def local_days(runs: list[str]) -> list[str]:
    return [r[:10] for r in runs]


def test_spring_forward_a_skipped_time_runs_once_at_the_first_valid_instant_after() -> None:
    p = parse("every day at 02:30 in Europe/Berlin q", now=NOW)
    runs = upcoming(p.timing, datetime(2026, 3, 27, 12, tzinfo=UTC).timestamp(), 4)
    assert runs == ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00",
                    "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"]


def test_fall_back_a_repeated_time_runs_once() -> None:
    p = parse("every day at 02:30 in Europe/Berlin q", now=NOW)
    runs = upcoming(p.timing, datetime(2026, 10, 23, 12, tzinfo=UTC).timestamp(), 4)
    assert runs == ["2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00",
                    "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"]
    assert len(set(local_days(runs))) == 4


def test_fall_back_restarting_inside_the_repeated_hour_does_not_run_it_again() -> None:
    """A replica that looks again at 02:10 the second time round (after 02:30 CEST already ran)
    finds the next run tomorrow, not the second 02:30."""
    p = parse("every day at 02:30 in Europe/Berlin q", now=NOW)
    second_pass = datetime(2026, 10, 25, 1, 10, tzinfo=UTC).timestamp()  # 02:10 CET
    assert upcoming(p.timing, second_pass, 1) == ["2026-10-26T02:30:00+01:00"]


def test_starting_at_a_skipped_time_starts_at_the_first_valid_instant_after() -> None:
    saturday = datetime(2026, 3, 28, 12, tzinfo=UTC).timestamp()
    p = parse("every 12h starting at 02:30 in Europe/Berlin q", now=saturday)
    assert upcoming(p.timing, saturday, 2) == ["2026-03-29T03:00:00+02:00", "2026-03-29T15:00:00+02:00"]


def test_a_wildcard_hour_cron_runs_every_real_hour_across_fall_back() -> None:
    p = parse('cron "30 * * * *" in Europe/Berlin q', now=NOW)
    runs = upcoming(p.timing, datetime(2026, 10, 24, 23, 0, tzinfo=UTC).timestamp(), 4)
    assert runs == ["2026-10-25T01:30:00+02:00", "2026-10-25T02:30:00+02:00",
                    "2026-10-25T02:30:00+01:00", "2026-10-25T03:30:00+01:00"]
