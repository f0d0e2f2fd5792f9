"""Sleuth's agent: consumes investigation jobs and answers them within the asker's scope.

Public API: ``Settings`` / ``AgentSettings``, ``create_app(settings)`` (FastStream app),
``build(settings)`` (the app and its parts), and ``investigate(job, scope_reply, settings)``
(the deterministic investigator, also used offline by ``sleuth investigate``).
"""

from sleuth_agent.app import Agent, build, create_app
from sleuth_agent.rca import investigate
from sleuth_agent.settings import AgentSettings, Settings

__all__ = ["Agent", "AgentSettings", "Settings", "build", "create_app", "investigate"]
