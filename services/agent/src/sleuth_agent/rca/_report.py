"""Report: findings → the result JSON of DESIGN §3 and its Markdown answer
(Problem → Root cause → Evidence → Actions). Only evidence from this run is cited."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from sleuth_agent.rca._cluster import ClusterOutcome
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import ContainerView, PodView, items_of
from sleuth_agent.rca._symptoms import ongoing, request_level
from sleuth_agent.rca.engine.blast import blast_radius
from sleuth_agent.rca.engine.cite import _pod_state
from sleuth_agent.rca.engine.rank import Finding
from sleuth_common.messages import Action, Candidate, InvestigationResult, RootCause
from sleuth_common.messages.jobs import ResultStatus

__all__ = ["build_result", "fill", "simple_result"]


class _Vars(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def fill(template: str, variables: Mapping[str, str]) -> str:
    try:
        return template.format_map(_Vars(variables))
    except (ValueError, IndexError):
        return template


def simple_result(status: str, answer: str, **kw: object) -> InvestigationResult:
    return InvestigationResult(status=status, answer_markdown=answer, **kw)  # type: ignore[arg-type]


def _summary(f: Finding) -> str:
    if f.match is None:
        pod, c = f.obs.representative()
        state = (c.reason or c.state) if c else (pod.phase if pod else "unknown")
        return (
            f"{f.obs.resource} is not healthy ({state}), but what was collected does not match a known "
            "failure signature."
        )
    text = fill(f.match.signature.summary, f.variables)
    if f.match.signature.family != "rollout_stuck":
        # A stuck rollout is a consequence: say it next to the cause of the new pods' failure.
        for note in f.obs.derived.get("rollout", []):
            if note not in text:
                text += " " + note
    if f.changed:
        text += " " + f.changed
    return text


def _actions(f: Finding) -> list[Action]:
    if f.match is None:
        return []
    return [
        Action(text=fill(a.get("text", ""), f.variables), command=fill(a.get("command", ""), f.variables))
        for a in f.match.signature.actions
    ]


_RECENT_HISTORY_MIN = 180  # a recovered blip older than this does not explain a problem reported now


def _containers(observed: Sequence[WorkloadObservation]) -> Iterator[tuple[PodView, ContainerView]]:
    for o in observed:
        for p in o.pods:
            for c in p.containers:
                yield p, c


def _sigkills(healthy: Sequence[WorkloadObservation]) -> list[str]:
    """Containers whose last run ended with exit code 137 and reason ``Error`` (not OOMKilled)."""
    return [
        f"container {c.name} of pod {p.name}: {c.restart_count} restart(s), last exit code 137 "
        f"reason {c.last_reason or 'unknown'}"
        + (f", last at {c.last_finished}" if c.last_finished else "")
        + (f"; its memory limit is {c.memory_limit}" if c.memory_limit else "")
        for p, c in _containers(healthy)
        if c.last_exit_code == 137 and c.last_reason != "OOMKilled"
    ]


def _terminations(observed: Sequence[WorkloadObservation]) -> list[str]:
    """Past terminations of containers that run again now: what an abstention saw (exit code,
    reason, when, on which node), even when it cannot say why."""
    return [
        f"container {c.name} of pod {p.name} restarted {c.restart_count} time(s), last exit code "
        f"{c.last_exit_code if c.last_exit_code is not None else '?'} (reason {c.last_reason or 'unknown'})"
        + (f" at {c.last_finished}" if c.last_finished else "")
        + (f" on node {p.node}" if p.node else "")
        for p, c in _containers(observed)
        if c.restart_count and (c.last_exit_code is not None or c.last_reason)
    ]


def _unexplained(
    healthy: Sequence[WorkloadObservation], symptoms: list[str], history: list[str], where: str, cite: list[str]
) -> list[str]:
    """Why "healthy" would be a guess: paragraphs of an ``insufficient_evidence`` answer, or []."""
    named = [o for o in healthy if o.named] or (list(healthy) if symptoms else [])
    kills = _sigkills(named)
    names = ", ".join(sorted(f"{o.kind}/{o.name}" for o in (named or healthy))[:10])
    refs = (" " + _refs(cite)) if cite else ""
    if kills:
        return [
            "**Not enough evidence for a root cause.** "
            + "; ".join(kills[:3])
            + ". Exit code 137 is a SIGKILL; the kubelet did not record OOMKilled, so the container was not "
            "killed for reaching its own memory limit. Something outside it sent the kill: the node's kernel "
            "OOM killer under node memory pressure, an eviction or preemption, or a manual or external kill "
            f"(a debugger, a sidecar, a node agent). Nothing in the cluster data I could read pins which.{refs}",
            f"**Checked:** the pods of {names} (running and ready now), their last terminations, the events "
            "about them and their logs.",
            "**Look next:** the node's kernel log around the kill time (`journalctl -k | grep -i -e oom -e killed` "
            "on the node), `kubectl describe node <node>` for MemoryPressure and its events, node-level memory "
            "metrics and the container's memory usage just before each restart, and any tooling that kills pods.",
        ]
    recent = [int(m) for o in healthy for m in o.derived.get("history_minutes", []) if m.isdigit()]
    explained = (
        bool(recent) and min(recent) <= _RECENT_HISTORY_MIN
        if request_level(symptoms)
        else bool(history) or not ongoing(symptoms)
    )
    if symptoms and not explained:
        said = ", ".join(f'"{w}"' for w in symptoms[:4])
        return [
            f"**Not enough evidence for a root cause.** You report a problem ({said}), but every pod of {names} "
            f"in {where} is running and ready now, and the pods, events and logs I could read show no current "
            f"failure that explains it.{refs} That does not mean nothing is wrong: the cause is likely outside "
            "what I examined.",
            *(["**Seen:** " + "; ".join(seen[:4]) + "."] if (seen := _terminations(named or healthy)) else []),
            f"**Checked:** pod status and readiness, restarts and last terminations, events and recent logs of {names}.",
            "**Look next:** the path in front of the pods (Ingress or load balancer and its controller's logs, "
            "the Service's endpoints), NetworkPolicies that select the pods, the dependencies the app calls, and "
            "request metrics (error rate and latency) for the time of the symptom.",
        ]
    return []


def build_result(
    outcomes: Sequence[ClusterOutcome],
    log: EvidenceLog,
    *,
    scope_text: str,
    notes: Sequence[str] = (),
    extra_unavailable: Sequence[str] = (),
    cluster_wide: bool = False,
) -> InvestigationResult:
    findings = sorted((f for o in outcomes for f in o.findings), key=lambda f: -f.score)
    examined = [ns for o in outcomes for ns in o.namespaces]
    refused = list(dict.fromkeys(w for o in outcomes for w in o.access_refused))
    unavailable = tuple(dict.fromkeys([*extra_unavailable, *log.unavailable]))
    withheld = tuple(log.withheld_notes())
    common = {
        "evidence": tuple(log.items),
        "withheld": withheld,
        "unavailable": unavailable,
        "tool_calls": log.calls,
    }
    lead = [*notes, *(n for o in outcomes for n in o.notes)]
    if refused:
        lead.append("You do not have access to namespace " + ", ".join(refused) + ".")

    if not examined and refused:
        answer = _md([*lead, f"You can read: {scope_text}."], [], log, unavailable, withheld)
        return InvestigationResult(status="denied", answer_markdown=answer, **common)  # type: ignore[arg-type]
    words = ", ".join(dict.fromkeys(w for o in outcomes for w in o.unresolved_words)) or "the name in your question"
    if any(o.unresolved for o in outcomes) and not findings:
        readable = list(dict.fromkeys(ns for o in outcomes if o.unresolved for ns in o.named_namespaces))
        if cluster_wide or readable:
            # The caller can read where it should be: its absence there is what we found, not an access limit.
            where = f" in namespace {', '.join(readable)}" if readable else ""
            text = (
                f"I could not find a workload matching {words}{where}, so I could not pin down which object "
                "to investigate; name the pod or workload it belongs to."
            )
            return InvestigationResult(
                status="insufficient_evidence",
                answer_markdown=_md([*lead, text], [], log, unavailable, withheld),
                **common,  # type: ignore[arg-type]
            )
        text = (
            f"I could not find {words} in the namespaces you can read ({scope_text}). It may not exist, "
            "or it may be in a namespace you do not have access to: your access limits what I can see, "
            "so this is not proof that it does not exist."
        )
        return InvestigationResult(
            status="denied",
            answer_markdown=_md([*lead, text], [], log, unavailable, withheld),
            **common,  # type: ignore[arg-type]
        )
    if any(o.ambiguous for o in outcomes) and not findings:
        options = list(dict.fromkeys(c for o in outcomes for c in o.ambiguous_candidates))
        text = (
            f"The name {words} in your question matches more than one workload"
            + (f" ({', '.join(options[:8])})" if options else "")
            + ", so I could not tell which one you mean; please name the workload exactly."
        )
        return InvestigationResult(
            status="insufficient_evidence",
            answer_markdown=_md([*lead, text], [], log, unavailable, withheld),
            **common,  # type: ignore[arg-type]
        )

    if not findings:
        healthy = [o for out in outcomes for o in out.healthy]
        where = ", ".join(examined) or scope_text
        symptoms = list(dict.fromkeys(w for o in outcomes for w in o.symptoms))
        history = list(dict.fromkeys(h for o in healthy for h in o.derived.get("history", [])))
        if healthy and not log.unavailable:
            doubt = _unexplained(healthy, symptoms, history, where, [e for o in outcomes for e in o.namespace_evidence])
            if doubt:
                return InvestigationResult(
                    status="insufficient_evidence",
                    answer_markdown=_md([*lead, *doubt], [], log, unavailable, withheld),
                    **common,  # type: ignore[arg-type]
                )
            names = ", ".join(sorted(f"{o.kind}/{o.name}" for o in healthy)[:10])
            if any(o.partial for o in outcomes):
                # Healthy is a claim about everything asked of; part of it was not read.
                text = (f"Nothing is failing in what I read of {where} (the pods read, of {names}, are running "
                        "and ready), but that was not all of it (see above), so I cannot say the rest is healthy.")
                return InvestigationResult(
                    status="insufficient_evidence",
                    answer_markdown=_md([*lead, text], [], log, unavailable, withheld),
                    **common,  # type: ignore[arg-type]
                )
            text = f"Nothing is failing in {where}: every pod of {names} is running and ready."
            if history:
                text += " Earlier trouble has recovered: " + "; ".join(history[:3]) + "."
            cite = [e for o in outcomes for e in o.namespace_evidence]
            rc = RootCause(
                family="healthy", resource="", summary=text, confidence="high" if cite else "medium"
            )
            answer = _md([*lead, f"**Status:** {text} " + _refs(cite)], [], log, unavailable, withheld)
            return InvestigationResult(status="healthy", root_cause=rc, answer_markdown=answer, **common)  # type: ignore[arg-type]
        text = f"I found nothing failing in {where}, but the evidence is incomplete" + (
            " (some sources did not answer)." if unavailable else "."
        )
        return InvestigationResult(
            status="insufficient_evidence",
            answer_markdown=_md([*lead, text], [], log, unavailable, withheld),
            **common,  # type: ignore[arg-type]
        )

    top = findings[0]
    matched = [f for f in findings if f.match is not None]
    primary = matched[0] if matched else top
    # The gate: a root cause needs at least medium confidence; below that, say what was checked.
    status: ResultStatus = (
        "diagnosed" if matched and primary.confidence in ("high", "medium") else "insufficient_evidence"
    )
    rc = RootCause(
        family=(primary.located.family if primary.located and primary.located.family else primary.family)
        if status == "diagnosed"
        else "insufficient_evidence",
        resource=primary.resource if status == "diagnosed" else primary.obs.resource,
        affected=primary.affected if status == "diagnosed" and primary.affected != primary.resource else "",
        chain=_chain(primary) if status == "diagnosed" else "",
        summary=_summary(primary),
        confidence=primary.confidence if status == "diagnosed" else "low",
    )
    others = [f for f in findings if f is not primary]
    if status != "diagnosed" and primary.match is not None:
        others = [primary, *others]
    cands = [Candidate(family=m.signature.family, resource=primary.obs.resource, score=primary.alternative_score(m)) for m in primary.alternatives]
    cands += [Candidate(family=f.family, resource=f.resource, score=f.score) for f in others]
    cands += [
        Candidate(family=m.signature.family, resource=f.obs.resource, score=f.alternative_score(m))
        for f in others
        for m in f.alternatives
    ]
    candidates = tuple(sorted(cands, key=lambda c: -c.score))
    actions: list[Action] = _actions(primary)
    for f in others:
        actions.extend(_actions(f)[:1])
    failing = ", ".join(f.obs.name for f in findings)
    where = ", ".join(dict.fromkeys(f.obs.namespace for f in findings if f.obs.namespace)) or "the cluster"
    problem = (
        f"**Problem:** {len(findings)} workloads in {where} are failing: {failing}."
        if len(findings) > 1
        else f"**Problem:** {primary.obs.resource} is failing."
    )
    if status == "diagnosed":
        sections = [
            f"**Root cause** ({rc.family}, confidence {primary.confidence}): {_summary(primary)} "
            + _refs(primary.evidence)
        ]
        if _chain(primary):
            sections.append(f"**Chain:** {_chain(primary)} (fix `{primary.resource}`).")
        radius = _blast(primary, outcomes)
        if radius:
            sections.append(radius)
    else:
        sections = [
            "**Root cause:** not established. What was checked does not support a root cause with enough "
            f"confidence. Strongest lead ({primary.family}, confidence {primary.confidence}): "
            f"{_summary(primary)} " + _refs(primary.evidence)
        ]
    # A generic family (a crash, an unreachable dependency) that a specific cause explains is not a
    # rival explanation: only equally confident rivals of the same kind make a close call.
    close = [
        m for m in primary.alternatives
        if m.confidence == primary.confidence and not (m.signature.family in _GENERIC and primary.family not in _GENERIC)
    ]
    if status == "diagnosed" and close:
        sections.append(
            f"**Close call:** {close[0].signature.family} fits what was collected about as well as "
            f"{rc.family} (both {primary.confidence}); check both before acting."
        )
    if status != "diagnosed":
        sections.append(_next_step(primary, log))
    if primary.alternatives:
        sections.append(
            "**Other explanations considered:** "
            + "; ".join(f"{m.signature.family} ({m.confidence})" for m in primary.alternatives)
            + "."
        )
    for f in others:
        sections.append(
            f"**Also failing** — {f.obs.resource} ({f.family}, confidence {f.confidence}"
            + (f"; fix `{f.resource}`" if f.resource != f.obs.resource else "") + "): "
            f"{_summary(f)} " + _refs(f.evidence)
        )
    answer = _md([*lead, problem, *sections], actions, log, unavailable, withheld)
    return InvestigationResult(
        status=status,
        root_cause=rc,
        candidates=candidates,
        actions=tuple(actions),
        answer_markdown=answer,
        **common,  # type: ignore[arg-type]
    )


def _blast(f: Finding, outcomes: Sequence[ClusterOutcome]) -> str:
    """"Also affected or at risk": other workloads in scope that depend on the root-cause object."""
    if f.located is None:
        return ""
    for o in outcomes:
        if f in o.findings:
            b = blast_radius(o.graph, f.located.root, f.located.affected)
            if b is not None:
                names = ", ".join(f"{w.kind} {w.name}" for w in b.workloads)
                return f"**Also affected or at risk** (they {b.how}): {names}."
    return ""


_GENERIC = frozenset({"crash_loop_app_error", "dependency_unreachable", "rollout_stuck"})


def _next_step(f: Finding, log: EvidenceLog) -> str:
    """What an abstention checked, what it lacked, and the command to run next."""
    tools = sorted({r.tool for r in log.results if r.ok})
    pod, c = f.obs.representative()
    missing = []
    if not any(f.obs.logs.values()):
        missing.append("a log line that names the failure")
    if not [e for e in f.obs.events if e.type == "Warning"]:
        missing.append("a Warning event")
    if f.match is None:
        missing.append("a known failure signature")
    if pod is not None:
        nxt = f"kubectl describe pod {pod.name} -n {f.obs.namespace}"
        if c is not None and c.restart_count:
            nxt = f"kubectl logs {pod.name} -n {f.obs.namespace} -c {c.name} --previous"
    else:
        nxt = f"kubectl describe {f.obs.kind.lower()} {f.obs.name} -n {f.obs.namespace}"
    return (
        f"**Checked:** {', '.join(tools) or 'nothing answered'} ({log.calls} calls). "
        + (f"**Missing:** {'; '.join(missing)}. " if missing else "")
        + f"**Next:** `{nxt}`"
    )


def _chain(f: Finding) -> str:
    """The causal chain in one line, when the root cause is another object than the symptom's."""
    if f.located is None or not f.located.chain or f.resource == f.obs.resource:
        return ""
    chain = f.located.chain
    return chain[0].upper() + chain[1:]


