"""A report schedule's run: a ``ReportRequest`` to the reporter instead of an investigation job.

The reporter makes the report (through the agent, over what every reader of the target may
read) and posts it itself, so the run ends as soon as the reporter has answered the request:
``report_started`` when it took it (or a report for the target was already running), a failure
when it refused (``report_refused``) or did not answer within ``publish_timeout``
(``report_no_answer``). The request carries the owner's groups of their last command and, in a
channel, the stored readers with the owner among them; in a private conversation it carries no
members (the reporter refuses members there).
"""

from __future__ import annotations

import logging

from nats.aio.client import Client as Nats

from sleuth_common.bus import PermanentBusError, TemporaryBusError, request
from sleuth_common.messages import ReportReply, ReportRequest, conversation_user
from sleuth_common.subjects import Subjects
from sleuth_scheduler.store import Run, unique_members

__all__ = ["REPORT_FAILED", "ask_reporter", "report_request"]

log = logging.getLogger(__name__)

REPORT_FAILED = {
    "report_refused": "the reporter refused the report",
    "report_no_answer": "the reporter did not answer",
}
"""Outcomes of a report run that count as a failure, and how the owner is told."""


def report_request(run: Run) -> ReportRequest:
    private = conversation_user(run.target) is not None
    members = () if private else unique_members((run.owner, *run.audience))
    return ReportRequest(op="run", user=run.owner.user, groups=run.owner.groups, target=run.target,
                         thread=run.thread, members=members, emails=None)


async def ask_reporter(nc: Nats, subjects: Subjects, run: Run, wait: float) -> tuple[str, str]:
    """Ask for ``run``'s report: (outcome, the reporter's text) — ``report_started``,
    ``report_refused`` or ``report_no_answer``."""
    try:
        reply = await request(nc, subjects.reports("run"), report_request(run), ReportReply, wait=wait,
                              service="the reporter")
    except PermanentBusError as exc:
        if exc.reason == "invalid_request":  # the reporter could not read the request
            log.info("the reporter refused a scheduled report: %s", exc, extra={"job_id": run.job})
            return "report_refused", str(exc)
        log.error("the reporter's answer could not be read: %s", exc, extra={"job_id": run.job})
        return "report_no_answer", ""
    except TemporaryBusError as exc:
        log.warning("the reporter did not answer a scheduled report: %s", exc, extra={"job_id": run.job})
        return "report_no_answer", ""
    if not reply.ok:
        log.info("the reporter refused a scheduled report: %s", reply.text, extra={"job_id": run.job})
        return "report_refused", reply.text
    log.info("scheduled report started", extra={"job_id": run.job, "report": reply.id})
    return "report_started", reply.text
