"""Due occurrences → investigation jobs, exactly once across replicas.

Every replica ticks (``scheduler.tick``) and:

1. takes the schedules whose next occurrence plus jitter has come (``<p>:due``) in small
   batches, each leased to it for ``claim_timeout`` seconds in the same Redis script (replicas
   share the work and never look at one schedule at once; a replica that dies holding a lease
   leaves those schedules due again when it ends), up to ``concurrency`` at a time;
2. for each, finds the newest occurrence that has come (``timing.catch_up``): when it is later
   than ``grace``, it and every older one are skipped and counted; otherwise it is fired once and
   the older ones (an outage) are counted as skipped — one run on recovery, never one per missed
   occurrence;
3. claims it in one Redis script: ``SET NX`` of ``<p>:fired:<id>:<occurrence>`` (with a TTL),
   compare-and-set of the schedule's next occurrence, the run recorded as pending. Only the
   replica whose script succeeds goes on;
4. listens for the answer, signs the owner's identity (issuer ``sleuth-scheduler``, naming the
   job and the readers), publishes the job on JOBS and moves the run to "waiting for its answer";
5. publishes again any run claimed more than ``claim_timeout`` ago and never published (its
   replica died between 3 and 4; one replica takes it over atomically), reports runs past their
   deadline as not answered, and keeps its answer subscriptions in step with Redis.

A replica killed at any point loses nothing that matters: the schedule's next occurrence was
moved on in the same script that claimed this one (so the next occurrence fires whoever is
alive); a claimed run that was not published is published by another replica after
``claim_timeout``; a published run's answer is posted by whichever replica receives it (all
listen), and one that arrives while no replica runs is reported as "no answer" after the deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time

from nats.aio.client import Client as Nats
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from redis.exceptions import RedisError

from sleuth_common.channels import audience_claims
from sleuth_common.identity import IdentityError, IdentitySigner
from sleuth_common.messages import InvestigationJob
from sleuth_common.messages.audit import ScheduleFired
from sleuth_common.subjects import Subjects
from sleuth_scheduler import compose
from sleuth_scheduler.answers import Answers
from sleuth_scheduler.bus import publish_job
from sleuth_scheduler.clock import Clock
from sleuth_scheduler.metrics import Metrics
from sleuth_scheduler.reports import ask_reporter
from sleuth_scheduler.settings import Settings
from sleuth_scheduler.store import Run, Schedule, Store
from sleuth_scheduler.timing import catch_up, jitter_of, next_after

__all__ = ["SCHEDULER_ISSUER", "Firer", "job_id"]

log = logging.getLogger(__name__)

SCHEDULER_ISSUER = "sleuth-scheduler"
"""Issuer of the job assertions the scheduler signs for a schedule's owner (``identity.job_issuers``)."""

TEMPORARY = (RedisError, OSError, NatsError, TimeoutError)


def job_id(schedule_id: str, occurrence: int) -> str:
    """The job of one occurrence: the same on every replica, so the JOBS stream and the agent keep
    one copy even if it were published twice."""
    return f"s-{schedule_id}-{occurrence}"


