"""``report``: one job, one resolved scope → one ``ReportResult``. The same tools, scope and
identity handling as ``investigate`` (the agent service and ``sleuth report`` offline)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from sleuth_agent.rca import ToolsFactory
from sleuth_agent.rca._plan import pick_clusters
from sleuth_agent.report._collect import Reads, collect
from sleuth_agent.report._model import TEMPLATE_KINDS, Inventory
from sleuth_agent.report._registry import Outcome, load_rules, run_rules
from sleuth_agent.report._render import EVERY_FINDING, TOP, render
from sleuth_agent.settings import Settings
from sleuth_agent.tools import open_cluster_tools
from sleuth_common.mcp import AuditCallback, ClusterTools
from sleuth_common.messages import SEVERITIES, InvestigationJob, NotChecked, ReportResult, ScopeReply
from sleuth_common.scope import Scope

__all__ = ["ProgressCallback", "report"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[str, str], Awaitable[None]]


async def _noop(stage: str, message: str) -> None:
    return None


async def report(
    job: InvestigationJob,
    scope: ScopeReply,
    settings: Settings,
    *,
    progress: ProgressCallback | None = None,
    on_audit: AuditCallback | None = None,
    tools_factory: ToolsFactory | None = None,
    every_finding: str = EVERY_FINDING,
) -> ReportResult:
    """The best-practice report for the asker of ``job`` over everything ``scope`` lets them read
    (``job.clusters`` narrows the clusters). Never raises for tool or server failures: what could
    not be read is in ``notes`` and ``not_checked``. On overrunning the deadline (the job's,
    capped by ``settings.agent.default_deadline``) the rules still run over what was read.
    ``every_finding`` says where the findings past the top ones shown in the summary are."""
    started = time.monotonic()
    progress = progress or _noop
    user = job.requester.user
    if scope.empty:
        return _finish(ReportResult(
            user=user, status="denied",
            notes=("You do not have read access to any namespace on the clusters Sleuth knows.",),
            answer_markdown="You do not have read access to any namespace on the clusters Sleuth knows, so there "
                            "is nothing to report on. Ask your cluster administrator for access, then send `refresh`.",
        ), started)
    in_scope = [name for name, cs in scope.clusters.items() if cs.cluster_wide or cs.namespaces]
    clusters, refused = pick_clusters(list(job.clusters), "", settings.clusters, in_scope)
    notes: list[str] = []
    if refused:
        notes.append("You do not have access to cluster " + ", ".join(refused) + " (or Sleuth does not know it).")
    failed = [name for name in scope.errors if any(c.name == name for c in settings.clusters)]
    if failed:
        notes.append("Authorization for cluster " + ", ".join(failed) + " is unavailable, so it was left out.")
    runs: list[tuple[Inventory, Reads]] = []
    remaining = min(job.deadline - time.time(), settings.agent.default_deadline)
    try:
        async with asyncio.timeout(max(remaining, 1.0)):
            for cluster in clusters:
                cscope = Scope.from_cluster_scope(scope.clusters.get(cluster.name))
                inv, reads = Inventory(cluster.name, sorted(ns for ns in cscope.namespaces if ns)), Reads()
                if cscope.cluster_wide and not inv.namespaces:
                    notes.append(f"No namespace list came with your access to {cluster.name}, so it was not covered.")
                    continue
                runs.append((inv, reads))
                async with open_cluster_tools(cluster, cscope, job, settings, on_audit, tools_factory) as tools:
                    if isinstance(tools, ClusterTools) and not any(c.available for c in tools.clients):
                        runs.pop()
                        notes.append(f"The tools of {cluster.name} are unavailable, so it was not covered.")
                        continue
                    await collect(tools, inv, reads, timeout=settings.agent.tool_timeout, progress=progress)
    except TimeoutError:
        notes.append("The report ran out of time; it covers what was read before the deadline.")
    await progress("matching", "running the best-practice rules")
    rules = load_rules()
    outcome = Outcome()
    for inv, reads in runs:
        late = [o for kind in TEMPLATE_KINDS for o in inv.objects.get(kind, ()) if not o.owned and not o.data]
        read_failed = {(n.namespace, n.kind, n.name) for n in reads.not_checked}
        outcome.not_checked.extend(reads.not_checked)
        outcome.not_checked.extend(
            NotChecked(cluster=inv.cluster, namespace=o.namespace, kind=o.kind, name=o.name,
                       reason="not read before the deadline")
            for o in late if (o.namespace, o.kind, o.name) not in read_failed
        )
        run_rules(inv, rules.values(), outcome)
        notes.extend(reads.notes(inv.cluster))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings = sorted(outcome.findings, key=lambda f: (order[f.severity], f.cluster, f.namespace, f.kind, f.name, f.rule))
    covered = {inv.cluster: tuple(inv.namespaces) for inv, _ in runs}
    result = ReportResult(
        user=user,
        status="ok" if runs else "error",
        clusters=tuple(covered),
        namespaces=covered,
        rules=tuple(rules),
        findings=tuple(findings),
        not_checked=tuple(outcome.not_checked),
        notes=tuple(dict.fromkeys([*notes, *outcome.notes])),
        counts={s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES},
        tool_calls=sum(reads.calls for _, reads in runs),
    )
    await progress("writing", "writing the report")
    subjects = sum(inv.count() for inv, _ in runs)
    markdown = render(result, subjects, every_finding=every_finding)
    shown = min(TOP, len(findings))
    return _finish(result.model_copy(update={"answer_markdown": markdown, "shown": shown}), started)


def _finish(result: ReportResult, started: float) -> ReportResult:
    return result.model_copy(update={"duration_ms": round((time.monotonic() - started) * 1000, 1)})
