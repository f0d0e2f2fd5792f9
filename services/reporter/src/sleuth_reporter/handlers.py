"""Bus edges: ``<prefix>.reports.<op>`` (request/reply, queue group ``reporter``), the report
commands from the gateway and the scheduler (``Commands``)."""

from __future__ import annotations

from collections.abc import Callable

from faststream.nats import NatsRouter
from faststream.nats.annotations import NatsMessage
from prometheus_client import Counter

from sleuth_common.bus import TemporaryBusError, error_replies
from sleuth_common.messages import ReportReply, ReportRequest
from sleuth_common.subjects import Subjects
from sleuth_reporter.commands import Commands

__all__ = ["build_router"]


def build_router(commands: Callable[[], Commands | None], subjects: Subjects, *,
                 crashes: Counter | None = None) -> NatsRouter:
    """The commands, one at a time per replica; ``commands`` gives the ``Commands`` made once the
    connection is up (the subscriber starts after that). A malformed command gets a permanent
    error reply, a crash a temporary one."""
    router = NatsRouter(middlewares=[error_replies(crashes, "reporter")])

    @router.subscriber(subjects.reports_all, queue=subjects.reporter_queue)
    async def report_command(req: ReportRequest, message: NatsMessage) -> ReportReply:
        current = commands()
        if current is None:
            raise TemporaryBusError("the reporter is starting")
        return await current.answer(req, message.raw_message.subject.rsplit(".", 1)[-1])

    return router
