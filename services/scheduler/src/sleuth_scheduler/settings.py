"""The scheduler's settings: the shared groups plus ``scheduler``."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sleuth_common.config import ServiceSettings

__all__ = ["SchedulerSettings", "Settings"]


class SchedulerSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    host: str = "127.0.0.1"
    """Address of ``/healthz``, ``/readyz`` and ``/metrics``."""
    port: int = 8091
    """Port of ``/healthz``, ``/readyz`` and ``/metrics``; 0 turns the HTTP server off."""
    min_interval: float = 300.0
    """Shortest time between two runs of one schedule, in seconds (for cron: the shortest gap
    among its next runs). Anything more often is refused when it is made."""
    jitter: float = 30.0
    """Each schedule runs a fixed offset in ``[0, jitter)`` seconds after its time (a hash of its
    id), so many schedules at 09:00 do not all reach the agents in the same second."""
    grace: float = 900.0
    """After an outage, an occurrence missed by less than this many seconds still runs, once (the
    newest one: not one per missed occurrence); older ones are skipped and counted."""
    tick: float = 1.0
    """Seconds between looks for due schedules and overdue runs."""
    max_failures: int = 3
    """Runs in a row that may fail (no answer by the deadline, an error, a refusal) before the
    schedule is disabled and its owner told why; ``resume`` starts it again."""
    max_per_user: int = 20
    """Schedules one person may own."""
    max_per_target: int = 50
    """Schedules one channel (or private conversation) may hold."""
    max_question_chars: int = 500
    """Longest question a schedule may ask."""
    default_tz: str = "UTC"
    """IANA time zone of a schedule that names none when the gateway does not know the asker's."""
    investigation_timeout: float = 120.0
    """Deadline of one run's investigation, in seconds."""
    answer_grace: float = 30.0
    """Seconds past a run's deadline before it counts as "no answer" (the agent's own deadline
    handling answers first when it can)."""
    claim_timeout: float = 30.0
    """A run claimed by a replica that did not put its job on the JOBS stream within this many
    seconds (it died, or lost NATS) is published by another replica."""
    publish_timeout: float = 5.0
    """Seconds to wait for JetStream to store a job or a post."""
    concurrency: int = 32
    """Runs started at the same time by one replica (due schedules are taken in parallel)."""
    batch: int = 1000
    """Due schedules one replica looks at per tick."""
    fired_ttl: float = 172800.0
    """Seconds a fired-occurrence mark (``<prefix>:scheduler:fired:<id>:<ts>``) is kept."""
    clock_speed: float = 1.0
    """TEST ONLY: the service's clock runs this many times faster than real time, counted from
    ``clock_epoch`` (every replica configured alike agrees on the time). Leave at 1."""
    clock_epoch: float = 0.0
    """TEST ONLY: the real unix time from which ``clock_speed`` counts (0 = not used)."""

    @field_validator("default_tz")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError(f"scheduler.default_tz {value!r} is not an IANA time zone") from e
        return value


class Settings(ServiceSettings):
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
