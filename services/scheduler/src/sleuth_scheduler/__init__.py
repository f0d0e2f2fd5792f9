"""Sleuth scheduler: saved recurring questions, fired as investigation jobs, answered in chat.

``create_app(settings)`` gives the FastStream app; ``build(settings, clock=...)`` the process
object (tests use it to reach the firing loop and pass a clock they move).
"""

from sleuth_scheduler.app import Scheduler, build, create_app
from sleuth_scheduler.clock import Clock
from sleuth_scheduler.firing import SCHEDULER_ISSUER
from sleuth_scheduler.settings import SchedulerSettings, Settings

__all__ = ["SCHEDULER_ISSUER", "Clock", "Scheduler", "SchedulerSettings", "Settings", "build", "create_app"]
