"""The schedule commands (request/reply on ``sleuth.schedules.<op>``, from the gateway).

Who sees and changes what:
- ``create`` in a person's private conversation (``conversation:<user>``, only that user) makes a
  schedule whose answers only they read; in a channel it needs the channel's readers
  (``members``), and its answers are fitted to every one of them (and to the owner).
- ``list`` in a private conversation shows the asker's own schedules (wherever they post); in a
  channel, the channel's. Nobody ever sees another person's private schedules.
- ``run``, ``delete``, ``pause``, ``resume``: the owner only. Someone else in the channel a
  schedule posts to is told who owns it; anywhere else the id is "not known here" (an id alone
  reveals nothing).
- Every command refreshes what the scheduler knows: the asker's groups on their schedules (the
  gateway authenticated them just now) and, in a channel, the readers of the channel's schedules.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable

from nats.aio.client import Client as Nats
from redis.exceptions import RedisError

from sleuth_common.audit import AuditLog
from sleuth_common.messages import (
    Requester,
    ScheduleInfo,
    ScheduleReply,
    ScheduleRequest,
    conversation_user,
)
from sleuth_common.subjects import Subjects
from sleuth_scheduler import compose
from sleuth_scheduler.bus import audit_log, publish_audit
from sleuth_scheduler.clock import Clock
from sleuth_scheduler.grammar import GrammarError, parse, upcoming, zone
from sleuth_scheduler.metrics import Metrics
from sleuth_scheduler.settings import Settings
from sleuth_scheduler.store import Schedule, Store, unique_members
from sleuth_scheduler.timing import jitter_of, next_after

__all__ = ["ID_ALPHABET", "Commands", "new_id"]

log = logging.getLogger(__name__)

ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
"""Schedule ids: lower-case letters and digits without look-alikes (l, o, 0, 1)."""
ID_LENGTH = 10
"""50 bits: unguessable enough that an id alone grants nothing (owners are checked anyway)."""

RunNow = Callable[[Schedule], Awaitable[str]]


def new_id() -> str:
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


def info(s: Schedule, now: float) -> ScheduleInfo:
    active = not (s.paused or s.disabled) and s.next is not None
    return ScheduleInfo(
        id=s.id, owner=s.owner.user, target=s.target, thread=s.thread, spec=s.timing.text, question=s.question,
        tz=s.timing.tz, next_runs=tuple(upcoming(s.timing, now, 3)) if active else (),
        paused=s.paused, failures=s.failures, disabled_reason=s.disabled,
    )


class Commands:
    def __init__(self, store: Store, settings: Settings, clock: Clock, nc: Nats, run_now: RunNow,
                 metrics: Metrics, audit: AuditLog | None = None) -> None:
        self.store = store
        self.metrics = metrics
        self.settings = settings
        self.cfg = settings.scheduler
        self.clock = clock
        self.nc = nc
        self.subjects = Subjects(settings.prefix)
        self.run_now = run_now
        self.audit = audit or audit_log(nc, settings)

    async def answer(self, req: ScheduleRequest) -> ScheduleReply:
        """The reply to one command (the subscriber is in ``handlers``); counted by op and ok."""
        try:
            reply = await self.handle(req)
        except (RedisError, OSError) as exc:
            log.warning("schedule command failed: %s", exc, extra={"op": req.op})
            reply = ScheduleReply(ok=False, text="The schedules are unavailable right now; try again shortly.")
        self.metrics.commands.labels(req.op, "true" if reply.ok else "false").inc()
        return reply

    async def handle(self, req: ScheduleRequest) -> ScheduleReply:
        if not req.user or not req.target or len(req.target) > 256 or len(req.user) > 256:
            return ScheduleReply(ok=False, text="malformed schedule command")
        private = conversation_user(req.target)
        if private is not None and private != req.user:
            return ScheduleReply(ok=False, text="That is someone else's private conversation.")
        await self._refresh(req, private is not None)
        if req.op == "create":
            return await self._create(req, private is not None)
        if req.op == "list":
            found = await (self.store.of_owner(req.user) if private is not None else self.store.of_target(req.target))
            now = self.clock()
            infos = tuple(info(s, now) for s in sorted(found, key=lambda s: (s.created, s.id)))
            return ScheduleReply(text=compose.listing(infos, private=private is not None), schedules=infos)
        return await self._act(req)

    async def _refresh(self, req: ScheduleRequest, private: bool) -> None:
        """The asker's groups as the gateway authenticated them now; the channel's readers."""
        mine = await self.store.of_owner(req.user)
        stale = [s.id for s in mine if set(s.owner.groups) != set(req.groups)]
        if stale:
            await self.store.set_groups(stale, req.groups)
        if not private and req.members:
            await self.store.set_members(req.target, self._readers(req))

    @staticmethod
    def _readers(req: ScheduleRequest) -> tuple[Requester, ...]:
        return unique_members((*req.members, Requester(user=req.user, groups=req.groups)))

    def _tz(self, req: ScheduleRequest) -> str:
        if req.tz:
            try:
                zone(req.tz)
                return req.tz
            except GrammarError:
                log.info("the gateway sent an unknown time zone %r; using default_tz", req.tz)
        return self.cfg.default_tz

    async def _create(self, req: ScheduleRequest, private: bool) -> ScheduleReply:
        if not private and not req.members:
            return ScheduleReply(ok=False, text=(
                "I cannot schedule here: this chat did not tell me who reads this channel, and what I post "
                "here must fit everyone who reads it. Nothing was scheduled."))
        now = self.clock()
        try:
            parsed = parse(req.text, now=now, default_tz=self._tz(req), min_interval=self.cfg.min_interval,
                           max_question_chars=self.cfg.max_question_chars)
        except GrammarError as e:
            return ScheduleReply(ok=False, text=str(e))
        sid = new_id()
        nxt = next_after(parsed.timing, now)
        members = () if private else self._readers(req)
        s = Schedule(id=sid, owner=Requester(user=req.user, groups=tuple(sorted(set(req.groups)))),
                     target=req.target, timing=parsed.timing, question=parsed.question, thread=req.thread,
                     members=members, created=now, next=nxt, what=parsed.what)
        due = None if nxt is None else nxt + jitter_of(sid, self.cfg.jitter)
        state = await self.store.create(s, due, max_user=self.cfg.max_per_user, max_target=self.cfg.max_per_target)
        if state == "user_full":
            return ScheduleReply(ok=False, text=(
                f"You have {self.cfg.max_per_user} schedules already, the most one person may have. "
                "`schedules` lists them; `unschedule <id>` deletes one."))
        if state == "target_full":
            return ScheduleReply(ok=False, text=(
                f"This {'conversation' if private else 'channel'} has {self.cfg.max_per_target} schedules "
                "already, the most it may hold."))
        if state != "created":
            return ScheduleReply(ok=False, text="That did not work; try again.")
        await self._audit("created", s, req)
        shown = info(s, now)
        text = compose.created(shown, private=private, members=len(members))
        return ScheduleReply(text=text, schedules=(shown,))

    async def _act(self, req: ScheduleRequest) -> ScheduleReply:
        sid = req.id.strip().strip("`").lower()
        s = await self.store.get(sid) if sid and len(sid) <= 64 else None
        if s is None or (s.owner.user != req.user and s.target != req.target):
            return ScheduleReply(ok=False, text=f"I know no schedule `{compose.plain(sid, 64)}` here. "
                                                "`schedules` lists the ones you can see.")
        verb = req.op
        now = self.clock()
        if s.owner.user != req.user:
            return ScheduleReply(ok=False, text=(
                f"Only **{compose.plain(s.owner.user, 80)}**, who made schedule `{s.id}`, can {verb} it."),
                schedules=(info(s, now),))
        if req.op == "delete":
            done = await self.store.delete(s, req.user)
            text = f"🗑 Deleted schedule `{s.id}` ({compose.plain(s.timing.text)}: “{compose.plain(s.question)}”)."
        elif req.op == "pause":
            done = await self.store.pause(s, req.user)
            text = f"⏸ Paused schedule `{s.id}`: nothing runs until `resume {s.id}`."
        elif req.op == "resume":
            nxt = next_after(s.timing, now)
            due = (nxt or 0) + jitter_of(s.id, self.cfg.jitter)
            done = await self.store.resume(s, req.user, nxt, due)
            s = await self.store.get(s.id) or s
            runs = ", ".join(compose.when(t) for t in upcoming(s.timing, now, 3)) or "none"
            text = f"▶️ Resumed schedule `{s.id}`. Next runs: {runs}."
        else:
            await self.run_now(s)
            done = True
            where = "in your private conversation" if conversation_user(s.target) else (
                "here" if s.target == req.target else "in the channel it posts to")
            what = "report" if s.what == "report" else "answer"
            text = f"▶️ Running schedule `{s.id}` now; the {what} will be posted {where}."
        if not done:
            return ScheduleReply(ok=False, text="That did not work; try again.")
        if req.op != "run":
            await self._audit(req.op, s, req)
        latest = await self.store.get(s.id)
        return ScheduleReply(text=text, schedules=(info(latest, now),) if latest else ())

    async def _audit(self, op: str, s: Schedule, req: ScheduleRequest) -> None:
        await publish_audit(self.audit, op, schedule=s.id, user=req.user, groups=req.groups, owner=s.owner.user)
