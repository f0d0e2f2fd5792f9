"""From a run's answer (``sleuth.jobs.done.<job>``) to one chat post, and the failure count.

Every replica subscribes, in queue group ``scheduler``, to the done subject of every run that is
waiting for its answer (``Store.waiting``: the runs in Redis, whoever started them), so one
replica posts each answer even when the one that started the run has died since. The post's id
is ``schedule-<job>``: the answer, or the note that none came, is shown once (the CHAT stream
and the gateway keep one post per id).

A run fails when its answer says ``error`` or ``denied``, or none arrives by the deadline plus
``answer_grace``; ``max_failures`` in a row disable the schedule, and its owner is told why in the
chat the schedule posts to. Any other answer (``diagnosed``, ``healthy``,
``insufficient_evidence``) resets the count.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging

from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from pydantic import ValidationError
from redis.exceptions import RedisError

from sleuth_common.audit import AuditLog
from sleuth_common.channels import audience_claims
from sleuth_common.messages import ChatPost, InvestigationResult
from sleuth_common.subjects import Subjects
from sleuth_scheduler import compose
from sleuth_scheduler.bus import audit_log, publish_audit, publish_post
from sleuth_scheduler.clock import Clock
from sleuth_scheduler.metrics import Metrics
from sleuth_scheduler.reports import REPORT_FAILED
from sleuth_scheduler.settings import Settings
from sleuth_scheduler.store import Run, Store

__all__ = ["FAILED", "Answers", "post_id"]

log = logging.getLogger(__name__)

FAILED = {
    "error": "the investigation ended with an error",
    "denied": "the investigation was refused",
    "no_answer": "no answer arrived before the deadline",
    **REPORT_FAILED,
}
"""Outcomes that count as a failed run, and how the owner is told about them."""


def post_id(job: str) -> str:
    return f"schedule-{job}"


class Answers:
    def __init__(self, nc: Nats, store: Store, settings: Settings, metrics: Metrics, clock: Clock,
                 audit: AuditLog | None = None) -> None:
        self.nc = nc
        self.audit = audit or audit_log(nc, settings)
        self.js: JetStreamContext = nc.jetstream(timeout=settings.scheduler.publish_timeout)
        self.store = store
        self.settings = settings
        self.cfg = settings.scheduler
        self.metrics = metrics
        self.clock = clock
        self.subjects = Subjects(settings.prefix)
        self._subs: dict[str, tuple[Subscription, int]] = {}
        self._seq = itertools.count()

    # ------------------------------------------------------------------ subscriptions
    async def watch(self, job: str) -> None:
        """Listen for ``job``'s answer (before its job is published: an answer never comes first)."""
        if job not in self._subs:
            sub = await self.nc.subscribe(self.subjects.jobs_done(job), queue=self.subjects.scheduler_queue,
                                          cb=self._on_msg)
            self._subs[job] = (sub, next(self._seq))

    async def sync(self) -> None:
        """Listen for every run waiting in Redis; stop listening for the others (answered, or
        gone). A job watched after the look at Redis is left alone."""
        mark = next(self._seq)
        waiting = await self.store.waiting()
        for job in waiting - set(self._subs):
            await self.watch(job)
        for job in [j for j, (_, seq) in self._subs.items() if j not in waiting and seq < mark]:
            await self._forget(job)

    async def _forget(self, job: str) -> None:
        entry = self._subs.pop(job, None)
        if entry is not None:
            with contextlib.suppress(NatsError):
                await entry[0].unsubscribe()

    async def close(self) -> None:
        for job in list(self._subs):
            await self._forget(job)

    @property
    def watching(self) -> int:
        return len(self._subs)

    # ------------------------------------------------------------------ answers
    async def _on_msg(self, msg: Msg) -> None:
        job = msg.subject.rsplit(".", 1)[-1]
        try:
            result = InvestigationResult.model_validate_json(msg.data)
        except ValidationError:
            log.error("dropped a malformed investigation result", extra={"job_id": job})
            return
        try:
            await self.handle(job, result)
        except (RedisError, OSError, NatsError, TimeoutError) as exc:
            # The run stays waiting in Redis: past its deadline it is reported as not answered.
            log.warning("could not post a schedule's answer: %s", exc, extra={"job_id": job})

    async def handle(self, job: str, result: InvestigationResult) -> None:
        run = await self.store.run(job)
        if run is None or run.done:
            await self._forget(job)
            return
        await self._post(run, compose.answer(run.header, result), result.status)
        if await self._finish(run, result.status) == "disabled":
            await self._disabled(run, result.status)
        await self._forget(job)
        log.info("schedule answer posted", extra={"job_id": job, "schedule": run.schedule, "status": result.status})

    async def no_answer(self, run: Run) -> None:
        """The run's deadline passed without an answer: count it, then say so (once)."""
        state = await self._finish(run, "no_answer")
        if state in ("first", "disabled"):
            await self._post(run, compose.no_answer(run.header, FAILED["no_answer"]), "no_answer")
        if state == "disabled":
            await self._disabled(run, "no_answer")
        await self._forget(run.job)

    async def report_outcome(self, run: Run, outcome: str, text: str) -> None:
        """A report run ended when the reporter answered (or did not): count it; on a failure
        say so where the schedule posts (the reporter posts the report itself)."""
        state = await self._finish(run, outcome)
        if outcome in FAILED and state in ("first", "disabled"):
            await self._post(run, compose.report_failed(run.header, FAILED[outcome], text), outcome)
        if state == "disabled":
            await self._disabled(run, outcome)

    async def _finish(self, run: Run, outcome: str) -> str:
        """Record ``outcome`` once (``Store.finish``'s state: ``first`` or ``disabled`` when this
        call recorded it)."""
        failed = outcome in FAILED
        state = await self.store.finish(run, outcome, failed=failed, max_failures=self.cfg.max_failures,
                                        reason=FAILED.get(outcome, ""), now=self.clock())
        if state in ("first", "disabled"):
            self.metrics.runs.labels(outcome).inc()
        return state

    async def _disabled(self, run: Run, outcome: str) -> None:
        """Tell the owner, where the schedule posts, that it stopped and why."""
        self.metrics.disabled.inc()
        log.warning("schedule disabled after %d failed runs", self.cfg.max_failures,
                    extra={"schedule": run.schedule, "owner": run.owner.user})
        text = compose.disabled(run.schedule, run.owner.user, self.cfg.max_failures, FAILED[outcome])
        post = ChatPost(id=f"schedule-disabled-{run.job}", target=run.target, text=text, origin="schedule",
                        meta={"schedule": run.schedule, "thread": run.thread, "owner": run.owner.user,
                              "notify": "owner", "outcome": "disabled"})
        await publish_post(self.js, self.subjects, post, self.cfg.publish_timeout)
        await publish_audit(self.audit, "disabled", schedule=run.schedule, user="scheduler", owner=run.owner.user)

    async def _post(self, run: Run, text: str, outcome: str) -> None:
        """The run's one post, fitted to (and only for) the owner and the readers it ran for."""
        readers = json.dumps(list(audience_claims((run.owner, *run.audience))))
        post = ChatPost(
            id=post_id(run.job), target=run.target, text=text, origin="schedule",
            meta={"schedule": run.schedule, "job": run.job, "thread": run.thread, "readers": readers,
                  "owner": run.owner.user, "outcome": outcome},
        )
        await publish_post(self.js, self.subjects, post, self.cfg.publish_timeout)
