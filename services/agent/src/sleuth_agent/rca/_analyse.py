"""One cluster: plan the namespaces and workloads, collect, follow up on failing workloads,
match signatures and cite evidence."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sleuth_agent.rca._collect import Collected, Details, Toolbox, collect_details, collect_namespaces
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation, error_lines, next_memory_limit
from sleuth_agent.rca._plan import QuestionTerms, mentions, resolve_names
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca._signatures import Match, load_catalog, match_facts
from sleuth_agent.settings import AgentSettings
from sleuth_common.scope import Scope

__all__ = ["ClusterOutcome", "Finding", "analyse_cluster"]

Progress = Callable[[str, str], Awaitable[None]]

_CONFIDENCE_SCORE = {"high": 0.9, "medium": 0.6, "low": 0.3}
_PLATFORM = ("kube-system", "kube-public", "kube-node-lease")


@dataclass
class Finding:
    obs: WorkloadObservation
    match: Match | None
    evidence: list[str] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.match.signature.family if self.match else "insufficient_evidence"

    @property
    def confidence(self) -> str:
        return self.match.confidence if self.match else "low"

    @property
    def score(self) -> float:
        """Confidence first; then the more specific signature (earlier in the catalog); then how
        many pods are affected."""
        if self.match is None:
            return round(0.1 + min(len(self.obs.unhealthy_pods), 10) / 1000, 3)
        catalog = load_catalog()
        position = next((i for i, s in enumerate(catalog) if s is self.match.signature), len(catalog))
        specific = (len(catalog) - position) / 100
        return round(
            _CONFIDENCE_SCORE.get(self.confidence, 0.3)
            + specific
            + min(len(self.obs.unhealthy_pods), 10) / 1000,
            3,
        )


@dataclass
class ClusterOutcome:
    cluster: str
    namespaces: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    healthy: list[WorkloadObservation] = field(default_factory=list)
    access_refused: list[str] = field(default_factory=list)  # namespace words from the question
    unresolved: bool = False
    ambiguous: bool = False
    skipped_namespaces: int = 0
    namespace_evidence: list[str] = field(default_factory=list)


async def _noop(stage: str, message: str) -> None:
    return None


async def analyse_cluster(
    tools: Toolbox,
    scope: Scope,
    cluster: str,
    terms: QuestionTerms,
    settings: AgentSettings,
    log: EvidenceLog,
    progress: Progress = _noop,
) -> ClusterOutcome:
    out = ClusterOutcome(cluster)
    timeout = settings.tool_timeout
    known = sorted(ns for ns in scope.namespaces if ns)
    if scope.cluster_wide and not known:
        # No namespace list came with the scope: verify the words of the question instead.
        for word in dict.fromkeys([*terms.namespace_claims, *terms.names]):
            r = log.record(
                await tools.call("get_resource", {"kind": "Namespace", "name": word}, timeout=timeout)
            )
            if r.ok:
                known.append(word)
    named_ns = [ns for ns in known if mentions(terms.text, ns)]
    out.access_refused = [w for w in terms.namespace_claims if w not in known and not scope.cluster_wide]
    if named_ns:
        targets = named_ns
    elif out.access_refused:
        return out  # the question is only about namespaces the caller cannot read
    else:
        # Tenants first, platform namespaces last (they are cut first when there are too many).
        targets = sorted(known, key=lambda ns: (ns in _PLATFORM or ns.startswith("kube-"), ns))
    out.skipped_namespaces = max(0, len(targets) - settings.max_namespaces)
    targets = targets[: settings.max_namespaces]
    out.namespaces = targets
    await progress("target", f"looking at {len(targets)} namespace(s) on {cluster}: {', '.join(targets)}")

    await progress("collecting", "reading pods, workloads and events")
    got: Collected = await collect_namespaces(tools, log, targets, timeout)
    observations = got.observations()

    # Which workloads does the question name?
    words = [w for w in terms.names if w not in known and w not in terms.namespace_claims]
    pool = [(ns, name) for (ns, _kind, name) in observations]
    matched, unmatched, ambiguous = resolve_names(words, pool)
    if matched:
        chosen = [o for key, o in observations.items() if (key[0], key[2]) in matched]
    elif (unmatched or ambiguous) and terms.names_an_object(unmatched + ambiguous):
        out.unresolved = bool(unmatched) and not ambiguous
        out.ambiguous = bool(ambiguous)
        return out
    else:
        chosen = list(observations.values())
    if matched:
        await progress("target", "found " + ", ".join(sorted(f"{o.kind}/{o.name}" for o in chosen)))

    for ns in targets:
        r = got.results.get(("list_pods", ns))
        if r is not None and r.ok:
            pods = got.pods.get(ns, [])
            bad = [p for p in pods if not p.healthy]
            eid = log.cite(
                r,
                f"{len(pods)} pod(s) in {ns}"
                + (f", {len(bad)} not running and ready" if bad else ", all running"),
                [f"{p.name}: {_pod_state(p)}" for p in bad[:4]],
            )
            out.namespace_evidence.append(eid)

    failing = [o for o in chosen if o.pods and not o.healthy]
    out.healthy = [o for o in chosen if o.healthy]
    failing.sort(key=lambda o: (-o.facts().max_restarts, o.resource))
    failing = failing[: settings.max_workloads]
    if failing:
        await progress("tool_calls", f"reading pods, events and logs of {len(failing)} failing workload(s)")
    details = await asyncio.gather(*(collect_details(tools, log, o, timeout) for o in failing))

    await progress("matching", "matching failure signatures")
    ranked = []
    for obs, det in zip(failing, details, strict=True):
        finding = Finding(obs, match_facts(obs.facts()))
        finding.variables = _variables(obs, finding.match)
        ranked.append((finding, det))
    ranked.sort(key=lambda fd: -fd[0].score)
    for finding, det in ranked:  # evidence ids follow the ranking
        finding.evidence = _cite(log, finding.obs, det, finding)
        out.findings.append(finding)
    return out


def _pod_state(p: PodView) -> str:
    for c in p.containers:
        if c.state == "waiting" and c.reason:
            return c.reason
        if c.state == "terminated" and c.reason:
            return c.reason
    for ctype, status, reason, _msg in p.conditions:
        if ctype == "PodScheduled" and status != "True" and reason:
            return f"{p.phase} ({reason})"
    return p.phase or "unknown"


def _variables(obs: WorkloadObservation, match: Match | None) -> dict[str, str]:
    pod, c = obs.representative()
    facts = obs.facts()
    codes = [str(x) for x in facts.exit_codes if x not in (0,)]
    v = {
        "resource": obs.resource,
        "kind": obs.kind,
        "kind_lower": obs.kind.lower(),
        "workload": obs.name,
        "namespace": obs.namespace,
        "pod": pod.name if pod else "",
        "container": c.name if c else "",
        "restarts": str(c.restart_count if c else 0),
        "memory_limit": (c.memory_limit if c else "") or "its",
        "memory_limit_next": next_memory_limit(c.memory_limit)
        if c and c.memory_limit
        else "<a higher limit>",
        "memory_request": (c.memory_request if c else "") or "unset",
        "exit_code": codes[0] if codes else "?",
        "image": (c.image if c else "") or "?",
        "waiting_reason": facts.waiting_reason[0] if facts.waiting_reason else "",
        "event_message": facts.event_message[0] if facts.event_message else "",
        "log_line": facts.log[0] if facts.log else "(no error line in the logs)",
    }
    if match is not None:
        v.update(match.variables)
    return v


def _cite(log: EvidenceLog, obs: WorkloadObservation, det: Details, finding: Finding) -> list[str]:
    ids: list[str] = []
    pod, c = obs.representative()
    if det.pod is not None and det.pod.ok and pod is not None:
        hl = [_pod_state(pod)]
        if c is not None:
            if c.last_reason:
                hl.append(f"last terminated: {c.last_reason}")
            if c.last_exit_code is not None:
                hl.append(f"exit code {c.last_exit_code}")
            if c.restart_count:
                hl.append(f"{c.restart_count} restarts")
            if c.memory_limit:
                hl.append(f"limits.memory={c.memory_limit}")
            if c.state == "waiting" and c.message and finding.family in ("missing_config", "image_pull"):
                hl.append(c.message[:160])
        for ctype, status, _r, msg in pod.conditions:
            if ctype == "PodScheduled" and status != "True" and msg:
                hl.append(msg[:160])
        ids.append(log.cite(det.pod, f"pod {pod.name}: {_pod_state(pod)}", hl))
    if det.events is not None and det.events.ok:
        warn = [e for e in obs.events if e.type == "Warning" and (pod is None or e.object_name == pod.name)]
        summary = f"{len(warn)} warning event(s) for {pod.name if pod else obs.name}"
        ids.append(log.cite(det.events, summary, [f"{e.reason}: {e.message[:140]}" for e in warn[:3]]))
    for result, label in ((det.previous_log, "previous"), (det.current_log, "current")):
        if result is not None and result.ok and c is not None:
            text = obs.logs.get((pod.name if pod else "", c.name, label == "previous"), "")
            lines = error_lines(text, limit=3)
            if lines or label == "previous":
                ids.append(
                    log.cite(result, f"{label} log of {c.name} ({len(text.splitlines())} lines)", lines)
                )
    return ids