class Firer:
    def __init__(self, nc: Nats, store: Store, settings: Settings, metrics: Metrics, clock: Clock,
                 answers: Answers, signer: IdentitySigner | None) -> None:
        self.nc = nc
        self.js: JetStreamContext = nc.jetstream(timeout=settings.scheduler.publish_timeout)
        self.store = store
        self.settings = settings
        self.cfg = settings.scheduler
        self.metrics = metrics
        self.clock = clock
        self.answers = answers
        self.signer = signer
        self.subjects = Subjects(settings.prefix)
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._stopping.clear()
        self._task = asyncio.create_task(self._loop(), name="scheduler-tick")

    async def stop(self) -> None:
        self._stopping.set()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, 5.0)

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                await self.tick()
            except TEMPORARY as exc:
                log.warning("schedules could not be checked: %s", exc)
            # At the latest one tick after the last began (a long tick is followed by the next at
            # once), earlier when a schedule falls due before that.
            wait = max(0.0, self.cfg.tick - (time.monotonic() - started))
            with contextlib.suppress(*TEMPORARY):
                earliest = await self.store.earliest_due()
                if earliest is not None:
                    wait = min(wait, max(0.005, self.clock.real_seconds(earliest - self.clock())))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), wait)

    # ------------------------------------------------------------------ one tick
    async def tick(self) -> None:
        """Fire what is due (taken from Redis in leased batches, so replicas share the work and
        never look at the same schedule at once), publish stale claims, report overdue runs."""
        gate = asyncio.Semaphore(max(1, self.cfg.concurrency))

        async def one(sid: str) -> None:
            async with gate:
                try:
                    await self.fire(sid)
                except TEMPORARY as exc:
                    log.warning("schedule could not be fired (again when its lease ends): %s", exc,
                                extra={"schedule": sid})

        taken, limit = 0, max(1, self.cfg.concurrency) * 2
        while taken < self.cfg.batch and not self._stopping.is_set():
            due = await self.store.take_due(self.clock(), self.cfg.claim_timeout, limit)
            if not due:
                break
            taken += len(due)
            await asyncio.gather(*(one(sid) for sid in due))
        await self._stale_claims()
        for job in await self.store.overdue(self.clock()):
            run = await self.store.run(job)
            if run is None:
                await self.store.forget(job)
            else:
                await self.answers.no_answer(run)
        await self.answers.sync()
        self.metrics.active.set(await self.store.active())

    async def fire(self, sid: str) -> bool:
        """Fire ``sid``'s due occurrence if this replica claims it; True when it did."""
        s = await self.store.get(sid)
        if s is None or not s.owner.user or not s.readable:
            if s is not None:
                log.error("schedule cannot run (its stored owner or readers are unreadable)", extra={"schedule": sid})
            await self.store.remove_due(sid)
            return False
        if s.next is None or s.paused or s.disabled:
            await self.store.remove_due(sid)
            return False
        jitter = jitter_of(s.id, self.cfg.jitter)
        now = self.clock()
        if s.next + jitter > now:  # not due after all (the jitter setting changed): put it back
            await self.store.set_due(s.id, s.next + jitter)
            return False
        occurrence, passed = catch_up(s.timing, s.next, now, jitter)
        nxt = next_after(s.timing, occurrence)
        due = (nxt or 0) + jitter
        late = now - (occurrence + jitter)
        if late > self.cfg.grace:
            if await self.store.claim(s, occurrence, nxt, due, skipped=passed + 1, run=None, now=now):
                self.metrics.runs.labels("skipped").inc(passed + 1)
                log.info("schedule missed %d occurrence(s) by more than the grace; skipped", passed + 1,
                         extra={"schedule": s.id})
            return False
        run = self._run(s, occurrence, manual=False)
        if not await self.store.claim(s, occurrence, nxt, due, skipped=passed, run=run, now=now):
            return False
        if passed:
            self.metrics.runs.labels("skipped").inc(passed)
            log.info("schedule missed %d occurrence(s); running the newest once", passed + 1,
                     extra={"schedule": s.id})
        await self.publish(run, scheduled_at=occurrence + jitter)
        return True

    async def run_now(self, s: Schedule) -> str:
        """``run <id>``: one run now, beside the schedule's own."""
        run = self._run(s, int(self.clock()), manual=True)
        await self.store.start_run(run, self.clock())
        await self.publish(run)
        return run.job

    def _run(self, s: Schedule, occurrence: int, *, manual: bool) -> Run:
        job = f"s-{s.id}-r{secrets.token_hex(4)}" if manual else job_id(s.id, occurrence)
        return Run(job=job, schedule=s.id, occurrence=occurrence, owner=s.owner, audience=s.audience(),
                   target=s.target, thread=s.thread, question=s.question,
                   header=compose.header(s.id, s.timing.describe(), s.question), manual=manual, what=s.what)

    async def _stale_claims(self) -> None:
        now = self.clock()
        for job, claimed_at in await self.store.stale_claims(now - self.cfg.claim_timeout):
            if not await self.store.take_over(job, claimed_at, now):
                continue
            run = await self.store.run(job)
            if run is None or run.done:
                await self.store.forget(job)
                continue
            log.warning("publishing a run another replica claimed and did not publish", extra={"job_id": job})
            await self.publish(run)

    # ------------------------------------------------------------------ the job
    def _identity(self, run: Run) -> str:
        if self.signer is None:
            return ""
        try:
            return self.signer.mint(run.owner.user, run.owner.groups, audience=self.settings.identity.job_audience,
                                    job=run.job, members=audience_claims(run.audience))
        except IdentityError as e:
            log.warning("cannot sign the schedule owner's identity: %s", e, extra={"job_id": run.job})
            return ""

    async def publish(self, run: Run, *, scheduled_at: float | None = None) -> bool:
        """Put ``run``'s job on JOBS; False when that failed (it stays claimed, and is published
        again after ``claim_timeout``). A report run asks the reporter instead and ends with
        its answer (``reports``)."""
        if run.what == "report":
            return await self._ask_reporter(run, scheduled_at)
        await self.answers.watch(run.job)
        job = InvestigationJob(
            id=run.job, origin="schedule", requester=run.owner, question=run.question,
            deadline=time.time() + self.clock.real_seconds(self.cfg.investigation_timeout), unattended=True,
            reply_subject=self.subjects.jobs_done(run.job), chat_target=run.target, audience=run.audience,
            identity=self._identity(run),
        )
        try:
            ack = await publish_job(self.js, self.subjects, job, self.cfg.publish_timeout)
        except (NatsError, TimeoutError) as exc:
            self.metrics.runs.labels("publish_failed").inc()
            log.warning("could not publish a schedule's job (published later): %s", exc, extra={"job_id": run.job})
            return False
        now = self.clock()
        self.metrics.runs.labels("duplicate" if ack.duplicate else "published").inc()
        if scheduled_at is not None:
            self.metrics.lateness.observe(max(0.0, now - scheduled_at))
        await self.store.published(run.job, now + self.cfg.investigation_timeout + self.cfg.answer_grace)
        if not ack.duplicate:
            await self.answers.audit.emit(ScheduleFired(
                schedule=run.schedule, owner=run.owner.user, user=run.owner.user, groups=run.owner.groups,
                entry="schedule", job_id=run.job, decision="allowed", reason="manual" if run.manual else "",
                counts={"readers": len(run.audience) + 1},
            ))
        log.info("schedule run published", extra={"job_id": run.job, "schedule": run.schedule})
        return True

    async def _ask_reporter(self, run: Run, scheduled_at: float | None) -> bool:
        outcome, text = await ask_reporter(self.nc, self.subjects, run, self.cfg.publish_timeout)
        await self.answers.audit.emit(ScheduleFired(
            schedule=run.schedule, owner=run.owner.user, user=run.owner.user, groups=run.owner.groups,
            entry="schedule", job_id=run.job, report=run.job,
            decision="allowed" if outcome == "report_started" else "error", reason=outcome,
            counts={"readers": len(run.audience) + 1},
        ))
        if scheduled_at is not None:
            self.metrics.lateness.observe(max(0.0, self.clock() - scheduled_at))
        await self.answers.report_outcome(run, outcome, text)
        return outcome == "report_started"
