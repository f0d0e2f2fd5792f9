"""One cluster: plan the namespaces and targets, collect, follow up, match signatures, rank and
cite evidence. Nothing here knows any scenario: targets come from the question or the alert
verified against live objects."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sleuth_agent.rca._collect import Collected, Details, Toolbox, collect_details, collect_namespaces
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation, error_lines
from sleuth_agent.rca._plan import AlertTarget, QuestionTerms, matching, mentions, resolve_names
from sleuth_agent.rca._recency import reference_time
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca._symptoms import asserted_symptoms, request_level
from sleuth_agent.rca._targets import (
    _claim_owners,
    _hpa_targets,
    _ingress_services,
    _named_nodes,
    _node_support,
    _node_targets,
    _rollout_note,
)
from sleuth_agent.rca.engine.build import build_graph
from sleuth_agent.rca.engine.calibrate import calibrate
from sleuth_agent.rca.engine.cite import _cite, _cite_change, _pod_state
from sleuth_agent.rca.engine.failing import _failing
from sleuth_agent.rca.engine.graph import Graph, Ref, Rel
from sleuth_agent.rca.engine.locate import locate
from sleuth_agent.rca.engine.match import _variables
from sleuth_agent.rca.engine.rank import Finding, rank_matches
from sleuth_agent.rca.followups import FollowUps, controllers, service_findings
from sleuth_agent.rca.followups import services as services_followup
from sleuth_agent.settings import AgentSettings
from sleuth_common.scope import Scope

__all__ = ["ClusterOutcome", "analyse_cluster"]

Progress = Callable[[str, str], Awaitable[None]]

_PLATFORM = ("kube-system", "kube-public", "kube-node-lease")


@dataclass
class ClusterOutcome:
    cluster: str
    namespaces: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    healthy: list[WorkloadObservation] = field(default_factory=list)
    access_refused: list[str] = field(default_factory=list)  # namespace words from the question
    unresolved: bool = False
    ambiguous: bool = False
    unresolved_words: list[str] = field(default_factory=list)
    ambiguous_candidates: list[str] = field(default_factory=list)  # what an ambiguous name may mean
    named_namespaces: list[str] = field(default_factory=list)  # readable namespaces the question names
    skipped_namespaces: int = 0
    partial: list[str] = field(default_factory=list)  # lists the tools returned only part of (counts, no names)
    namespace_evidence: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    symptoms: list[str] = field(default_factory=list)  # current problems the question asserts
    graph: Graph = field(default_factory=Graph)


async def _noop(stage: str, message: str) -> None:
    return None


@dataclass
class _Plan:
    known: list[str]  # the namespaces the caller can read (or the question's words verified as such)
    targets: list[str]  # the namespaces to look at
    node_targets: list[str]  # nodes the alert or the question names
    asked_nodes: list[str]  # nodes the question names


async def analyse_cluster(
    tools: Toolbox,
    scope: Scope,
    cluster: str,
    terms: QuestionTerms,
    settings: AgentSettings,
    log: EvidenceLog,
    progress: Progress = _noop,
    alert: AlertTarget | None = None,
) -> ClusterOutcome:
    out = ClusterOutcome(cluster)
    out.symptoms = asserted_symptoms(terms.text)
    timeout = settings.tool_timeout
    plan = await _plan(tools, scope, terms, settings, log, out, alert)
    if plan is None:
        return out  # the question is only about namespaces the caller cannot read
    targets = plan.targets
    if plan.node_targets:
        await _node_targets(tools, log, plan.node_targets, scope, out, timeout)
        if not targets:
            return out
    await progress("target", f"looking at {len(targets)} namespace(s) on {cluster}: {', '.join(targets)}")

    await progress("collecting", "reading pods, workloads, services and events")
    got: Collected = await collect_namespaces(tools, log, targets, timeout)
    _partial_reads(out, got, targets)
    observations = got.observations()
    for (ns, _kind, _name), o in observations.items():
        listed = got.results.get(("list_pods", ns))
        o.pods_unread = bool(listed and isinstance(listed.data, dict) and listed.data.get("complete") is False)
    services = {(ns, str(s.get("name"))) for ns in targets for s in got.services.get(ns, [])}
    matched, unmatched, ambiguous = await _resolve(
        tools, log, got, plan, terms, alert, observations, services, timeout
    )
    chosen = _choose(out, terms, observations, services, matched, unmatched, ambiguous)
    if chosen is None:
        return out  # the question names an object that is not there, or more than one
    for o in chosen:
        o.named = bool(matched)
        if alert is not None and o.named:
            o.alerts.extend(alert.facts)
    if matched:
        await progress("target", "found " + ", ".join(sorted(f"{o.kind}/{o.name}" for o in chosen)))
    _namespace_evidence(out, got, targets, log)

    failing, quiet_named, examine = _to_examine(out, got, targets, chosen, terms, settings)
    if examine:
        await progress("tool_calls", f"reading pods, events and logs of {len(examine)} workload(s)")
    details = await asyncio.gather(
        *(collect_details(tools, log, o, timeout, troubled=o in failing) for o in examine)
    )
    follow = FollowUps(tools, log, got, timeout, scope.cluster_wide)
    await asyncio.gather(*(follow.run(o) for o in examine))
    for o in examine:
        controllers.apply(o, controllers.controller_facts(o, got.workloads.get(o.namespace, [])))

    wanted = _wanted_services(services, matched, examine)
    # A Service reached only through a caller's failing connections (by ClusterIP) is not a finding
    # of its own: the caller's chain ends there (families/dependency_unreachable.py).
    await asyncio.gather(*(
        services_followup.unserved_target_port(follow.ctx, ns, svc)
        for ns in targets for svc in got.services.get(ns, []) if (ns, str(svc.get("name"))) in wanted
    ))
    svc_obs = service_findings(got, targets, wanted, log)

    for o in examine:  # a Deployment whose rollout timed out says so, whatever the question asked
        _rollout_note(o, got, log)

    await progress("matching", "matching failure signatures")
    ranked = _rank(out, [*zip(examine, details, strict=True), *((s, None) for s in svc_obs)], quiet_named)
    out.graph = build_graph(got, log.results)
    for o in examine:  # calls: a workload → the Service or pod its failing connections target
        for t in o.net_targets:
            out.graph.link(Ref.of(o.kind, o.namespace, o.name), Rel.CALLS, Ref.of(t.kind, t.namespace, t.name))
    for finding, _det in ranked:
        finding.located = locate(finding.family, finding.obs, finding.variables, out.graph) if finding.match else None
    for finding, det in ranked:  # evidence ids follow the ranking
        finding.evidence = _cite(log, finding.obs, det, finding)
        _cite_change(log, finding)
        out.findings.append(finding)
    if plan.asked_nodes:
        _node_support(out, got, targets, log)
    return out


async def _plan(
    tools: Toolbox,
    scope: Scope,
    terms: QuestionTerms,
    settings: AgentSettings,
    log: EvidenceLog,
    out: ClusterOutcome,
    alert: AlertTarget | None,
) -> _Plan | None:
    """The namespaces and nodes to look at, or None when the question is only about namespaces the
    caller cannot read."""
    timeout = settings.tool_timeout
    known = sorted(ns for ns in scope.namespaces if ns)
    if scope.cluster_wide and not known:
        # No namespace list came with the scope: verify the words of the question instead.
        for word in dict.fromkeys([*terms.namespace_claims, *terms.names]):
            r = log.record(await tools.call("get_resource", {"kind": "Namespace", "name": word}, timeout=timeout))
            if r.ok:
                known.append(word)
    named_ns = [ns for ns in known if mentions(terms.text, ns)]
    out.named_namespaces = named_ns
    out.access_refused = [w for w in terms.namespace_claims if w not in known and not scope.cluster_wide]
    node_targets = list(alert.nodes) if alert else []
    asked_nodes: list[str] = []
    if not node_targets and scope.cluster_wide and tools.has_tool("list_nodes"):
        # A cluster-wide caller naming a node: the node is a target, next to the namespaces.
        asked_nodes = await _named_nodes(tools, log, terms, timeout)
        node_targets = list(asked_nodes)
    if named_ns:
        targets = named_ns
    elif out.access_refused:
        return None
    else:
        # Tenants first, platform namespaces last (they are cut first when there are too many).
        targets = sorted(known, key=lambda ns: (ns in _PLATFORM or ns.startswith("kube-"), ns))
    if node_targets and not asked_nodes and not named_ns and scope.cluster_wide:
        targets = []  # the node is the target; a tenant gets their own pods looked at instead
    out.skipped_namespaces = max(0, len(targets) - settings.max_namespaces)
    targets = targets[: settings.max_namespaces]
    out.namespaces = targets
    return _Plan(known, targets, node_targets, asked_nodes)


async def _resolve(
    tools: Toolbox,
    log: EvidenceLog,
    got: Collected,
    plan: _Plan,
    terms: QuestionTerms,
    alert: AlertTarget | None,
    observations: dict[tuple[str, str, str], WorkloadObservation],
    services: set[tuple[str, str]],
    limit: float,
) -> tuple[set[tuple[str, str]], list[str], list[str]]:
    """Which objects the question (or the alert) names: (matched (namespace, name) pairs, words that
    match nothing, words that match more than one object)."""
    targets = plan.targets
    # Pod names stand for their workload.
    pod_owner = {(p.namespace, p.name): p.workload[1] for pods in got.pods.values() for p in pods}
    words = []
    for w in terms.names:
        if w in plan.known or w in terms.namespace_claims or w in plan.asked_nodes:
            continue
        owners = {name for (ns, pod), name in pod_owner.items() if pod == w and ns in targets}
        words.append(next(iter(owners)) if len(owners) == 1 else w)
    pool = [(ns, name) for (ns, _kind, name) in observations]
    matched, unmatched, ambiguous = resolve_names(words, [*pool, *sorted(services)])
    if unmatched:
        # A PersistentVolumeClaim stands for the pods that mount it and their workload.
        for word, claimants in (await _claim_owners(tools, log, got, targets, unmatched, terms, limit)).items():
            matched.update(claimants)
            unmatched.remove(word)
    if terms.hosts and (unmatched or ambiguous or not matched):
        # A host name in the question: the Ingress that routes it names the Service behind it.
        routed = await _ingress_services(tools, log, targets, terms.hosts, limit)
        if routed:
            matched.update(routed)
            ambiguous = [w for w in ambiguous if not any(w in name for _ns, name in routed)]
            unmatched = [w for w in unmatched if not any(w in name for _ns, name in routed)]
    if unmatched and alert is not None:
        # A HorizontalPodAutoscaler stands for the workload it scales.
        for word, owner in (await _hpa_targets(tools, log, targets, unmatched, limit)).items():
            matched.add(owner)
            unmatched.remove(word)
    return matched, unmatched, ambiguous


def _choose(
    out: ClusterOutcome,
    terms: QuestionTerms,
    observations: dict[tuple[str, str, str], WorkloadObservation],
    services: set[tuple[str, str]],
    matched: set[tuple[str, str]],
    unmatched: list[str],
    ambiguous: list[str],
) -> list[WorkloadObservation] | None:
    """The workloads to judge: those the question names, or every one when it names none. None (with
    ``out`` saying why) when it names an object that is not there or is one of several."""
    # "the worker" when two workloads are workers: the question means one object, which one is unclear.
    meant = [w for w in ambiguous if terms.names_an_object([w]) or w in terms.referenced]
    if matched:
        # A Job a CronJob runs stands with its CronJob: concurrency, deadlines and skipped runs are
        # the CronJob's (a hung run blocks every later one under concurrencyPolicy Forbid).
        for (ns, kind, name), o in list(observations.items()):
            view = o.workload
            if kind == "Job" and (ns, name) in matched and view is not None and view.owner_kind == "CronJob":
                matched.add((ns, view.owner_name))
        return [o for key, o in observations.items() if (key[0], key[2]) in matched]
    if (unmatched or ambiguous) and (terms.names_an_object(unmatched + ambiguous) or meant):
        out.unresolved = bool(unmatched) and not ambiguous
        out.ambiguous = bool(ambiguous)
        out.unresolved_words = [w for w in unmatched + ambiguous if terms.names_an_object([w]) or w in meant]
        pool_all = [*((ns, name) for (ns, _kind, name) in observations), *sorted(services)]
        for w in ambiguous:
            out.ambiguous_candidates.extend(
                f"{kind}/{name}" for (ns, kind, name) in observations if (ns, name) in set(matching(w, pool_all))
            )
        out.ambiguous_candidates = list(dict.fromkeys(out.ambiguous_candidates))
        return None
    return list(observations.values())


def _namespace_evidence(out: ClusterOutcome, got: Collected, targets: list[str], log: EvidenceLog) -> None:
    """One evidence item per namespace looked at: how many pods, which are not running and ready."""
    for ns in targets:
        listed = got.results.get(("list_pods", ns))
        if listed is not None and listed.ok:
            pods = got.pods.get(ns, [])
            bad = [p for p in pods if not p.healthy]
            partial = isinstance(listed.data, dict) and listed.data.get("complete") is False
            eid = log.cite(
                listed,
                (f"the first {len(pods)} pod(s) read in {ns} (more exist)" if partial else f"{len(pods)} pod(s) in {ns}")
                + (f", {len(bad)} not running and ready" if bad else ", all running and ready"),
                [f"{p.name}: {_pod_state(p)}" for p in bad[:4]],
            )
            out.namespace_evidence.append(eid)


_LISTED = {"list_pods": "pods", "list_workloads": "workloads", "list_events": "events", "list_services": "services"}


def _partial_reads(out: ClusterOutcome, got: Collected, targets: list[str]) -> None:
    """Say which namespace lists came back capped (``complete: false``): what is past the cap was not
    looked at, so nothing may be concluded about it. Also the namespaces a broad question skipped."""
    for ns in targets:
        for tool, what in _LISTED.items():
            result = got.results.get((tool, ns))
            data = result.data if result is not None and result.ok else None
            if not isinstance(data, dict) or data.get("complete") is not False:
                continue
            shown = len(data.get(what) or [])
            count = data.get("count") if isinstance(data.get("omitted"), int) else None
            of = f"{count}" if isinstance(count, int) and count > shown else "more"
            out.partial.append(f"only the first {shown} of {of} {what} in {ns} were read (the tools' listing limit)")
    if out.skipped_namespaces:
        looked = len(out.namespaces)
        out.partial.append(
            f"{looked} of {looked + out.skipped_namespaces} namespaces were looked at; the other "
            f"{out.skipped_namespaces} were not examined (name a namespace to look there)"
        )
    if out.partial:
        out.notes.append("Not everything was read: " + "; ".join(out.partial) + ".")


def _to_examine(
    out: ClusterOutcome,
    got: Collected,
    targets: list[str],
    chosen: list[WorkloadObservation],
    terms: QuestionTerms,
    settings: AgentSettings,
) -> tuple[list[WorkloadObservation], list[WorkloadObservation], list[WorkloadObservation]]:
    """(failing workloads, quiet ones read anyway, the workloads to examine); ``out.healthy`` gets the rest."""
    now = reference_time(
        [p for ns in targets for p in got.pods.get(ns, [])], [e for ns in targets for e in got.events.get(ns, [])]
    )
    failing = [o for o in chosen if _failing(o, now)]
    # A workload the question names is read even when its pods look fine: its logs may say why.
    quiet_named = [o for o in chosen if o.named and o not in failing and o.pods]
    if not failing and not quiet_named and request_level(out.symptoms):
        # Callers see errors (5xx, timeouts) while every pod is green: the logs of the workloads in
        # scope are where it shows. Read them, except what the asker says is fine.
        quiet_named = [o for o in chosen if o.pods and o.name not in terms.cleared]
    out.healthy = [
        o for o in chosen if o not in failing and (o.pods or (o.workload is not None and o.kind != "CronJob"))
    ]
    failing.sort(key=lambda o: (not o.named, -o.facts().max_restarts, o.resource))
    failing = failing[: settings.max_workloads]
    examine = failing + quiet_named[: max(0, settings.max_workloads - len(failing))]
    for o in quiet_named:
        o.quiet = True
    return failing, quiet_named, examine


def _wanted_services(
    services: set[tuple[str, str]], matched: set[tuple[str, str]], examine: list[WorkloadObservation]
) -> set[tuple[str, str]]:
    """Services: those the question names, and those named in the logs of what we examined."""
    wanted = {s for s in services if s in matched}
    for o in examine:
        text = " ".join(error_lines("\n".join(o.logs.values()), limit=50))
        for ns, name in services:
            if ns == o.namespace and name != o.name and re.search(rf"(?<![-\w]){re.escape(name)}(?![-\w])", text):
                wanted.add((ns, name))
    return wanted


def _rank(
    out: ClusterOutcome,
    observed: list[tuple[WorkloadObservation, Details | None]],
    quiet_named: list[WorkloadObservation],
) -> list[tuple[Finding, Details | None]]:
    """A finding per observation with a matching signature, best first. A quiet workload read only
    for its logs that matches nothing counts as healthy."""
    ranked: list[tuple[Finding, Details | None]] = []
    for obs, det in observed:
        facts = obs.facts()
        matches = calibrate(match_all(facts), facts)
        if obs in quiet_named and not matches:
            if obs not in out.healthy:
                out.healthy.append(obs)
            continue
        if obs in quiet_named and obs in out.healthy:
            out.healthy.remove(obs)
        primary, others = rank_matches(matches)
        finding = Finding(obs, primary, alternatives=others)
        finding.variables = _variables(obs, finding.match)
        ranked.append((finding, det))
    ranked.sort(key=lambda fd: -fd[0].score)
    return ranked
