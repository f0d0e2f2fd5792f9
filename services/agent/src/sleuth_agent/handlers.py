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
import logging
import time
from typing import Any

from nats.aio.client import Client as Nats
from nats.errors import Error as NatsError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_agent.incidents import IncidentMemory, incident_of, seen_before_section
from sleuth_agent.knowledge import (
    Knowledge,
    KnowledgeTools,
    Runbook,
    expected_note,
    facts,
    footnote,
    instructions_for,
    runbook_line,
    suppressing,
    visibilities,
)
from sleuth_agent.llm import LlmInvestigator, LlmRun
from sleuth_agent.metrics import Metrics, ToolMetrics
from sleuth_agent.rca import investigate
from sleuth_agent.report import EVERY_FINDING, ProgressCallback, report
from sleuth_agent.settings import Settings
from sleuth_common.audit import AuditLog, tool_call_event
from sleuth_common.bus import BusError, request
from sleuth_common.channels import audience_claims, intersect_scopes
from sleuth_common.identity import IdentityError, IdentityVerifier
from sleuth_common.mcp import (
    AuditCallback,
    ToolAuditEvent,
    bus_inventory,
    bus_resolver,
    use_inventory,
    use_resolver,
    use_tool_observer,
)
from sleuth_common.messages import (
    Incident,
    InvestigationJob,
    InvestigationResult,
    JobProgress,
    ReportResult,
    Requester,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.messages.audit import (
    ClusterCount,
    JobFinished,
    JobRefused,
    JobStarted,
    ScopeResolved,
    entry_of_origin,
)
from sleuth_common.messages.jobs import ResultStatus
from sleuth_common.scope import ForeignNames
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


_REFUSALS = (("no key", "no_verify_key"), ("does not match", "identity_mismatch"),
             ("another request", "identity_other_job"), ("other readers", "identity_other_readers"),
             ("already used", "identity_replayed"), ("expired", "identity_expired"))


def refusal_code(why: str) -> str:
    """``identity_problem``'s sentence as an audit reason code."""
    return next((code for words, code in _REFUSALS if words in why), "identity_invalid")


def scope_event(scope: ScopeReply, **fields: Any) -> ScopeResolved:
    """``audit.scope_resolved`` as the agent received it: counts per cluster, never namespaces."""
    clusters = tuple(ClusterCount(name=n, namespaces=len(c.namespaces), cluster_wide=c.cluster_wide)
                     for n, c in sorted(scope.clusters.items()))
    clusters += tuple(ClusterCount(name=n, error=True) for n in sorted(scope.errors) if n not in scope.clusters)
    return ScopeResolved(
        **fields, cached=scope.cached, clusters=clusters,
        counts={"clusters": len(scope.clusters), "namespaces": sum(c.namespaces for c in clusters),
                "errors": len(scope.errors)},
    )


def finished_event(job: InvestigationJob, result: InvestigationResult, llm_run: LlmRun | None) -> JobFinished:
    """``audit.job_finished``: status, family and counts, never the question or the answer."""
    counts = {"evidence": len(result.evidence), "tool_calls": result.tool_calls, "withheld": len(result.withheld),
              "unavailable": len(result.unavailable)}
    if llm_run is not None:
        counts |= {"llm_calls": llm_run.calls, "input_tokens": llm_run.usage.input_tokens,
                   "output_tokens": llm_run.usage.output_tokens}
    return JobFinished(
        user=job.requester.user, groups=job.requester.groups, job_id=job.id, origin=job.origin,
        entry=entry_of_origin(job.origin, job.chat_target), status=result.status,
        decision="refused" if result.status == "denied" else "error" if result.status == "error" else "done",
        family=result.root_cause.family if result.root_cause else "", duration_ms=result.duration_ms,
        counts=counts,
    )


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
        audit: AuditLog | None = None,
        knowledge: Knowledge | None = None,
        incidents: IncidentMemory | None = None,
    ) -> None:
        self.nc = nc
        self.knowledge = knowledge
        self.incidents = incidents
        self.llm = llm
        self.verifier = verifier
        self.settings = settings
        self.metrics = metrics
        self.redis = redis
        self.subjects = Subjects(settings.prefix)
        if audit is None:  # tests that build a handler alone; the app passes its own (with a counter)
            audit = AuditLog(self.subjects, "agent", settings.audit)
            if nc is not None:
                audit.bind_nats(nc)
        self.audit = audit
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
                    holder = await self.redis.get(key)
                    if (holder.decode() if isinstance(holder, bytes) else holder) != job.id:
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
            return await request(self.nc, self.subjects.authz_scope, req, ScopeReply,
                                 wait=self.settings.authz.request_timeout, service="authz-cache",
                                 hedge_after=self.settings.authz.hedge_after)
        except BusError as exc:  # not running, no answer in time, a malformed or error reply: all unavailable
            raise ScopeUnavailable(str(exc)) from exc

    async def handle(self, job: InvestigationJob) -> InvestigationResult | None:
        """Investigate and publish. Returns the result, or None when it was already published."""
        started = time.monotonic()
        if await self.already_answered(job.id):
            log.info("job was already answered; not answering twice", extra={"job_id": job.id})
            return None
        seq = 0
        llm_run: LlmRun | None = None
        incident: Incident | None = None

        async def progress(stage: str, message: str) -> None:
            nonlocal seq
            seq += 1
            p = JobProgress(job_id=job.id, seq=seq, stage=stage, message=message)
            with contextlib.suppress(NatsError):
                await self.nc.publish(self.subjects.jobs_progress(job.id), p.to_bytes())

        who: dict[str, Any] = {"user": job.requester.user, "groups": job.requester.groups, "job_id": job.id,
               "entry": entry_of_origin(job.origin, job.chat_target)}

        async def audit(event: ToolAuditEvent) -> None:
            self.metrics.tool_calls.labels(event.cluster, event.tool, event.outcome).inc()
            await self.audit.emit(tool_call_event(event, **{**who, "user": event.user or job.requester.user}))

        await progress("started", "investigation started")
        refused = await self.identity_problem(job)
        if refused:
            log.warning("job refused: %s", refused, extra={"job_id": job.id})
            result = InvestigationResult(
                status="denied", answer_markdown=NO_IDENTITY.format(why=refused), job_id=job.id,
                user=job.requester.user,
            )
            await self.audit.emit(JobRefused(**who, origin=job.origin, reason=refusal_code(refused)))
            return await self._publish(job, result, started, None)
        await self.audit.emit(JobStarted(**who, origin=job.origin, unattended=job.unattended,
                                         counts={"clusters": len(job.clusters), "readers": len(job.audience)}))
        try:
            scope = await self.resolve_scope(job)
        except ScopeUnavailable as exc:
            self.metrics.authz_unavailable.inc()
            log.warning("authz unavailable for job: %s", exc, extra={"job_id": job.id})
            result = InvestigationResult(
                status="error", answer_markdown=AUTHZ_UNAVAILABLE, job_id=job.id, user=job.requester.user
            )
        else:
            ns_count = sum(len(cs.namespaces) for cs in scope.clusters.values())
            await progress(
                "scope", f"access resolved: {len(scope.clusters)} cluster(s), {ns_count} namespace(s)"
            )
            await self.audit.emit(scope_event(scope, **who))
            # IPs resolve, and other namespaces' object names come, from authz-cache (the filter).
            timeout = self.settings.authz.request_timeout
            with use_resolver(bus_resolver(self.nc, self.settings.prefix, timeout=timeout)), \
                    use_inventory(self._inventory), use_tool_observer(ToolMetrics(self.metrics)):
                if job.origin == "report":  # rules in code, never a model
                    result = await self._report(job, scope, progress, audit)
                else:
                    result = await investigate(job, scope, self.settings, progress=progress, on_audit=audit)
                    visible = visibilities(job, scope)
                    instructions = (instructions_for(self.knowledge.index.instructions, visible, job, result)
                                    if self.knowledge is not None else [])
                    if self.llm is not None:
                        tools = KnowledgeTools(self.knowledge, visible) if self.knowledge is not None else None
                        result, llm_run = await self.llm.run(
                            job, scope, result, started=started, progress=progress, on_audit=audit,
                            instructions=instructions, knowledge=tools,
                        )
                    result = await self._with_runbook(job, scope, result)
                    result, incident = await self._with_seen_before(job, scope, result)
                    result = self._with_instructions(job, result, instructions, llm_run)
        published = await self._publish(job, result, started, llm_run)
        if published is not None and incident is not None and self.incidents is not None:
            stored = await self.incidents.record(incident)  # after the answer is out
            self.metrics.incidents_recorded.labels(incident.family, "yes" if stored else "no").inc()
        return published

    async def _with_seen_before(self, job: InvestigationJob, scope: ScopeReply,
                                result: InvestigationResult) -> tuple[InvestigationResult, Incident | None]:
        """The answer with a "Seen before" section listing earlier incidents like this one that the
        asker (every reader) may see, and this one as an incident to remember (None: not diagnosed)."""
        if self.incidents is None:
            return result, None
        s = self.settings.incidents
        incident = incident_of(job, result, scope, max_summary=s.max_summary_chars, max_actions=s.max_actions,
                               max_signature=s.max_signature_items)
        if incident is None:
            return result, None
        section = seen_before_section(await self.incidents.search(incident, scope))
        if section:
            section = await self._within_scope(section, scope)
        if not section:
            return result, incident
        self.metrics.seen_before_hits.labels(incident.family).inc()
        answer = f"{result.answer_markdown.rstrip()}\n\n{section}\n"
        return result.model_copy(update={"answer_markdown": answer}), incident

    async def _within_scope(self, text: str, scope: ScopeReply) -> str:
        """``text`` (people's words: summaries, fixes) with every line that names an object or a
        namespace outside ``scope`` withheld, as the scope filter does for tool output; "" when that
        cannot be checked (no names inventory for a cluster the scope is not cluster-wide on)."""
        for cluster, cs in scope.clusters.items():
            if cs.cluster_wide:
                continue
            try:
                inventory = await asyncio.wait_for(self._inventory(cluster), self.settings.authz.request_timeout)
            except Exception:  # whatever fails, the section is left out, never the answer
                inventory = {}
            if not inventory:
                return ""
            text, _ = ForeignNames.build(inventory, cs.namespaces).withhold_lines(text)
        return text

    async def _with_runbook(self, job: InvestigationJob, scope: ScopeReply,
                            result: InvestigationResult) -> InvestigationResult:
        """The answer with a line linking the best runbook whose tags match its facts, when there is
        one the asker (every reader) may see; unchanged otherwise or when the search fails."""
        if self.knowledge is None or not len(self.knowledge.index):
            return result
        if result.status != "diagnosed" and not (job.alerts and result.status == "healthy"):
            return result
        text, tags = facts(job, result)
        if not tags:
            return result
        hits = await self.knowledge.search(text, tags, visibilities(job, scope), tagged_only=True)
        if not hits:
            return result
        family = result.root_cause.family if result.root_cause else ""
        self.metrics.runbook_hits.labels(family or "none").inc()
        answer = f"{result.answer_markdown.rstrip()}\n\n{runbook_line(hits[0])}\n"
        return result.model_copy(update={"answer_markdown": answer})

    def _with_instructions(self, job: InvestigationJob, result: InvestigationResult, instructions: list[Runbook],
                           llm_run: LlmRun | None) -> InvestigationResult:
        """The answer led by "Expected — …" when a standing instruction marks its finding as expected,
        and ending with a footnote naming every instruction that shaped it (the AI model was given
        them, or one marked the finding)."""
        if not instructions:
            return result
        shaped: list[Runbook] = []
        answer = result.answer_markdown
        marking = suppressing(instructions, job, result)
        if marking is not None:
            answer = f"{expected_note(marking, result)}\n\n{answer.lstrip()}"
            shaped.append(marking)
            self.metrics.instructions_applied.labels("suppress").inc()
        if llm_run is not None and llm_run.calls > 0:
            shaped += [rb for rb in instructions if rb not in shaped]
            self.metrics.instructions_applied.labels("llm").inc()
        if not shaped:
            return result
        return result.model_copy(update={"answer_markdown": f"{answer.rstrip()}\n\n{footnote(shaped)}\n"})

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

    async def _send_result(self, job: InvestigationJob, result: InvestigationResult) -> None:
        """Publish the answer. On ``jobs.done.<job>`` through JetStream (the RESULTS stream keeps it,
        once per job id, for a gateway restarted meanwhile); its core subscribers (gateway,
        scheduler, reporter) receive it as any publish. A missing ack only means it is not kept."""
        subject = self._reply_subject(job)
        if subject != self.subjects.jobs_done(job.id):  # alerts: the ALERTS stream captures it
            await self.nc.publish(subject, result.to_bytes())
            await self.nc.flush(timeout=5)
            return
        try:
            await self.nc.jetstream().publish(
                subject, result.to_bytes(), timeout=5.0,
                stream=self.subjects.stream_results, headers={"Nats-Msg-Id": job.id},
            )
        except (NatsError, TimeoutError) as exc:
            log.warning("the result is delivered but not kept in RESULTS (%r): a gateway restarted now "
                        "will not find it", exc, extra={"job_id": job.id})

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
        await self._send_result(job, result)
        self.metrics.jobs.labels(result.status).inc()
        self.metrics.job_seconds.observe(time.monotonic() - started)
        await self.audit.emit(finished_event(job, result, llm_run))
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
