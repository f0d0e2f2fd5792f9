"""Making and delivering one report, from the REPORTS queue (durable consumer ``reporter``, shared
by every replica; at most ``concurrency`` at once per process; "in progress" signalled while it
works, so JetStream gives a report to another replica only when this one stopped answering).

One task, in steps that each survive a crash of the replica doing it (the state is in Redis,
``store``):

1. **ask the agent** (``asking``) unless its answer is already stored; no answer by the deadline
   → a "did not finish" post, and the report is over;
2. **post** the summary (``report-<id>``) and, when the summary does not write out every finding,
   the full list (``report-<id>-all``) to the target, in its thread, each naming its readers
   (``meta["readers"]``); a post id is shown once however often it is published;
3. **email** it, once per report (a lease in Redis, then ``sent``). A failed send is retried by
   handing the task back to JetStream with a growing delay (``email_backoff``, doubling, at most
   ``email_backoff_max``), up to ``email_attempts`` tries or a permanent refusal; then one notice
   in the thread (``report-<id>-email``) says the email was not sent.

The task is acked when all of that is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from typing import Any

from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig
from pydantic import ValidationError
from redis.exceptions import RedisError

from sleuth_common.audit import AuditLog
from sleuth_common.messages import ChatPost, InvestigationResult, ReportTask
from sleuth_common.messages.audit import ReportSent
from sleuth_common.subjects import Subjects
from sleuth_common.tracing import consumed
from sleuth_reporter import compose
from sleuth_reporter.asking import AgentClient
from sleuth_reporter.bus import publish_post
from sleuth_reporter.mail import Mailer, MailError, report_email
from sleuth_reporter.metrics import Metrics
from sleuth_reporter.settings import Settings
from sleuth_reporter.store import Record, Store

__all__ = ["ReportWorker", "post_id"]

log = logging.getLogger(__name__)

_TEMPORARY = (RedisError, NatsError, OSError, TimeoutError)


def post_id(report_id: str, part: str = "") -> str:
    return f"report-{report_id}-{part}" if part else f"report-{report_id}"


class ReportWorker:
    def __init__(self, nc: Nats, js: JetStreamContext, store: Store, settings: Settings, metrics: Metrics,
                 agent: AgentClient, mailer: Mailer, *, fetch_timeout: float = 1.0,
                 audit: AuditLog | None = None) -> None:
        self.nc = nc
        if audit is None:  # a worker built alone (tests); the app passes its own
            audit = AuditLog(Subjects(settings.prefix), "reporter", settings.audit)
            audit.bind_nats(nc)
        self.audit = audit
        self.js = js
        self.store = store
        self.settings = settings
        self.cfg = settings.reporter
        self.metrics = metrics
        self.agent = agent
        self.mailer = mailer
        self.subjects = Subjects(settings.prefix)
        self.fetch_timeout = fetch_timeout
        self._slots = asyncio.Semaphore(max(1, self.cfg.concurrency))
        self._running: set[asyncio.Task[None]] = set()
        self._loop: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._sub: Any = None

    # ------------------------------------------------------------------ the queue
    async def start(self) -> None:
        s = self.subjects
        config = ConsumerConfig(
            durable_name=s.reporter_durable, ack_policy=AckPolicy.EXPLICIT, ack_wait=self.cfg.ack_wait,
            max_deliver=-1, max_ack_pending=-1, filter_subject=s.reports_queued_all,
        )
        # Stays a hand-written nats-py loop, not a FastStream subscriber: FastStream 0.7.8's concurrent
        # pull subscriber fetches before a worker slot is free and holds what it fetched (no in-progress
        # heartbeats), so a busy replica would sit on work others could run (sleuth_common.bus, "JetStream").
        self._sub = await self.js.pull_subscribe(s.reports_queued_all, durable=s.reporter_durable,
                                                 stream=s.stream_reports, config=config)
        self._loop = asyncio.create_task(self._pull(), name="reporter-pull")

    @property
    def busy(self) -> int:
        return len(self._running)

    async def stop(self, grace: float = 5.0) -> None:
        """Stop pulling; give running reports ``grace`` seconds, then hand them back to JetStream
        (another replica picks them up at once)."""
        self._stopping.set()
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._loop, 5.0)
        if self._running:
            _done, pending = await asyncio.wait(self._running, timeout=grace)
            for t in pending:
                t.cancel()
            for t in pending:
                with contextlib.suppress(asyncio.CancelledError):
                    await t
        if self._sub is not None:
            with contextlib.suppress(NatsError):
                await self._sub.unsubscribe()

    async def _pull(self) -> None:
        while not self._stopping.is_set():
            await self._slots.acquire()
            try:
                msgs = await self._sub.fetch(1, timeout=self.fetch_timeout)
            except (NatsTimeout, TimeoutError):
                self._slots.release()
                continue
            except NatsError as exc:
                self._slots.release()
                log.warning("fetching reports failed: %s", exc)
                await asyncio.sleep(1.0)
                continue
            except BaseException:
                self._slots.release()
                raise
            for msg in msgs:
                task = asyncio.create_task(self._process(msg))
                self._running.add(task)
                task.add_done_callback(self._running.discard)

    async def _process(self, msg: Msg) -> None:
        try:
            with consumed(msg, "run report"):
                await self._process_one(msg)
        finally:
            self._slots.release()

    async def _process_one(self, msg: Msg) -> None:
        try:
            task = ReportTask.model_validate_json(msg.data)
        except ValidationError:
            log.error("dropped a malformed report task")
            with contextlib.suppress(NatsError):
                await msg.term()
            return
        heartbeat = asyncio.create_task(self._heartbeat(msg))
        try:
            retry = await self.make(task)
        except _TEMPORARY as exc:
            log.warning("report left for a retry: %s", exc, extra={"report": task.id})
            retry = 2.0
        except asyncio.CancelledError:
            with contextlib.suppress(NatsError, TimeoutError):
                await asyncio.shield(msg.nak())  # stopping: to another replica now, not after ack_wait
            raise
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        with contextlib.suppress(NatsError, TimeoutError):
            if retry is None:
                await msg.ack_sync(timeout=5)
            else:
                await msg.nak(delay=retry)

    async def _heartbeat(self, msg: Msg) -> None:
        interval = max(0.2, min(self.cfg.in_progress_interval, self.cfg.ack_wait / 2))
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(NatsError, TimeoutError):
                await msg.in_progress()

    # ------------------------------------------------------------------ one report
    async def make(self, task: ReportTask) -> float | None:
        """Take ``task`` as far as it goes: None when it is over (ack), else seconds until it
        should be tried again (an email to retry)."""
        rec = await self.store.get(task.id)
        if rec is None:
            log.warning("report task without a record (expired?); dropped", extra={"report": task.id})
            return None
        if rec.state in ("done", "failed"):
            return None
        result = rec.result
        if result is None and not rec.posted:
            await self.store.update(task.id, state="running")
            result = await self.agent.ask(task)
            if result is None:
                await self._not_finished(task, rec)
                return None
            await self.store.save_result(task.id, result)
        if result is None:  # posted, but its answer is gone (another version wrote it): nothing to email
            await self.store.finish(task.id, "done")
            return None
        if not rec.posted:
            await self._post_report(task, rec, result)
        return await self._email(task, rec, result)

    async def _post(self, rec: Record, part: str, text: str, **meta: str) -> None:
        post = ChatPost(
            id=post_id(rec.id, part), target=rec.target, text=text, origin="report",
            meta={"report": rec.id, "part": part or "summary", "thread": rec.thread, "readers": rec.readers, **meta},
        )
        await publish_post(self.js, self.subjects, post, self.cfg.publish_timeout)

    async def _post_report(self, task: ReportTask, rec: Record, result: InvestigationResult) -> None:
        r = result.report
        status = r.status if r is not None else ("denied" if result.status == "denied" else "error")
        emails = len(task.emails) if self._emails_it(task, result) else 0
        await self._post(rec, "", compose.summary(task.id, result, emails), status=status)
        full = compose.every_finding(task.id, r, self.cfg.full_list_chars, emailed=bool(emails)) if r else None
        if full:
            await self._post(rec, "all", full, status=status, reply_to=post_id(task.id))
        if await self.store.mark_posted(task.id):  # counted once, whoever posts
            self.metrics.reports.labels(status).inc()
            self.metrics.seconds.observe(max(0.0, time.time() - task.created))
            if r is not None:
                self.metrics.count_findings(Counter((f.rule, f.severity) for f in r.findings))
            await self.audit.emit(ReportSent(
                report=task.id, via="chat", user=task.request.user, groups=task.request.groups, entry="report",
                job_id=result.job_id, decision="done" if status == "ok" else "error", reason=status,
                counts={"findings": len(r.findings) if r else 0, "tool_calls": result.tool_calls,
                        "readers": len(task.request.members) or 1},
            ))
        await self.store.release_active(rec.target, task.id)
        log.info("report posted", extra={"report": task.id, "target": rec.target, "status": status})

    async def _not_finished(self, task: ReportTask, rec: Record) -> None:
        waited = self.cfg.report_timeout + self.cfg.answer_grace
        await self._post(rec, "", compose.not_finished(task.id, waited), status="not_finished")
        await self.store.finish(task.id, "failed", status="not_finished", finished=repr(time.time()),
                                email="none" if rec.email == "pending" else rec.email)
        await self.store.release_active(rec.target, task.id)
        self.metrics.reports.labels("not_finished").inc()

    # ------------------------------------------------------------------ the email
    def _emails_it(self, task: ReportTask, result: InvestigationResult) -> bool:
        return bool(task.emails and self.mailer.enabled and result.report is not None
                    and result.report.status == "ok")

    async def _email(self, task: ReportTask, rec: Record, result: InvestigationResult) -> float | None:
        if not self._emails_it(task, result):
            if task.emails and not self.mailer.enabled:
                log.warning("report not emailed: reporter.smtp has no host or sender", extra={"report": task.id})
            await self.store.finish(task.id, "done", email="none")
            return None
        assert result.report is not None
        token = uuid.uuid4().hex
        claim, wait = await self.store.claim_email(task.id, token, lease=self.mailer.cfg.timeout * 3 + 10)
        if claim == "sent":
            self.metrics.emails.labels("duplicate").inc()
            await self.store.finish(task.id, "done")
            return None
        if claim == "busy":  # another replica is sending it (or died doing so: its lease runs out)
            return wait
        msg = report_email(task.id, result.report, rec.target, self.mailer.cfg.sender, list(task.emails))
        try:
            await self.mailer.send(msg)
        except MailError as exc:
            tries = await self.store.email_failed(task.id, token, exc.reason)
            self.metrics.emails.labels("failed").inc()
            log.warning("report email not sent (try %d): %s", tries, exc.reason, extra={"report": task.id})
            if exc.permanent or tries >= self.cfg.email_attempts:
                await self._post(rec, "email", compose.email_failed(task.id, len(task.emails), tries, exc.reason))
                await self.store.finish(task.id, "done", email="failed")
                self.metrics.emails.labels("gave_up").inc()
                return None
            return min(self.cfg.email_backoff * 2 ** (tries - 1), self.cfg.email_backoff_max)
        await self.store.email_sent(task.id)
        self.metrics.emails.labels("sent").inc()
        await self.audit.emit(ReportSent(report=task.id, via="email", user=task.request.user, entry="report",
                                         counts={"recipients": len(task.emails),
                                                 "findings": len(result.report.findings)}))
        log.info("report emailed", extra={"report": task.id, "recipients": len(task.emails)})
        await self.store.finish(task.id, "done")
        return None
