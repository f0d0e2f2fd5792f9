"""One job, from the bus's side: resolve scope, run the investigator with progress and audit,
publish the result once (keyed by job id), audit the outcome (counts only).

A job of origin ``report`` (from the reporter, issue 14) passes the same identity and scope checks
and runs the best-practice report (``sleuth_agent.report``) instead of an investigation, never a
model: its ``InvestigationResult`` carries the ``ReportResult`` in ``report`` and the chat summary
in ``answer_markdown``; ``status`` is ``diagnosed`` (findings), ``healthy`` (none), ``denied`` or
``error``. The report is cut to fit one NATS message (least severe findings first, saying so)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from nats.aio.client import Client as Nats
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from pydantic import ValidationError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_agent.llm import LlmInvestigator, LlmRun
from sleuth_agent.metrics import Metrics
from sleuth_agent.rca import investigate
from sleuth_agent.report import EVERY_FINDING, ProgressCallback, report
from sleuth_agent.settings import Settings
from sleuth_common.audit import tool_call_event
from sleuth_common.channels import audience_claims, intersect_scopes
from sleuth_common.identity import IdentityError, IdentityVerifier
from sleuth_common.mcp import (
    AuditCallback,
    ToolAuditEvent,
    bus_inventory,
    bus_resolver,
    use_inventory,
    use_resolver,
)
from sleuth_common.messages import (
    InvestigationJob,
    InvestigationResult,
    JobProgress,
    ReportResult,
    Requester,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.messages.jobs import ResultStatus
from sleuth_common.subjects import Subjects

__all__ = ["AUTHZ_UNAVAILABLE", "JobHandler"]

log = logging.getLogger(__name__)

AUTHZ_UNAVAILABLE = "authorization is unavailable, try again shortly"
NO_IDENTITY = (
    "This request was refused: it does not carry a valid signed identity of the person it is "
    "for ({why}). Ask again through Sleuth's chat, API or alert routes."
)


REPORT_MORE = "the full list follows"
"""Where a report job's chat summary says the findings past its top ones are: the reporter posts
every finding after the summary, in the same thread."""
_PAYLOAD_MARGIN = 16 * 1024
"""Bytes kept free below the server's max payload for headers and the result's other fields."""


class ScopeUnavailable(Exception):
    pass


def report_status(r: ReportResult) -> ResultStatus:
    """A report's outcome as a job's: findings → ``diagnosed``, none → ``healthy``."""
    if r.status == "denied":
        return "denied"
    if r.status == "error":
        return "error"
    return "diagnosed" if r.findings else "healthy"


def fit_report(r: ReportResult, limit: int) -> ReportResult:
    """``r`` with its least severe findings (and the objects not checked) dropped until it is at
    most ``limit`` bytes as JSON, and a note saying how many; ``r`` itself when it fits."""
    size = len(r.to_bytes())
    findings, not_checked = list(r.findings), list(r.not_checked)
    while size > limit and (findings or not_checked):
        keep = max(0, int((len(findings) + len(not_checked)) * limit / size * 0.9))
        not_checked = not_checked[: max(0, keep - len(findings))]
        findings = findings[:keep]
        cut = len(r.findings) - len(findings), len(r.not_checked) - len(not_checked)
        note = (f"This report is cut to fit one message: {cut[0]} of its least severe finding(s) and "
                f"{cut[1]} object(s) not checked are left out; the counts are of all of them.")
        trimmed = r.model_copy(update={"findings": tuple(findings), "not_checked": tuple(not_checked),
                                       "notes": (*r.notes, note)})
        size = len(trimmed.to_bytes())
        if size <= limit:
            return trimmed
    return r if size <= limit else r.model_copy(update={"findings": (), "not_checked": ()})


class JobHandler:
    def __init__(
        self,
        nc: Nats,
        settings: Settings,
        metrics: Metrics,
        redis: Redis | None,
        llm: LlmInvestigator | None = None,
        verifier: IdentityVerifier | None = None,
    ) -> None:
        self.nc = nc
        self.llm = llm
        self.verifier = verifier
        self.settings = settings
        self.metrics = metrics
        self.redis = redis
        self.subjects = Subjects(settings.prefix)
        self._inventory = bus_inventory(nc, settings.prefix, timeout=settings.authz.request_timeout)

    def _key(self, job_id: str) -> str:
        return f"{self.settings.prefix}:agent:answered:{job_id}"

    async def already_answered(self, job_id: str) -> bool:
        if self.redis is None:
            return False
        try:
            return bool(await self.redis.exists(self._key(job_id)))
        except (RedisError, OSError) as exc:
            log.warning(
                "cannot check whether job was answered (%s); answering", exc, extra={"job_id": job_id}
            )
            return False

    async def _claim(self, job_id: str) -> bool:
        """SET NX the answered-mark; False when another delivery already answered this job."""
        if self.redis is None:
            return True
        try:
            ttl = max(1, int(self.settings.agent.dedupe_ttl))
            return bool(await self.redis.set(self._key(job_id), "1", nx=True, ex=ttl))
        except (RedisError, OSError) as exc:
            # Prefer a possible duplicate answer over none at all.
            log.warning("cannot mark job answered (%s); publishing anyway", exc, extra={"job_id": job_id})
            return True

    async def identity_problem(self, job: InvestigationJob) -> str:
        """Why ``job`` may not be acted on ("" = its requester is proven). The assertion must verify
        (key bound to its issuer, audience, expiry), name exactly the requester, belong to this job
        when it names one, and not have been used for another job (a captured assertion cannot be
        replayed with another question)."""
        if self.verifier is None:
            return "" if not self.settings.identity.require_job_identity else "the agent has no key to check it"
        try:
            who = self.verifier.verify(job.identity)
        except IdentityError as e:
            return str(e)
        if who.user != job.requester.user or set(who.groups) != set(job.requester.groups):
            return "the identity does not match the requester"
        if who.job and who.job != job.id:
            return "the identity belongs to another request"
        if set(who.members) != set(audience_claims(job.audience)):
            return "the identity names other readers than the request"
        if self.redis is not None and who.assertion_id:
            key = f"{self.settings.prefix}:agent:assertion:{who.assertion_id}"
            ttl = max(1, int(who.expires_at - time.time()) + 60)
            try:
                if not await self.redis.set(key, job.id, nx=True, ex=ttl):
                    if (await self.redis.get(key) or b"").decode() != job.id:
                        return "the identity was already used for another request"
            except (RedisError, OSError) as exc:
                log.warning("cannot record the assertion (%s); checking it once only", exc, extra={"job_id": job.id})
        return ""

    async def resolve_scope(self, job: InvestigationJob) -> ScopeReply:
        """The requester's scope; for a post several people read (``job.audience``), the
        intersection with every member's (``sleuth_common.channels``)."""
        who = [job.requester, *job.audience]
        replies = await asyncio.gather(*(self._scope_of(r) for r in who))
        return replies[0] if len(replies) == 1 else intersect_scopes(replies)

    async def _scope_of(self, who: Requester) -> ScopeReply:
        req = ScopeRequest(user=who.user, groups=who.groups)
        try:
            msg = await self.nc.request(
                self.subjects.authz_scope, req.to_bytes(), timeout=self.settings.authz.request_timeout
            )
            return ScopeReply.model_validate_json(msg.data)
        except (TimeoutError, NatsTimeout, NoRespondersError, NatsError, ValidationError) as exc:
            raise ScopeUnavailable(type(exc).__name__) from exc

    async def handle(self, job: InvestigationJob) -> InvestigationResult | None:
        """Investigate and publish. Returns the result, or None when it was already published."""
        started = time.monotonic()
        if await self.already_answered(job.id):
            log.info("job was already answered; not answering twice", extra={"job_id": job.id})
            return None
        seq = 0
        llm_run: LlmRun | None = None

        async def progress(stage: str, message: str) -> None:
            nonlocal seq
            seq += 1
            p = JobProgress(job_id=job.id, seq=seq, stage=stage, message=message)
            with contextlib.suppress(NatsError):
                await self.nc.publish(self.subjects.jobs_progress(job.id), p.to_bytes())

        async def audit(event: ToolAuditEvent) -> None:
            self.metrics.tool_calls.labels(event.cluster, event.tool, event.outcome).inc()
            body = tool_call_event(event, job_id=job.id)
            with contextlib.suppress(NatsError):
                await self.nc.publish(self.subjects.audit("tool_call"), json.dumps(body).encode())

        await progress("started", "investigation started")
        refused = await self.identity_problem(job)
        if refused:
            log.warning("job refused: %s", refused, extra={"job_id": job.id})
            result = InvestigationResult(
                status="denied", answer_markdown=NO_IDENTITY.format(why=refused), job_id=job.id,
                user=job.requester.user,
            )
            with contextlib.suppress(NatsError):
                await self.nc.publish(self.subjects.audit("job_refused"), json.dumps(
                    {"job_id": job.id, "user": job.requester.user, "origin": job.origin, "reason": refused}
                ).encode())
            return await self._publish(job, result, started, None)
        try:
            scope = await self.resolve_scope(job)
        except ScopeUnavailable as exc:
            log.warning("authz unavailable for job: %s", exc, extra={"job_id": job.id})
            result = InvestigationResult(
                status="error", answer_markdown=AUTHZ_UNAVAILABLE, job_id=job.id, user=job.requester.user
            )
        else:
            ns_count = sum(len(cs.namespaces) for cs in scope.clusters.values())
            await progress(
                "scope", f"access resolved: {len(scope.clusters)} cluster(s), {ns_count} namespace(s)"
            )
            with contextlib.suppress(NatsError):
                await self.nc.publish(
                    self.subjects.audit("scope_resolved"),
                    json.dumps(
                        {
                            "job_id": job.id,
                            "user": job.requester.user,
                            "clusters": len(scope.clusters),
                            "namespaces": ns_count,
                            "cached": scope.cached,
                        }
                    ).encode(),
                )
            # IPs resolve, and other namespaces' object names come, from authz-cache (the filter).
            timeout = self.settings.authz.request_timeout
            with use_resolver(bus_resolver(self.nc, self.settings.prefix, timeout=timeout)), \
                    use_inventory(self._inventory):
                if job.origin == "report":  # rules in code, never a model
                    result = await self._report(job, scope, progress, audit)
                else:
                    result = await investigate(job, scope, self.settings, progress=progress, on_audit=audit)
                    if self.llm is not None:
                        result, llm_run = await self.llm.run(
                            job, scope, result, started=started, progress=progress, on_audit=audit
                        )
        return await self._publish(job, result, started, llm_run)

    async def _report(self, job: InvestigationJob, scope: ScopeReply, progress: ProgressCallback,
                      audit: AuditCallback) -> InvestigationResult:
        """The best-practice report over ``scope`` (the asker's, intersected with every reader's)."""
        made = await report(job, scope, self.settings, progress=progress, on_audit=audit,
                            every_finding=REPORT_MORE if job.chat_target else EVERY_FINDING)
        # The result carries the summary beside the report (which has it too).
        room = (self.nc.max_payload or 1024 * 1024) - _PAYLOAD_MARGIN - len(made.answer_markdown.encode())
        made = fit_report(made, max(64 * 1024, room))
        return InvestigationResult(
            job_id=job.id, user=job.requester.user, status=report_status(made),
            answer_markdown=made.answer_markdown, tool_calls=made.tool_calls, report=made,
        )

    def _reply_subject(self, job: InvestigationJob) -> str:
        """Where the answer goes: the job's done subject, or the alerts results subject of this
        job. Any other reply subject (one a publisher chose to overhear answers) is ignored."""
        allowed = {self.subjects.jobs_done(job.id), self.subjects.alerts_result(job.id)}
        if job.reply_subject and job.reply_subject not in allowed:
            log.warning("job names a reply subject that is not its own; answering on its done subject",
                        extra={"job_id": job.id})
        return job.reply_subject if job.reply_subject in allowed else self.subjects.jobs_done(job.id)

    async def _publish(
        self, job: InvestigationJob, result: InvestigationResult, started: float, llm_run: LlmRun | None
    ) -> InvestigationResult | None:
        result = result.model_copy(
            update={
                "duration_ms": round((time.monotonic() - started) * 1000, 1),
                "llm": llm_run.as_dict() if llm_run is not None else None,
            }
        )
        if not await self._claim(job.id):
            log.info(
                "job already answered by another delivery; not answering twice", extra={"job_id": job.id}
            )
            return None
        await self.nc.publish(self._reply_subject(job), result.to_bytes())
        await self.nc.flush(timeout=5)
        self.metrics.jobs.labels(result.status).inc()
        self.metrics.job_seconds.observe(time.monotonic() - started)
        with contextlib.suppress(NatsError):
            await self.nc.publish(
                self.subjects.audit("job_finished"),
                json.dumps(
                    {
                        "job_id": job.id,
                        "user": job.requester.user,
                        "origin": job.origin,
                        "status": result.status,
                        "family": result.root_cause.family if result.root_cause else "",
                        "evidence": len(result.evidence),
                        "tool_calls": result.tool_calls,
                        "withheld": len(result.withheld),
                        "unavailable": len(result.unavailable),
                        "duration_ms": result.duration_ms,
                        **({"llm": llm_run.as_dict()} if llm_run is not None else {}),
                    }
                ).encode(),
            )
        if llm_run is not None:
            log.info(
                "LLM %s: %d call(s), %d tool call(s), %d input / %d output tokens",
                llm_run.outcome,
                llm_run.calls,
                llm_run.tool_calls,
                llm_run.usage.input_tokens,
                llm_run.usage.output_tokens,
                extra={"job_id": job.id},
            )
        log.info("job finished: %s", result.status, extra={"job_id": job.id})
        return result
