"""The runbook line of an answer: which facts of an investigation a runbook's tags may match, who
may see which runbook, and how the line reads.

Facts: the root cause's family and object (``Kind/namespace/name`` → ``kind:`` and ``workload:``),
the affected workload, the alerts' ``alertname``. Only a runbook whose tags match one of them is
linked unasked (``tagged_only``); its text then ranks among those. A runbook is visible when any
cluster the investigation looked at allows it for the asker (:class:`Visibility`): the namespaces
of the asker's scope there — for a channel, the intersection of every reader's, as the scope the
job was given already is.

Standing instructions (``type: instruction``) of a run are those the asker may see and that are for
a namespace the investigation is about (or for none). The AI model gets them with the question; an
instruction with ``suppress`` marks a matching deterministic finding as expected (:func:`suppressing`)
and the answer leads with that, naming what it marks. Every answer a standing instruction shaped ends
with a footnote naming it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from sleuth_agent.knowledge._runbooks import Runbook, md_plain, no_images
from sleuth_agent.knowledge._search import Hit, Visibility, query_tags
from sleuth_common.messages import InvestigationJob, InvestigationResult, ScopeReply

__all__ = ["about_namespaces", "expected_note", "facts", "footnote", "instructions_for", "runbook_line",
           "suppressing", "visibilities"]

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
    line = f"**Runbook:** *{md_plain(rb.title)}* (`{rb.id}`)"
    if hit.step is not None:
        n, text = hit.step
        text = text if len(text) <= _STEP_CHARS else text[: _STEP_CHARS - 1] + "…"
        return f"{line} — step {n} applies: {no_images(text)}"
    return f"{line}, for {', '.join(f'`{t}`' for t in hit.matched_tags)}"


# -- standing instructions --------------------------------------------------------------------------

def _namespace_of(ref: str) -> str:
    parts = ref.split("/")
    return parts[1] if len(parts) == 3 else ""


def about_namespaces(job: InvestigationJob, result: InvestigationResult) -> set[str]:
    """The namespaces an investigation is about: its root cause's and candidates' objects, its alerts'."""
    refs = [result.root_cause.resource, result.root_cause.affected] if result.root_cause else []
    refs += [c.resource for c in result.candidates]
    out = {ns for ns in map(_namespace_of, refs) if ns}
    out |= {a.labels["namespace"] for a in job.alerts if a.labels.get("namespace")}
    return out


def instructions_for(index_instructions: Sequence[Runbook], visible: Sequence[Visibility], job: InvestigationJob,
                     result: InvestigationResult) -> list[Runbook]:
    """The standing instructions of this run: every one the asker (every reader) may see, and — when
    the investigation is about particular namespaces — only those for one of them or for none."""
    about = about_namespaces(job, result)
    out = []
    for rb in index_instructions:
        if not any(v.allows(rb) for v in visible):
            continue
        tagged = set(rb.tagged("namespace"))
        if tagged and about and not tagged & about:
            continue
        out.append(rb)
    return out


def suppressing(instructions: Sequence[Runbook], job: InvestigationJob, result: InvestigationResult,
                now: datetime | None = None) -> Runbook | None:
    """The first instruction that marks this result's root cause as expected, if any. Never for a
    critical alert, never for a family it does not name, only on the workloads / alert it names, in
    its namespaces and within its time window."""
    rc = result.root_cause
    if rc is None or result.status != "diagnosed":
        return None
    if any(a.labels.get("severity", "").lower() == "critical" for a in job.alerts):
        return None
    workloads = {name.lower() for name in (_object(rc.resource)[1], _object(rc.affected)[1]) if name}
    alerts = {a.labels.get("alertname", "").lower() for a in job.alerts} - {""}
    namespace = _namespace_of(rc.resource) or _namespace_of(rc.affected)
    for rb in instructions:
        sup = rb.suppress
        if sup is None or sup.family != rc.family.lower():
            continue
        tagged = rb.tagged("namespace")
        if tagged and namespace not in tagged:
            continue
        if not ((sup.workload and any(fnmatch.fnmatchcase(w, sup.workload) for w in workloads))
                or (sup.alert and sup.alert in alerts)):
            continue
        if sup.between is not None and not _within(sup.between, sup.timezone, now):
            continue
        return rb
    return None


def _within(window: tuple[int, int], timezone: str, now: datetime | None) -> bool:
    local = (now or datetime.now(UTC)).astimezone(ZoneInfo(timezone))
    minute = local.hour * 60 + local.minute
    start, end = window
    return start <= minute < end if start <= end else (minute >= start or minute < end)


def expected_note(rb: Runbook, result: InvestigationResult) -> str:
    """The paragraph an answer leads with when ``rb`` marks its finding as expected: what it hides, by
    which instruction, and that the finding follows in full."""
    rc = result.root_cause
    assert rb.suppress is not None and rc is not None
    return (f"**Expected** — standing instruction *{md_plain(rb.title)}* (`{rb.id}`) marks {rb.suppress.describe()} as "
            f"expected: {' '.join(rb.body.split())}\n\nWhat it marks: `{rc.family}` on `{rc.resource}`. "
            "The finding follows in full; tell your platform team if this is not the expected case.")


def footnote(instructions: Sequence[Runbook]) -> str:
    """The last line of an answer shaped by standing instructions."""
    names = ", ".join(f"*{md_plain(rb.title)}* (`{rb.id}`)" for rb in instructions)
    return f"*Shaped by standing instruction{'s' if len(instructions) > 1 else ''}: {names}.*"
