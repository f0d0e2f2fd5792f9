"""The runbook line of an answer: which facts of an investigation a runbook's tags may match, who
may see which runbook, and how the line reads.

Facts: the root cause's family and object (``Kind/namespace/name`` → ``kind:`` and ``workload:``),
the affected workload, the alerts' ``alertname``. Only a runbook whose tags match one of them is
linked unasked (``tagged_only``); its text then ranks among those. A runbook is visible when any
cluster the investigation looked at allows it for the asker (:class:`Visibility`): the namespaces
of the asker's scope there — for a channel, the intersection of every reader's, as the scope the
job was given already is.
"""

from __future__ import annotations

from sleuth_agent.knowledge._search import Hit, Visibility, query_tags
from sleuth_common.messages import InvestigationJob, InvestigationResult, ScopeReply

__all__ = ["facts", "runbook_line", "visibilities"]

_STEP_CHARS = 240


def _object(ref: str) -> tuple[str, str]:
    """``Kind/namespace/name`` (or ``Kind/name``) → (kind, name)."""
    parts = ref.split("/")
    return (parts[0], parts[-1]) if len(parts) >= 2 else ("", "")


def facts(job: InvestigationJob, result: InvestigationResult) -> tuple[str, frozenset[str]]:
    """(text, tags) to search runbooks with."""
    tags: set[str] = set()
    text = [job.question]
    rc = result.root_cause
    if rc is not None and result.status == "diagnosed":
        kind, name = _object(rc.resource)
        tags |= query_tags(family=rc.family, kind=kind, workload=name)
        if rc.affected:
            tags |= query_tags(workload=_object(rc.affected)[1])
        text += [rc.family.replace("_", " "), rc.summary]  # for ranking and the step; never shown
    for alert in job.alerts:
        tags |= query_tags(alert=alert.labels.get("alertname", ""))
        text.append(alert.annotations.get("summary", ""))
    return " ".join(t for t in text if t), frozenset(tags)


def visibilities(job: InvestigationJob, scope: ScopeReply) -> list[Visibility]:
    """One per cluster the job is about (all of the scope's when it names none)."""
    names = [c for c in job.clusters if c in scope.clusters] or sorted(scope.clusters)
    return [Visibility(c, frozenset(scope.clusters[c].namespaces), scope.clusters[c].cluster_wide) for c in names]


def runbook_line(hit: Hit) -> str:
    """``**Runbook:** *Title* (`id`) — step 3 applies: …`` (Markdown, one paragraph)."""
    rb = hit.runbook
    line = f"**Runbook:** *{rb.title}* (`{rb.id}`)"
    if hit.step is not None:
        n, text = hit.step
        text = text if len(text) <= _STEP_CHARS else text[: _STEP_CHARS - 1] + "…"
        return f"{line} — step {n} applies: {text}"
    return f"{line}, for {', '.join(f'`{t}`' for t in hit.matched_tags)}"
