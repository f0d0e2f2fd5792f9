"""Sleuth alerts service: Alertmanager webhook receiver, batching per cluster, cooldowns.

``create_app(settings)`` gives the FastStream app; ``build(settings, clock=...)`` the process
object (tests use it to reach the batcher and pass a fake clock).
"""

from sleuth_alerts.app import Alerts, build, create_app
from sleuth_alerts.settings import AlertsSettings, RouteSettings, RunAs, Settings

__all__ = ["Alerts", "AlertsSettings", "RouteSettings", "RunAs", "Settings", "build", "create_app"]
