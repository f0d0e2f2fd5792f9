"""Bus edges: ``<prefix>.schedules.<op>`` (request/reply, queue group ``scheduler``), the schedule
commands from the gateway (``Commands``)."""

from __future__ import annotations

from collections.abc import Callable

from faststream.nats import NatsRouter
from prometheus_client import Counter

from sleuth_common.bus import TemporaryBusError, error_replies
from sleuth_common.messages import ScheduleReply, ScheduleRequest
from sleuth_common.subjects import Subjects
from sleuth_scheduler.commands import Commands

__all__ = ["build_router"]


def build_router(commands: Callable[[], Commands | None], subjects: Subjects, *,
                 crashes: Counter | None = None) -> NatsRouter:
    """The commands, one at a time per replica; ``commands`` gives the ``Commands`` made once the
    connection is up (the subscriber starts after that). A malformed command gets a permanent
    error reply, a crash a temporary one."""
    router = NatsRouter(middlewares=[error_replies(crashes, "scheduler")])

    @router.subscriber(subjects.schedules_all, queue=subjects.scheduler_queue)
    async def schedule_command(req: ScheduleRequest) -> ScheduleReply:
        current = commands()
        if current is None:
            raise TemporaryBusError("the scheduler is starting")
        return await current.answer(req)

    return router