def _refs(ids: Sequence[str]) -> str:
    return f"[{', '.join(ids)}]" if ids else ""


def _md(
    paragraphs: Sequence[str],
    actions: Sequence[Action],
    log: EvidenceLog,
    unavailable: Sequence[str],
    withheld: Sequence[str],
) -> str:
    parts = [p for p in paragraphs if p]
    if log.items:
        parts.append("**Evidence**")
        lines = []
        for e in log.items:
            line = f"- **{e.id}** `{e.command or e.tool}` — {e.summary}"
            if e.highlights:
                line += "; " + "; ".join(f"`{h}`" for h in e.highlights)
            lines.append(line)
        parts.append("\n".join(lines))
    if actions:
        parts.append("**Actions**")
        parts.append(
            "\n".join(
                f"{i}. {a.text}" + (f"\n   `{a.command}`" if a.command else "")
                for i, a in enumerate(actions, 1)
            )
        )
    if withheld:
        parts.append("**Not shown:** " + "; ".join(withheld) + ".")
    if unavailable:
        parts.append("**Unavailable:** " + "; ".join(unavailable))
    return "\n\n".join(parts)


def degraded_result(outcomes: Sequence[ClusterOutcome], log: EvidenceLog, clusters: Sequence[str]) -> InvestigationResult:
    """The overall deadline passed: answer with what was gathered and say what was not reached,
    instead of an error that discards it (DESIGN §3)."""
    done = [o.cluster for o in outcomes]
    missed = [c for c in clusters if c not in done]
    late = "The investigation ran out of time before it finished"
    if any(o.findings for o in outcomes):
        note = f"{late}: " + (f"cluster {', '.join(missed)} was not reached; " if missed else "") + "this answer uses what was gathered."
        result = build_result(outcomes, log, scope_text=", ".join(done), notes=[note])
        return result
    for r in log.results[:8]:
        if r.ok and r.tool == "list_pods":
            pods = [PodView.parse(p) for p in items_of(r.data, "pods")]
            bad = [p for p in pods if not p.healthy]
            ns = (r.args or {}).get("namespace", "")
            log.cite(
                r,
                f"{len(pods)} pod(s) in {ns}" + (f", {len(bad)} not running and ready" if bad else ", all running and ready"),
                [f"{p.name}: {_pod_state(p)}" for p in bad[:4]],
            )
        elif r.ok:
            log.cite(r, f"read before the deadline ({r.tool})")
    unavailable = tuple(log.unavailable)
    withheld = tuple(log.withheld_notes())
    text = (
        f"{late}: {log.calls} tool call(s) were made, but matching them to a cause was not reached"
        + (f" (cluster {', '.join(missed)} not reached)" if missed else "")
        + ". What was read is listed below. Ask again naming the workload or namespace to narrow it down."
    )
    return InvestigationResult(
        status="insufficient_evidence",
        answer_markdown=_md([text], [], log, unavailable, withheld),
        evidence=tuple(log.items),
        withheld=withheld,
        unavailable=unavailable,
        tool_calls=log.calls,
    )
