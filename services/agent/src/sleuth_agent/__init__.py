"""Sleuth's agent: consumes investigation jobs and answers them within the asker's scope.

Public API: ``Settings`` / ``AgentSettings``, ``create_app(settings)`` (FastStream app),
``build(settings)`` (the app and its parts), and ``investigate(job, scope_reply, settings)``
(the deterministic investigator, also used offline by ``sleuth investigate``).
"""

from typing import TYPE_CHECKING, Any

from sleuth_agent.rca import investigate
from sleuth_agent.settings import AgentSettings, Settings

if TYPE_CHECKING:
    from sleuth_agent.app import Agent, build, create_app

__all__ = ["Agent", "AgentSettings", "Settings", "build", "create_app", "investigate"]


def __getattr__(name: str) -> Any:
    # The service's wiring (bus, LLM loop) loads only when asked for: the offline CLI
    # (`sleuth investigate`) needs the investigator alone and starts faster without it.
    if name in {"Agent", "build", "create_app"}:
        from sleuth_agent import app

        return getattr(app, name)
    raise AttributeError(name)
