"""``<prefix>.incidents.recorded``: every agent hears every incident (no queue group: each keeps its
own index). Only agents may publish or subscribe to it (``sleuth.embedded.access``)."""

from __future__ import annotations

from collections.abc import Callable

from faststream.nats import NatsRouter

from sleuth_agent.incidents._store import IncidentMemory
from sleuth_common.messages import IncidentRecorded
from sleuth_common.subjects import Subjects

__all__ = ["incidents_router"]


def incidents_router(memory: Callable[[], IncidentMemory | None], subjects: Subjects) -> NatsRouter:
    router = NatsRouter()

    @router.subscriber(subjects.incidents_recorded)
    async def recorded(message: IncidentRecorded) -> None:
        current = memory()
        if current is not None:
            current.heard(message)

    return router
