"""``investigate``: one job, one resolved scope → one ``InvestigationResult``. The same code
path runs in the agent service and offline (``sleuth investigate``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from sleuth_agent.rca._cluster import ClusterOutcome, analyse_cluster
from sleuth_agent.rca._collect import Toolbox
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._plan import alert_target, parse_question, pick_clusters, terms_for_alerts
from sleuth_agent.rca._report import build_result, degraded_result, simple_result
from sleuth_agent.settings import Settings
from sleuth_agent.tools import open_cluster_tools
from sleuth_common.config import ClusterSettings
from sleuth_common.mcp import AuditCallback, ClusterTools
from sleuth_common.messages import InvestigationJob, InvestigationResult, ScopeReply
from sleuth_common.scope import Scope

__all__ = ["ProgressCallback", "ToolsFactory", "investigate"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[str, str], Awaitable[None]]
"""``await progress(stage, message)``; stages: scope, target, collecting, tool_calls, matching, writing."""

ToolsFactory = Callable[[ClusterSettings, Scope], AbstractAsyncContextManager[Toolbox]]


async def _noop(stage: str, message: str) -> None:
    return None


def _scope_text(reply: ScopeReply, clusters: list[ClusterSettings]) -> str:
    parts = []
    for c in clusters:
        cs = reply.clusters.get(c.name)
        if cs is None:
            continue
        what = "the whole cluster" if cs.cluster_wide else ", ".join(sorted(cs.namespaces))
        parts.append(what if len(clusters) == 1 else f"{what} on {c.name}")
    return "; ".join(parts) or "nothing"


async def investigate(
    job: InvestigationJob,
    scope: ScopeReply,
    settings: Settings,
    *,
    progress: ProgressCallback | None = None,
    on_audit: AuditCallback | None = None,
    tools_factory: ToolsFactory | None = None,
) -> InvestigationResult:
    """Run the deterministic investigator for ``job`` as the user ``scope`` describes.

    ``scope`` is resolved by the caller (authz-cache over the bus in the service; SubjectAccess
    Reviews offline). Tools come from ``settings.clusters[*].mcp_servers`` through
    ``ClusterTools`` unless ``tools_factory(cluster, scope)`` is given. Never raises for tool or
    server failures; they end up in ``unavailable``. The result carries ``job_id``, ``user``,
    ``duration_ms`` and ``tool_calls``; the overall deadline is the job's, capped by
    ``settings.agent.default_deadline``.
    """
    started = time.monotonic()
    progress = progress or _noop
    remaining = min(job.deadline - time.time(), settings.agent.default_deadline)
    run = _Run()
    try:
        async with asyncio.timeout(max(remaining, 1.0)):
            result = await _investigate(job, scope, settings, progress, on_audit, tools_factory, run)
    except TimeoutError:
        result = degraded_result(run.outcomes, run.evidence, run.clusters)
    return result.model_copy(
        update={
            "job_id": job.id,
            "user": job.requester.user,
            "duration_ms": round((time.monotonic() - started) * 1000, 1),
        }
    )


@dataclass
class _Run:
    """What an investigation has gathered so far: kept outside the deadline, so a run that
    overruns still reports the evidence it collected (a degraded report, never an empty error)."""

    evidence: EvidenceLog = field(default_factory=EvidenceLog)
    outcomes: list[ClusterOutcome] = field(default_factory=list)
    clusters: list[str] = field(default_factory=list)


async def _investigate(
    job: InvestigationJob,
    scope: ScopeReply,
    settings: Settings,
    progress: ProgressCallback,
    on_audit: AuditCallback | None,
    tools_factory: ToolsFactory | None,
    run: _Run | None = None,
) -> InvestigationResult:
    run = run or _Run()
    if scope.empty:
        return simple_result(
            "denied",
            "You do not have read access to any namespace on the clusters Sleuth knows, so I cannot "
            "investigate anything for you. Ask your cluster administrator for access, then send `refresh`.",
        )
    target = alert_target(job.alerts) if job.alerts else None
    question = job.question or (" ".join(target.clusters) if target else "")
    in_scope = [name for name, cs in scope.clusters.items() if cs.cluster_wide or cs.namespaces]
    requested = list(job.clusters)
    if not requested and target is not None:
        # An alert's cluster/region label names the cluster; unknown labels do not narrow it.
        known = {w.lower() for c in settings.clusters for w in (c.name, *c.aliases)}
        requested = [c for c in target.clusters if c.lower() in known][:1]
    clusters, refused = pick_clusters(requested, question, settings.clusters, in_scope)
    notes = []
    if refused:
        notes.append(
            "You do not have access to cluster " + ", ".join(refused) + " (or Sleuth does not know it)."
        )
    failed = [name for name in scope.errors if any(c.name == name for c in settings.clusters)]
    if failed:
        notes.append(
            "Authorization for cluster " + ", ".join(failed) + " is unavailable, so it was left out."
        )
    if not clusters:
        return simple_result("denied", " ".join(notes) or "None of the clusters you can read was named.")
    words = [w for c in settings.clusters for w in (c.name, *c.aliases)]
    if target is not None and not job.question:
        terms = terms_for_alerts(target)
    else:
        terms = parse_question(question, words)
    evidence = run.evidence
    outcomes = run.outcomes
    run.clusters = [c.name for c in clusters]
    extra_unavailable: list[str] = []
    for cluster in clusters:
        cscope = Scope.from_cluster_scope(scope.clusters.get(cluster.name))
        async with open_cluster_tools(cluster, cscope, job, settings, on_audit, tools_factory) as tools:
            if isinstance(tools, ClusterTools):
                extra_unavailable.extend(tools.unavailable)
                if not any(c.available for c in tools.clients):
                    continue
            outcomes.append(
                await analyse_cluster(
                    tools, cscope, cluster.name, terms, settings.agent, evidence, progress, alert=target
                )
            )
    await progress("writing", "writing the answer")
    if not outcomes:
        return simple_result(
            "error",
            "The cluster tools are unavailable right now, so I could not investigate. Try again shortly.",
            unavailable=tuple(extra_unavailable),
        )
    all_wide = all(Scope.from_cluster_scope(scope.clusters.get(c.name)).cluster_wide for c in clusters)
    return build_result(
        outcomes,
        evidence,
        scope_text=_scope_text(scope, clusters),
        notes=notes,
        extra_unavailable=extra_unavailable,
        cluster_wide=all_wide,
    )


