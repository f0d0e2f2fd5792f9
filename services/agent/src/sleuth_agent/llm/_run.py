"""``LlmInvestigator``: after the deterministic investigator, the model investigates with the
same scoped tools, seeded with the deterministic findings, and its answer is held to the same
evidence rule. Whatever goes wrong with the model, the person still gets the deterministic
answer, with a line saying why the model did not add to it."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from sleuth_agent.knowledge import Runbook
from sleuth_agent.llm._budget import DailyCapReached, DailyLlmBudget
from sleuth_agent.llm._catalog import Toolbox, ToolCatalog, choose_clusters
from sleuth_agent.llm._harness import check_answer, cited_ids
from sleuth_agent.llm._loop import AgentLoop, LoopConfig, LoopResult, ReadRecord
from sleuth_agent.llm._prompt import grounding, review_text, system_prompt
from sleuth_agent.metrics import Metrics, MetricsObserver
from sleuth_agent.settings import Settings
from sleuth_agent.tools import open_cluster_tools
from sleuth_common.config import ClusterSettings
from sleuth_common.llm import (
    ChatMessage,
    LlmClient,
    LlmError,
    LlmRejected,
    Usage,
    build_client,
    resolve_llm_settings,
)
from sleuth_common.mcp import AuditCallback
from sleuth_common.messages import Evidence, InvestigationJob, InvestigationResult, ScopeReply
from sleuth_common.scope import Scope

__all__ = ["LlmInvestigator", "LlmRun", "make_llm_investigator"]

log = logging.getLogger(__name__)

Progress = Callable[[str, str], Awaitable[None]]
ToolsFactory = Callable[[ClusterSettings, Scope], AbstractAsyncContextManager[Any]]

_MIN_SECONDS = 3.0


@dataclass
class LlmRun:
    """What the model did for one job (for the audit event, the log and metrics)."""

    outcome: str
    model: str = ""
    calls: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "model": self.model,
            "calls": self.calls,
            "tool_calls": self.tool_calls,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
        }


async def _noop(stage: str, message: str) -> None:
    return None


def make_llm_investigator(
    settings: Settings, metrics: Metrics, redis: Redis | None, environ: Mapping[str, str] | None = None
) -> LlmInvestigator | None:
    """The investigator for ``agent.llm`` / ``SLEUTH_LLM_*``, or None when neither is set."""
    env = os.environ if environ is None else environ
    primary = resolve_llm_settings(settings.agent.llm, env)
    if primary is None:
        return None
    client = build_client(
        primary,
        fallback=settings.agent.fallback_llm,
        observer=MetricsObserver(metrics),
        failure_threshold=settings.agent.failover_threshold,
        cooldown=settings.agent.failover_cooldown,
    )
    log.info("LLM loop enabled: %s", primary.describe())
    return LlmInvestigator(settings, client, metrics, redis)


class LlmInvestigator:
    def __init__(self, settings: Settings, client: LlmClient, metrics: Metrics, redis: Redis | None) -> None:
        self.settings = settings
        self.client = client
        self.metrics = metrics
        self.budget = DailyLlmBudget(redis, settings.prefix, settings.limits.daily_llm_calls)
        a = settings.agent
        self.config = LoopConfig(
            max_iterations=a.max_iterations,
            max_calls_per_round=a.max_calls_per_round,
            tool_timeout=a.tool_timeout,
            max_continuations=a.max_continuations,
            max_nudges=a.max_nudges,
            context_budget=a.context_budget,
            tool_output_chars=a.tool_output_chars,
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def run(
        self,
        job: InvestigationJob,
        scope: ScopeReply,
        base: InvestigationResult,
        *,
        started: float | None = None,
        progress: Progress | None = None,
        on_audit: AuditCallback | None = None,
        tools_factory: ToolsFactory | None = None,
        instructions: Sequence[Runbook] = (),
        knowledge: Toolbox | None = None,
    ) -> tuple[InvestigationResult, LlmRun]:
        """The deterministic ``base`` answer, improved by the model when it can be. ``started``
        is when the job began (``time.monotonic()``): the overall deadline counts from there.
        ``instructions``: the platform team's standing instructions for this run, given with the
        question; ``knowledge``: the runbook tools (``kb_search``/``kb_read``), offered as not-evidence."""
        progress = progress or _noop
        started = time.monotonic() if started is None else started
        run = LlmRun("skipped", self.client.name)
        if base.status in ("denied", "error"):
            return base, run
        a = self.settings.agent
        remaining = min(job.deadline - time.time(), a.default_deadline - (time.monotonic() - started))
        remaining -= a.llm_deadline_margin
        if remaining < _MIN_SECONDS:
            run.outcome = "timeout"
            self.metrics.llm_turns.labels("timeout").inc()
            return _with_note(
                base, "There was no time left to ask the AI model, so this is the deterministic answer alone."
            ), run
        if self.budget.cap > 0 and await self.budget.used(job.requester.user) >= self.budget.cap:
            run.outcome = "budget"
            self.metrics.llm_turns.labels("budget").inc()
            return _with_note(base, _cap_note(self.budget.cap)), run
        state = _State()
        try:
            async with asyncio.timeout(remaining):
                result, outcome = await self._investigate(
                    job, scope, base, progress, on_audit, tools_factory, state, remaining, instructions, knowledge
                )
        except DailyCapReached as exc:
            run.outcome, result = "budget", _with_note(base, _cap_note(exc.cap))
        except TimeoutError:
            run.outcome = "timeout"
            result = _with_note(
                base,
                "The AI model did not finish within the time limit, so this is the deterministic answer alone.",
            )
        except LlmError as exc:
            run.outcome = "unavailable"
            result = _with_note(
                base,
                f"The AI model was unavailable ({_reason(exc)}), so this is the deterministic answer alone.",
            )
            log.warning("LLM unavailable for job: %s", exc, extra={"job_id": job.id})
        except Exception:
            # The edge of an optional step: whatever breaks in it, the person still gets the
            # deterministic answer (logged and counted as outcome "error").
            log.exception("LLM step failed", extra={"job_id": job.id})
            run.outcome = "error"
            result = _with_note(
                base, "The AI model step failed unexpectedly, so this is the deterministic answer alone."
            )
        else:
            run.outcome = outcome
        self.metrics.llm_turns.labels(run.outcome).inc()
        if state.loop is not None:
            run.calls, run.usage, run.tool_calls = state.loop.calls, state.loop.usage, len(state.loop.results)
        return result, run

    async def _investigate(
        self,
        job: InvestigationJob,
        scope: ScopeReply,
        base: InvestigationResult,
        progress: Progress,
        on_audit: AuditCallback | None,
        tools_factory: ToolsFactory | None,
        state: _State,
        remaining: float,
        instructions: Sequence[Runbook] = (),
        knowledge: Toolbox | None = None,
    ) -> tuple[InvestigationResult, str]:
        a = self.settings.agent
        deadline = time.monotonic() + remaining
        in_scope = [n for n, cs in scope.clusters.items() if cs.cluster_wide or cs.namespaces]
        clusters, _named = choose_clusters(job, self.settings.clusters, in_scope)
        async with AsyncExitStack() as stack:
            boxes: list[tuple[str, Toolbox]] = []
            for cluster in clusters:
                cscope = Scope.from_cluster_scope(scope.clusters.get(cluster.name))
                box = await stack.enter_async_context(
                    open_cluster_tools(cluster, cscope, job, self.settings, on_audit, tools_factory)
                )
                boxes.append((cluster.name, box))
            catalog = ToolCatalog.build(boxes, max_tools=a.max_tools, name_limit=self.client.tool_name_limit,
                                        knowledge=knowledge)
            self.metrics.llm_tools_offered.inc(len(catalog.offered))
            self.metrics.llm_tools_dropped.inc(catalog.dropped_count)
            counter = itertools.count(len(base.evidence) + 1)
            loop = AgentLoop(
                self.client,
                catalog,
                self.config,
                system=system_prompt(a.persona, a.tool_guidance),
                metrics=self.metrics,
                progress=progress,
                next_evidence_id=lambda: f"E{next(counter):02d}",
                before_call=lambda: self.budget.take(job.requester.user),
                deadline=deadline,
                reserve=max(5.0, 0.25 * remaining),
            )
            state.loop = loop
            opening = grounding(job, base, clusters=[c.name for c in clusters], tools_note=catalog.note(),
                                instructions=[(rb.id, rb.body) for rb in instructions])
            await progress("llm", f"the AI model investigates with {len(catalog.offered)} tool(s)")
            outcome = await loop.run([ChatMessage.user(opening)])
        known = [e.id for e in base.evidence] + [r.id for r in outcome.records]
        text, verdict = await self._harness(loop, outcome, known)
        if text is None:
            note = "The AI model's answer did not cite evidence from this run, so this is the deterministic answer."
            return _with_note(base, note), "harness"
        if job.review or job.unattended or a.review:
            await progress("llm", "reviewing the answer against its evidence")
            reviewed = await loop.ask(
                [*outcome.messages, ChatMessage.assistant(text), ChatMessage.user(review_text(known))], ()
            )
            if not check_answer(reviewed.text, known):
                text = reviewed.text
        return _merge(base, text, outcome.records, loop), verdict

    async def _harness(
        self, loop: AgentLoop, outcome: LoopResult, known: list[str]
    ) -> tuple[str | None, str]:
        text = outcome.text
        problems = check_answer(text, known)
        if not problems:
            return text, outcome.outcome
        repair = (
            "Your answer breaks the evidence rule: " + "; ".join(problems) + ". Rewrite it so that every "
            f"claim cites the ids it rests on, using only these ids: {', '.join(known)}."
        )
        fixed = await loop.ask([*outcome.messages, ChatMessage.assistant(text), ChatMessage.user(repair)], ())
        if check_answer(fixed.text, known):
            return None, "harness"
        return fixed.text, outcome.outcome


@dataclass
class _State:
    loop: AgentLoop | None = None




def _reason(exc: LlmError) -> str:
    if isinstance(exc, LlmRejected):
        return f"it refused the request with HTTP {exc.status}"
    if exc.status:
        return f"it answered HTTP {exc.status}"
    return "it did not answer"


def _cap_note(cap: int) -> str:
    return (
        f"You have reached today's limit of {cap} AI model calls, so this is the deterministic answer "
        "alone. The limit resets at 00:00 UTC."
    )


def _with_note(base: InvestigationResult, note: str) -> InvestigationResult:
    return base.model_copy(update={"answer_markdown": f"{base.answer_markdown}\n\n_{note}_".strip()})


def _evidence_of(record: ReadRecord) -> Evidence:
    r = record.result
    summary = f"read by the AI model on cluster {record.cluster}"
    if r.removed:
        summary += f" ({r.removed} record(s) outside your access removed)"
    return Evidence(id=record.id, tool=r.tool, command=r.command, summary=summary)


def _merge(
    base: InvestigationResult, text: str, records: list[ReadRecord], loop: AgentLoop
) -> InvestigationResult:
    cited = set(cited_ids(text))
    extra = [_evidence_of(r) for r in records if r.id in cited]
    evidence = (*base.evidence, *extra)
    removed = sum(r.removed for r in loop.results)
    refused = sum(1 for r in loop.results if r.status in ("denied", "withheld"))
    withheld = list(base.withheld)
    if removed or refused:
        withheld.append(
            f"the AI model's reads: {removed} record(s) outside your access hidden, {refused} call(s) refused or withheld"
        )
    parts = [text.strip()]
    if evidence:
        lines = []
        for e in evidence:
            line = f"- **{e.id}** `{e.command or e.tool}` — {e.summary}"
            if e.highlights:
                line += "; " + "; ".join(f"`{h}`" for h in e.highlights)
            lines.append(line)
        parts.append("**Evidence read in this run**\n" + "\n".join(lines))
    if withheld:
        parts.append("**Not shown:** " + "; ".join(withheld) + ".")
    if base.unavailable:
        parts.append("**Unavailable:** " + "; ".join(base.unavailable))
    parts.append(
        f"_Investigated with an AI model ({loop.client.model}); its claims cite the evidence above._"
    )
    return base.model_copy(
        update={
            "answer_markdown": "\n\n".join(parts),
            "evidence": evidence,
            "withheld": tuple(withheld),
            "tool_calls": base.tool_calls + len(loop.results),
        }
    )
