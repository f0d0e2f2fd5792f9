"""Sleuth reporter: best-practice reports on demand (``sleuth.reports.<op>``), made by the agent
with rules in code over what every reader of the target may read, delivered to chat and by email.

``create_app(settings)`` gives the FastStream app; ``build(settings)`` the process object (tests
use it to reach the worker and the metrics).
"""

from sleuth_reporter.app import Reporter, build, create_app
from sleuth_reporter.settings import ReporterSettings, Settings, SmtpSettings

__all__ = ["Reporter", "ReporterSettings", "Settings", "SmtpSettings", "build", "create_app"]
