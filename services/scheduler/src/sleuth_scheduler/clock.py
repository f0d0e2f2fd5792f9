"""The service's clock: real time, or (tests only) real time shifted and sped up.

Every replica configured with the same ``clock_epoch`` and ``clock_speed`` reads the same time,
so two scheduler processes can be tested over hundreds of occurrences in seconds. Durations the
scheduler hands to others in real time (a job's deadline for the agent) go through
:meth:`Clock.real_seconds`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sleuth_scheduler.settings import SchedulerSettings

__all__ = ["Clock"]


@dataclass
class Clock:
    speed: float = 1.0
    """Service seconds per real second (tests only; 1 in production)."""
    epoch: float = 0.0
    """Real unix time from which ``speed`` counts."""
    offset: float = 0.0
    """Seconds added to the time (tests move it to jump ahead)."""

    @classmethod
    def from_settings(cls, s: SchedulerSettings) -> Clock:
        return cls(speed=s.clock_speed if s.clock_epoch else 1.0, epoch=s.clock_epoch)

    def __call__(self) -> float:
        real = time.time()
        if self.speed != 1.0 and self.epoch:
            real = self.epoch + (real - self.epoch) * self.speed
        return real + self.offset

    def real_seconds(self, seconds: float) -> float:
        """How long ``seconds`` of service time last in real time."""
        return seconds / self.speed if self.speed > 0 else seconds
