"""``<prefix>.reports.<op>`` (request/reply, queue group ``reporter``): the gateway's ``report``
commands. ``run`` checks who reads the target, records the report and queues it on REPORTS,
and answers at once with its id; ``status`` answers how far a report is, to its readers only."""

from __future__ import annotations

import json
import logging
import secrets

from nats.aio.client import Client as Nats
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from redis.exceptions import RedisError

from sleuth_common.audit import AuditLog
from sleuth_common.bus import PermanentBusError
from sleuth_common.channels import audience_claims
from sleuth_common.messages import ReportReply, ReportRequest, ReportTask, Requester, conversation_user
from sleuth_common.messages.audit import ReportRequested
from sleuth_common.subjects import Subjects
from sleuth_reporter import compose
from sleuth_reporter.metrics import Metrics
from sleuth_reporter.settings import Settings
from sleuth_reporter.store import Store

__all__ = ["Commands", "readers_of", "reads"]

log = logging.getLogger(__name__)

_MAX_TARGET = 300


class _Refused(Exception):
    pass


def reads(readers: list[str], user: str, groups: tuple[str, ...]) -> bool:
    """Whether ``user`` (with ``groups``) is among ``readers`` (``audience_claims``): by name, or
    through every group of a group entry (``|team-a``)."""
    for claim in readers:
        name, _, entry_groups = str(claim).partition("|")
        if name and name == user:
            return True
        if not name and entry_groups and set(entry_groups.split(",")) <= set(groups):
            return True
    return False


def readers_of(req: ReportRequest) -> tuple[Requester, ...]:
    """Everyone the report's posts are fitted to: the asker, then the members."""
    return (Requester(user=req.user, groups=req.groups), *req.members)


class Commands:
    def __init__(self, nc: Nats, js: JetStreamContext, store: Store, settings: Settings, metrics: Metrics,
                 audit: AuditLog | None = None) -> None:
        self.nc = nc
        if audit is None:  # commands built alone (tests); the app passes its own
            audit = AuditLog(Subjects(settings.prefix), "reporter", settings.audit)
            audit.bind_nats(nc)
        self.audit = audit
        self.js = js
        self.store = store
        self.settings = settings
        self.cfg = settings.reporter
        self.metrics = metrics
        self.subjects = Subjects(settings.prefix)

    async def answer(self, req: ReportRequest, op: str) -> ReportReply:
        """The reply to one command sent on ``reports.<op>`` (the subscriber is in ``handlers``); a
        request naming another op is refused as malformed (``PermanentBusError``)."""
        if req.op != op:
            self.metrics.requests.labels(op[:16], "malformed").inc()
            raise PermanentBusError(f"op {req.op!r} sent on {op[:16]!r}")
        try:
            return await (self.run(req) if op == "run" else self.status(req))
        except _Refused as e:
            self.metrics.requests.labels(op, "refused").inc()
            return ReportReply(ok=False, text=str(e))
        except (RedisError, NatsError, OSError, TimeoutError) as exc:
            log.warning("report %s failed: %s", op, exc)
            self.metrics.requests.labels(op, "unavailable").inc()
            return ReportReply(ok=False, text="Reports are unavailable right now; try again shortly.")

    def _check(self, req: ReportRequest) -> tuple[str, ...]:
        """Refuse what cannot be posted safely; the addresses the report is emailed to."""
        if not req.user:
            raise _Refused("A report needs to know who asked.")
        if not req.target or len(req.target) > _MAX_TARGET or ":" not in req.target:
            raise _Refused("A report needs a chat target to be posted to.")
        owner = conversation_user(req.target)
        if owner is not None:
            if owner != req.user or any(m.user != req.user for m in req.members):
                raise _Refused("A report can be posted in your own conversation with Sleuth only.")
        elif not req.members:
            raise _Refused("I cannot tell who reads this channel, so a report here could show someone more "
                           "than they may read. Ask in a channel Sleuth knows the members of, or in your "
                           "conversation with Sleuth.")
        configured = self.cfg.addresses(req.target)
        if req.emails is None:
            return tuple(configured)
        unknown = [e for e in req.emails if e not in configured]
        if unknown:
            raise _Refused(f"{', '.join(unknown[:3])} is not an address reports of this channel may be sent to "
                           "(the operator sets them in `reporter.emails`).")
        return tuple(dict.fromkeys(req.emails))

    async def run(self, req: ReportRequest) -> ReportReply:
        emails = self._check(req)
        report_id = secrets.token_hex(6)
        hold = self.cfg.report_timeout + self.cfg.answer_grace + self.cfg.ack_wait
        active = await self.store.claim_active(req.target, report_id, hold)
        if active != report_id:
            current = await self.store.get(active)
            if current is not None and current.state in ("queued", "running"):
                self.metrics.requests.labels("run", "running").inc()
                return ReportReply(text=compose.already_running(active), id=active, report=current.info())
            await self.store.release_active(req.target, active)  # a leftover of a report that ended
            active = await self.store.claim_active(req.target, report_id, hold)
            if active != report_id:
                return ReportReply(text=compose.already_running(active), id=active)
        task = ReportTask(id=report_id, request=req, emails=emails)
        readers = json.dumps(list(audience_claims(readers_of(req))))
        await self.store.create(task, readers)
        try:
            await self.js.publish(self.subjects.reports_queued(report_id), task.to_bytes(),
                                  stream=self.subjects.stream_reports, timeout=self.cfg.publish_timeout,
                                  headers={"Nats-Msg-Id": report_id})
        except (NatsError, TimeoutError):
            await self.store.forget(report_id, req.target)
            raise
        self.metrics.requests.labels("run", "started").inc()
        await self.audit.emit(ReportRequested(
            report=report_id, user=req.user, groups=req.groups, entry="bus", decision="allowed",
            counts={"readers": len(req.members) or 1, "emails": len(emails)},
        ))
        log.info("report queued", extra={"report": report_id, "user": req.user, "target": req.target})
        return ReportReply(text=compose.started(report_id, len(emails)), id=report_id)

    async def status(self, req: ReportRequest) -> ReportReply:
        report_id = req.id or await self.store.last(req.target)
        rec = await self.store.get(report_id) if report_id else None
        if rec is None or not (rec.owner == req.user or reads(json.loads(rec.readers or "[]"), req.user, req.groups)):
            # Someone else's report is as unknown as one that never was.
            self.metrics.requests.labels("status", "unknown").inc()
            which = f"`{req.id}`" if req.id else "made here"
            return ReportReply(ok=False, text=f"I know of no report {which} that you read.")
        self.metrics.requests.labels("status", "shown").inc()
        return ReportReply(text=compose.status_text(rec.info()), id=rec.id, report=rec.info())
