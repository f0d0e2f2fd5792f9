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
from sleuth_agent.rca._observe import WorkloadObservation, clip, error_lines, next_memory_limit
from sleuth_agent.rca._plan import AlertTarget, QuestionTerms, matching, mentions, resolve_names
from sleuth_agent.rca._recency import recovered, reference_time
from sleuth_agent.rca._records import EventView, PodView, items_of
from sleuth_agent.rca._signatures import Match, load_catalog, match_all
from sleuth_agent.rca._symptoms import asserted_symptoms
from sleuth_agent.rca.engine.build import build_graph
from sleuth_agent.rca.engine.graph import Graph, Ref, Rel
from sleuth_agent.rca.engine.locate import locate
from sleuth_agent.rca.engine.onset import before_onset
from sleuth_agent.rca.engine.registry import Located
from sleuth_agent.rca.followups import FollowUps, controllers, service_findings
from sleuth_agent.rca.followups.changes import explains
from sleuth_agent.settings import AgentSettings
from sleuth_common.scope import Scope

__all__ = ["ClusterOutcome", "Finding", "analyse_cluster", "rank_matches"]

Progress = Callable[[str, str], Awaitable[None]]

_CONFIDENCE_SCORE = {"high": 0.9, "medium": 0.6, "low": 0.3}
_PLATFORM = ("kube-system", "kube-public", "kube-node-lease")
_TROUBLE_EVENTS = ("BackOff", "Killing", "Unhealthy", "OOMKilling", "Evicted", "NodeNotReady")


@dataclass
class Finding:
    obs: WorkloadObservation
    match: Match | None
    evidence: list[str] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict)
    alternatives: list[Match] = field(default_factory=list)
    pinned: bool = False  # the object the question asks about, shown to be down: ranks first
    located: Located | None = None  # where the fix belongs, on the causal graph
    changed: str = ""  # what the newest rollout changed that explains the family, with its evidence id

    @property
    def resource(self) -> str:
        """The object where the fix belongs (the symptom's own object when nothing further explains it)."""
        return str(self.located.root) if self.located is not None else self.obs.resource

    @property
    def affected(self) -> str:
        return str(self.located.affected) if self.located is not None else self.obs.resource

    @property
    def family(self) -> str:
        return self.match.signature.family if self.match else "insufficient_evidence"

    @property
    def confidence(self) -> str:
        return self.match.confidence if self.match else "low"

    @property
    def score(self) -> float:
        """Confidence first; then whether the question or alert named it; then the more specific
        signature (earlier in the catalog); then how many pods are affected."""
        named = 0.05 if self.obs.named else 0.0
        pods = min(len(self.obs.unhealthy_pods), 10) / 1000
        if self.match is None:
            return round(0.1 + named + pods, 3)
        pinned = 1.0 if self.pinned else 0.0
        return round(pinned + _CONFIDENCE_SCORE.get(self.confidence, 0.3) + named + _specific(self.match) + pods, 3)

    def alternative_score(self, m: Match) -> float:
        return round(_CONFIDENCE_SCORE.get(m.confidence, 0.3) / 2 + _specific(m), 3)


def _specific(m: Match) -> float:
    catalog = load_catalog()
    position = next((i for i, s in enumerate(catalog) if s is m.signature), len(catalog))
    return (len(catalog) - position) / 1000


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
    namespace_evidence: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    symptoms: list[str] = field(default_factory=list)  # current problems the question asserts
    graph: Graph = field(default_factory=Graph)


async def _noop(stage: str, message: str) -> None:
    return None


def _troubled(pod: PodView, obs: WorkloadObservation, now: float | None = None) -> bool:
    """A ready pod that is still in trouble: it restarts, and the kubelet keeps saying why (events
    live about an hour, so a repeated warning is recent). A pod whose last restart and last warning
    are well before ``now`` and that has been running and ready since has recovered: that is
    history, noted on the observation, not a current failure."""
    note = recovered(pod, obs.events, now)
    if note is not None:
        obs.derive("history", note)
        minutes = re.search(r"about (\d+) min before", note)
        if minutes:
            obs.derive("history_minutes", minutes.group(1))
        return False
    warn = [e for e in obs.events if e.object_name == pod.name and e.reason in _TROUBLE_EVENTS and _telling(e)]
    if pod.restarts and any(e.count >= 3 for e in warn):
        return True
    return any(e.count >= 3 and e.reason in ("Unhealthy", "BackOff") for e in warn) and pod.restarts > 0


def _failing(obs: WorkloadObservation, now: float | None = None) -> bool:
    w = obs.workload
    if obs.pods and not obs.healthy:
        return True
    if any([_troubled(p, obs, now) for p in obs.pods]):
        return True
    if w is not None and w.kind == "CronJob":
        # A CronJob has no pods of its own: it is in trouble when the controller says it skips or
        # misses runs, or when it is suspended (its runs are Jobs, observed one by one).
        skipping = {"JobAlreadyActive", "TooManyMissedTimes", "MissSchedule", "FailedNeedsStart", "FailedCreate"}
        return any(e.reason in skipping and e.object_name == w.name for e in obs.events) or (
            w.extra.get("suspend") is True and obs.named
        )
    if any(e.reason == "FailedCreate" and e.type == "Warning" and e.object_kind in ("ReplicaSet", "StatefulSet", "DaemonSet", "Job") for e in obs.events):
        return True  # the controller cannot create the pods (quota, LimitRange, admission webhook)
    if w is not None:
        conds = " ".join(f"{t}={s} {r}" for t, s, r, _m in w.conditions)
        if w.paused and (w.updated or 0) < (w.replicas or 0):
            return True
        if "ProgressDeadlineExceeded" in conds or "ReplicaFailure=True" in conds:
            return True
        if w.kind == "Job" and ("Failed=True" in conds or w.failed):
            return True
        if not obs.pods and (w.replicas or 0) > 0 and w.kind in ("Deployment", "StatefulSet", "DaemonSet"):
            return True
    return False


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
        return out  # the question is only about namespaces the caller cannot read
    else:
        # Tenants first, platform namespaces last (they are cut first when there are too many).
        targets = sorted(known, key=lambda ns: (ns in _PLATFORM or ns.startswith("kube-"), ns))
    if node_targets and not asked_nodes and not named_ns and scope.cluster_wide:
        targets = []  # the node is the target; a tenant gets their own pods looked at instead
    out.skipped_namespaces = max(0, len(targets) - settings.max_namespaces)
    targets = targets[: settings.max_namespaces]
    out.namespaces = targets
    follow = None
    if node_targets:
        await _node_targets(tools, log, node_targets, scope, out, timeout)
        if not targets:
            return out
    await progress("target", f"looking at {len(targets)} namespace(s) on {cluster}: {', '.join(targets)}")

    await progress("collecting", "reading pods, workloads, services and events")
    got: Collected = await collect_namespaces(tools, log, targets, timeout)
    observations = got.observations()

    # Which objects does the question (or the alert) name? Pod names stand for their workload.
    pod_owner = {(p.namespace, p.name): p.workload[1] for pods in got.pods.values() for p in pods}
    words = []
    for w in terms.names:
        if w in known or w in terms.namespace_claims or w in asked_nodes:
            continue
        owners = {name for (ns, pod), name in pod_owner.items() if pod == w and ns in targets}
        words.append(next(iter(owners)) if len(owners) == 1 else w)
    pool = [(ns, name) for (ns, _kind, name) in observations]
    services = {(ns, str(s.get("name"))) for ns in targets for s in got.services.get(ns, [])}
    matched, unmatched, ambiguous = resolve_names(words, [*pool, *sorted(services)])
    if unmatched:
        # A PersistentVolumeClaim stands for the pods that mount it and their workload.
        for word, owners in (await _claim_owners(tools, log, got, targets, unmatched, terms, timeout)).items():
            matched.update(owners)
            unmatched.remove(word)
    if unmatched and alert is not None:
        # A HorizontalPodAutoscaler stands for the workload it scales.
        for word, owner in (await _hpa_targets(tools, log, targets, unmatched, timeout)).items():
            matched.add(owner)
            unmatched.remove(word)
    # "the worker" when two workloads are workers: the question means one object, which one is unclear.
    meant = [w for w in ambiguous if terms.names_an_object([w]) or w in terms.referenced]
    if matched:
        chosen = [o for key, o in observations.items() if (key[0], key[2]) in matched]
    elif (unmatched or ambiguous) and (terms.names_an_object(unmatched + ambiguous) or meant):
        out.unresolved = bool(unmatched) and not ambiguous
        out.ambiguous = bool(ambiguous)
        out.unresolved_words = [w for w in unmatched + ambiguous if terms.names_an_object([w]) or w in meant]
        pool_all = [*pool, *sorted(services)]
        for w in ambiguous:
            out.ambiguous_candidates.extend(
                f"{kind}/{name}" for (ns, kind, name) in observations if (ns, name) in set(matching(w, pool_all))
            )
        out.ambiguous_candidates = list(dict.fromkeys(out.ambiguous_candidates))
        return out
    else:
        chosen = list(observations.values())
    for o in chosen:
        o.named = bool(matched)
        if alert is not None and o.named:
            o.alerts.extend(alert.facts)
    if matched:
        await progress("target", "found " + ", ".join(sorted(f"{o.kind}/{o.name}" for o in chosen)))

    for ns in targets:
        r = got.results.get(("list_pods", ns))
        if r is not None and r.ok:
            pods = got.pods.get(ns, [])
            bad = [p for p in pods if not p.healthy]
            eid = log.cite(
                r,
                f"{len(pods)} pod(s) in {ns}" + (f", {len(bad)} not running and ready" if bad else ", all running and ready"),
                [f"{p.name}: {_pod_state(p)}" for p in bad[:4]],
            )
            out.namespace_evidence.append(eid)

    now = reference_time(
        [p for ns in targets for p in got.pods.get(ns, [])], [e for ns in targets for e in got.events.get(ns, [])]
    )
    failing = [o for o in chosen if _failing(o, now)]
    # A workload the question names is read even when its pods look fine: its logs may say why.
    quiet_named = [o for o in chosen if o.named and o not in failing and o.pods]
    out.healthy = [
        o for o in chosen if o not in failing and (o.pods or (o.workload is not None and o.kind != "CronJob"))
    ]
    failing.sort(key=lambda o: (not o.named, -o.facts().max_restarts, o.resource))
    failing = failing[: settings.max_workloads]
    examine = failing + quiet_named[: max(0, settings.max_workloads - len(failing))]
    for o in quiet_named:
        o.quiet = True
    if examine:
        await progress("tool_calls", f"reading pods, events and logs of {len(examine)} workload(s)")
    details = await asyncio.gather(
        *(collect_details(tools, log, o, timeout, troubled=o in failing) for o in examine)
    )
    follow = FollowUps(tools, log, got, timeout, scope.cluster_wide)
    await asyncio.gather(*(follow.run(o) for o in examine))
    for o in examine:
        controllers.apply(o, controllers.controller_facts(o, got.workloads.get(o.namespace, [])))

    # Services: those the question names, and those named in the logs of what we examined.
    wanted = {s for s in services if s in matched}
    for o in examine:
        text = " ".join(error_lines("\n".join(o.logs.values()), limit=50))
        for ns, name in services:
            if ns == o.namespace and name != o.name and re.search(rf"(?<![-\w]){re.escape(name)}(?![-\w])", text):
                wanted.add((ns, name))
    # A Service reached only through a caller's failing connections (by ClusterIP) is not a finding
    # of its own: the caller's chain ends there (families/dependency_unreachable.py).
    svc_obs = service_findings(got, targets, wanted, log)

    for o in examine:  # a Deployment whose rollout timed out says so, whatever the question asked
        _rollout_note(o, got, log)

    await progress("matching", "matching failure signatures")
    ranked: list[tuple[Finding, Details | None]] = []
    for obs, det in [*zip(examine, details, strict=True), *((s, None) for s in svc_obs)]:
        matches = match_all(obs.facts())
        if obs in quiet_named and not matches:
            out.healthy.append(obs) if obs not in out.healthy else None
            continue
        if obs in quiet_named and obs in out.healthy:
            out.healthy.remove(obs)
        primary, others = rank_matches(matches)
        finding = Finding(obs, primary, alternatives=others)
        finding.variables = _variables(obs, finding.match)
        ranked.append((finding, det))
    ranked.sort(key=lambda fd: -fd[0].score)
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
    if asked_nodes:
        _node_support(out, got, targets, log)
    return out


async def _named_nodes(tools: Toolbox, log: EvidenceLog, terms: QuestionTerms, limit: float) -> list[str]:
    """Nodes the question names exactly (a word equal to a node's name)."""
    words = {w for w in terms.names if terms.names_an_object([w])}
    if not words:
        return []
    from sleuth_agent.rca._collect import _call

    r = await _call(tools, log, "list_nodes", {}, limit)
    if not r.ok:
        return []
    return [str(n.get("name")) for n in items_of(r.data, "nodes") if str(n.get("name", "")).lower() in words]


def _node_support(out: ClusterOutcome, got: Collected, namespaces: list[str], log: EvidenceLog) -> None:
    """A node the question names that is not ready is the root cause: the failing pods scheduled on
    it (a CNI or other DaemonSet agent that cannot start there) are its supporting evidence, and
    their own findings become consequences listed after it."""
    for f in out.findings:
        if f.obs.kind != "Node" or f.match is None or f.family != "node_not_ready":
            continue
        on_it = [p for ns in namespaces for p in got.pods.get(ns, []) if p.node == f.obs.name and not p.healthy]
        if on_it:
            text = "Failing pods on it: " + ", ".join(
                f"{p.name} ({p.workload[0]} {p.namespace}/{p.workload[1]}: {_pod_state(p)})" for p in on_it[:5]
            ) + "."
            f.obs.derive("node", text)
            f.variables = _variables(f.obs, f.match)
            for ns in dict.fromkeys(p.namespace for p in on_it):
                r = got.results.get(("list_pods", ns))
                if r is not None and r.ok:
                    f.evidence.append(
                        log.cite(r, f"pods on node {f.obs.name} in {ns}", [f"{p.name}: {_pod_state(p)}" for p in on_it if p.namespace == ns][:4])
                    )
        f.pinned = True
    out.findings.sort(key=lambda x: -x.score)


_MAX_CLAIM_PODS = 10
_CLAIM_WORDS = r"(?:pvc|claim|volume|persistentvolumeclaim)\b"


async def _claim_owners(
    tools: Toolbox,
    log: EvidenceLog,
    got: Collected,
    namespaces: list[str],
    words: list[str],
    terms: QuestionTerms,
    limit: float,
) -> dict[str, set[tuple[str, str]]]:
    """Words that name a PersistentVolumeClaim → the (namespace, workload) of the pods mounting it.

    A StatefulSet's claim is named ``<template>-<pod>``, so a claim ending in ``-<pod name>`` is that
    pod's; otherwise the namespace's claims are listed and, for a claim the question names, the pods
    (unhealthy first, a bounded number) are read to see which mount it."""
    out: dict[str, set[tuple[str, str]]] = {}
    text = terms.text.lower()
    wanted = [
        w
        for w in words
        if terms.names_an_object([w])
        or re.search(rf"(?<![-\w]){re.escape(w)}\s+{_CLAIM_WORDS}|{_CLAIM_WORDS}\s+{re.escape(w)}(?![-\w])", text)
    ]
    if not wanted:
        return out
    pods = {ns: got.pods.get(ns, []) for ns in namespaces}
    rest = []
    for w in wanted:
        owners = {(ns, p.workload[1]) for ns, ps in pods.items() for p in ps if w.endswith("-" + p.name)}
        if owners:
            out[w] = owners
        else:
            rest.append(w)
    if not rest or not tools.has_tool("list_pvcs"):
        return out
    from sleuth_agent.rca._collect import _call

    listed = await asyncio.gather(*(_call(tools, log, "list_pvcs", {"namespace": ns}, limit) for ns in namespaces))
    claims = {
        (ns, str(c.get("name")))
        for ns, r in zip(namespaces, listed, strict=True)
        if r.ok
        for c in items_of(r.data, "pvcs")
    }
    for w in rest:
        where = [ns for ns, name in claims if name == w]
        if not where:
            continue
        candidates = [p for ns in where for p in sorted(pods[ns], key=lambda p: (p.healthy, p.name))][:_MAX_CLAIM_PODS]
        read = await asyncio.gather(
            *(_call(tools, log, "get_pod", {"namespace": p.namespace, "name": p.name}, limit) for p in candidates)
        )
        owners = set()
        for p, r in zip(candidates, read, strict=True):
            if not (r.ok and isinstance(r.data, dict)):
                continue
            full = PodView.parse(r.data.get("pod", r.data))
            if any(t == "pvc" and src == w for _n, t, src in full.volumes):
                owners.add((p.namespace, p.workload[1]))
        if owners:
            out[w] = owners
    return out


async def _hpa_targets(
    tools: Toolbox, log: EvidenceLog, namespaces: list[str], words: list[str], limit: float
) -> dict[str, tuple[str, str]]:
    """Words that name a HorizontalPodAutoscaler → (namespace, name of its scale target)."""
    if not tools.has_tool("list_resources"):
        return {}
    from sleuth_agent.rca._collect import _call

    listed = await asyncio.gather(
        *(_call(tools, log, "list_resources", {"kind": "hpa", "namespace": ns}, limit) for ns in namespaces)
    )
    out: dict[str, tuple[str, str]] = {}
    for ns, r in zip(namespaces, listed, strict=True):
        if not r.ok:
            continue
        for hpa in items_of(r.data, "items"):
            target = str(hpa.get("target") or "")
            if hpa.get("name") in words and "/" in target:
                out[str(hpa["name"])] = (ns, target.partition("/")[2])
    return out


def _rollout_note(obs: WorkloadObservation, got: Collected, log: EvidenceLog) -> None:
    """A Deployment whose rollout timed out (Progressing=False ProgressDeadlineExceeded): say so,
    and how many pods the old ReplicaSets still serve, next to whatever makes the new pods fail."""
    w = obs.workload
    if w is None or w.kind != "Deployment":
        return
    cond = next((c for c in w.conditions if c[0] == "Progressing" and c[1] == "False"), None)
    if cond is None or cond[2] != "ProgressDeadlineExceeded":
        return
    sets = [r for r in got.workloads.get(obs.namespace, []) if r.kind == "ReplicaSet" and r.owner_name == w.name]
    new_rs = {p.owner_name for p in obs.unhealthy_pods if p.owner_kind == "ReplicaSet"}
    m = re.search(r'ReplicaSet "([^"]+)"', cond[3])
    if m:
        new_rs.add(m.group(1))
    old = [r for r in sets if r.name not in new_rs and (r.replicas or 0) > 0]
    text = f"The rollout of {obs.resource} is stuck: Progressing=False ProgressDeadlineExceeded ({cond[3]})."
    if old:
        serving = ", ".join(f"{r.name} {r.ready or 0}/{r.replicas}" for r in old)
        text += f" The old ReplicaSet still has its pods ({serving} ready), so the pods of the previous version keep serving."
    obs.derive("rollout", text)
    r = next(iter(log_results(log, "list_workloads", obs.namespace)), None)
    if r is not None:
        obs.cites.append((r, f"Deployment {w.name}: Progressing=False ProgressDeadlineExceeded", [text[:180]]))


async def _node_targets(
    tools: Toolbox, log: EvidenceLog, nodes: list[str], scope: Scope, out: ClusterOutcome, limit: float
) -> None:
    """An alert about a node: read the node (cluster-wide callers only)."""
    if not (scope.cluster_wide and tools.has_tool("list_nodes")):
        out.notes.append(
            f"The alert is about node {', '.join(nodes)}; nodes are readable only with cluster-wide access, "
            "which you do not have, so the node itself was not examined."
        )
        return
    from sleuth_agent.rca._collect import _call

    r = await _call(tools, log, "list_nodes", {}, limit)
    if not r.ok:
        return
    for n in items_of(r.data, "nodes"):
        name = str(n.get("name"))
        if name not in nodes:
            continue
        obs = WorkloadObservation("", "Node", name, named=True)
        ready = str(n.get("ready", "Unknown"))
        cond = next((c for c in n.get("conditions") or [] if c.get("type") == "Ready"), {})
        text = f"Node {name} is {'ready' if ready == 'True' else 'not ready'}: Ready={ready} ({cond.get('reason', '')}: {cond.get('message', '')})."
        if ready != "True":
            obs.derive("node", text)
        taints = ", ".join(f"{t.get('key')}:{t.get('effect')}" for t in n.get("taints") or [])
        obs.cites.append((r, f"node {name}: Ready={ready}", [text[:160], *([f"taints: {taints}"] if taints else [])]))
        obs.variables.update({"node": name, "pod": "(pods on the node)"})
        matches = match_all(obs.facts())
        if matches:
            primary, others = rank_matches(matches)
            f = Finding(obs, primary, alternatives=others)
            f.variables = _variables(obs, f.match)
            f.evidence = _cite(log, obs, None, f)
            out.findings.append(f)
        else:
            out.healthy.append(obs)


# Families that follow from any pod-level failure: never an alternative explanation of one.
_CONSEQUENCES = frozenset({"rollout_stuck"})


_RANK = {"high": 0, "medium": 1, "low": 2}


def rank_matches(matches: list[Match]) -> tuple[Match | None, list[Match]]:
    """(root cause, alternatives) of one workload's matches (catalog order).

    The most confident match wins; among equally confident ones the earlier (more specific)
    signature. A lower-confidence answer never beats a higher-confidence alternative. A family
    that follows from any pod failure (a stuck rollout) is never promoted over a cause, and is
    never listed as an alternative explanation of one."""
    if not matches:
        return None, []
    causes = [m for m in matches if m.signature.family not in _CONSEQUENCES]
    pool = causes or matches
    best = min(pool, key=lambda m: (_RANK.get(m.confidence, 2), matches.index(m)))
    return best, [m for m in causes if m is not best]


def _pod_state(p: PodView) -> str:
    if p.reason:
        return p.reason
    if p.deleting:
        return "Terminating"
    for c in p.all_containers:
        if c.state == "waiting" and c.reason and c.reason != "PodInitializing":
            return f"Init:{c.reason}" if c.init else c.reason
        if c.state == "terminated" and c.reason and not c.init:
            return c.reason
    for ctype, status, reason, _msg in p.conditions:
        if ctype == "PodScheduled" and status != "True" and reason:
            return f"{p.phase} ({reason})"
    if p.phase == "Running" and not all(c.ready for c in p.containers):
        return "Running, not ready"
    return p.phase or "unknown"


def _split_endpoint(endpoint: str) -> tuple[str, str]:
    host, _, port = endpoint.rpartition(":")
    return (host or endpoint, port or "<port>")


def _variables(obs: WorkloadObservation, match: Match | None) -> dict[str, str]:
    pod, c = obs.representative()
    facts = obs.facts()
    codes = [str(x) for x in facts.exit_codes if x not in (0,)] or [str(x) for x in facts.exit_codes]
    w = obs.workload
    v = {
        "resource": obs.resource,
        "kind": obs.kind,
        "kind_lower": obs.kind.lower(),
        "workload": obs.name,
        "namespace": obs.namespace,
        "pod": pod.name if pod else obs.name,
        "container": c.name if c else "",
        "restarts": str(c.restart_count if c else 0),
        "memory_limit": (c.memory_limit if c else "") or "its",
        "memory_limit_next": next_memory_limit(c.memory_limit) if c and c.memory_limit else "<a higher limit>",
        "memory_request": (c.memory_request if c else "") or "unset",
        "cpu_limit": (c.cpu_limit if c else "") or "none",
        "cpu_request": (c.cpu_request if c else "") or "none",
        "exit_code": codes[0] if codes else "?",
        "image": (c.image if c else "") or "?",
        "waiting_reason": facts.waiting_reason[0] if facts.waiting_reason else (c.reason if c and c.reason else "not ready"),
        "event_message": facts.event_message[0] if facts.event_message else "",
        "log_line": (facts.exception or facts.log or facts.termination_message or ["(no error line in the logs)"])[0],
        "termination_message": facts.termination_message[0] if facts.termination_message else "",
        "replicas": str(w.replicas if w and w.replicas is not None else "?"),
        "updated": str(w.updated if w and w.updated is not None else "?"),
        "storage_classes": "see kubectl get storageclass",
        "pvc": "<claim>",
        "pvc_size": "?",
        "pvc_size_next": "<larger size>",
        "probe_effect": "keeps running",
        "node_selector": ",".join(f"{k}={val}" for k, val in pod.node_selector) if pod and pod.node_selector else "none",
        "node": pod.node if pod and pod.node else "?",
        "derived": "",
    }
    if c is not None and c.cpu_limit:
        from sleuth_agent.rca.followups import cpu_double as _cpu_double

        v["cpu_limit_next"] = _cpu_double(c.cpu_limit)
    v.update(obs.variables)
    if match is not None:
        v.update(match.variables)
        v["derived"] = " ".join(_derived_for(match, obs))
    if match is not None and match.signature.family == "missing_config" and v.get("missing_name"):
        # The scope filter may redact the word "secret" in a message; the pod spec says what it is.
        kind = v.get("missing_kind", "").lower()
        if kind not in ("configmap", "secret"):
            types = {src: t for _n, t, src in (pod.volumes if pod else ())}
            kind = {"secret": "secret", "config_map": "configmap"}.get(types.get(v["missing_name"], ""), "configmap or secret")
            v["missing_kind"] = kind
        v["missing"] = v.get("missing", "").replace("[REDACTED]", kind)
    if match is not None and match.signature.family == "image_pull":
        v.setdefault("pull_cause", v.get("pull_error") or "see the pull events")
        v.setdefault(
            "pull_action_text",
            f"Check that the image {v['image']} exists and the node can reach the registry (and has pull "
            "credentials); then set a valid image.",
        )
        v.setdefault(
            "pull_action_command", f"kubectl set image {v['kind_lower']}/{v['workload']} {v['container']}=<image:tag> -n {v['namespace']}"
        )
    v.setdefault(
        "probe_action_text",
        "Point the probe at the port and path the container really serves (or give it a longer timeout / "
        "initial delay if the app is only slow).",
    )
    v.setdefault("probe_action_command", f"kubectl edit {v['kind_lower']}/{v['workload']} -n {v['namespace']}")
    v.setdefault("local_pv_note", "")
    if "endpoint" in v:
        v["endpoint_host"], v["endpoint_port"] = _split_endpoint(v["endpoint"])
    else:
        v["endpoint"] = "its dependency"
    if match is not None and match.signature.family == "dependency_unreachable" and v["endpoint"] == "its dependency":
        host = re.search(r"\b((?:\d{1,3}\.){3}\d{1,3}:\d+)\b", v.get("dependency_line", ""))
        if host:
            v["endpoint"] = host.group(1)
            v["endpoint_host"], v["endpoint_port"] = _split_endpoint(host.group(1))
    return v


_DERIVED_KEYS = {
    "service_no_endpoints": ("service", "service_port"),
    "node_not_ready": ("node", "node_access", "node_local"),
    "evicted": ("eviction_node",),
    "pvc_pending": ("pvc",),
    "unschedulable_constraints": ("pvc_wait",),
    "unschedulable_resources": ("pvc_wait",),
    "quota_exceeded": ("quota",),
    "disk_full": ("volume",),
    "network_policy_blocked": ("netpol",),
    "probe_failure": ("probe",),
    "dependency_unreachable": ("dependency", "net_target"),
    "oom_killed": ("limit_source",),
    "job_failed": ("cron_blocked", "cron_suspended", "job_deadline"),
    "missing_config": ("env_missing", "env_unconfirmed"),
    "image_pull": ("pull",),
}


def _derived_for(match: Match, obs: WorkloadObservation) -> list[str]:
    out = []
    for key in _DERIVED_KEYS.get(match.signature.family, ()):
        out.extend(obs.derived.get(key, []))
    return out


def _cite(log: EvidenceLog, obs: WorkloadObservation, det: Details | None, finding: Finding) -> list[str]:
    ids: list[str] = []
    pod, c = obs.representative()
    if det is not None and det.pod is not None and det.pod.ok and pod is not None:
        hl = [_pod_state(pod)]
        if pod.message:
            hl.append(pod.message[:160])
        if c is not None:
            if c.last_reason:
                hl.append(f"last terminated: {c.last_reason}")
            if c.last_exit_code is not None:
                hl.append(f"exit code {c.last_exit_code}")
            if c.restart_count:
                hl.append(f"{c.restart_count} restarts")
            if c.memory_limit:
                hl.append(f"limits.memory={c.memory_limit}")
            if c.cpu_limit and finding.family == "cpu_throttled":
                hl.append(f"limits.cpu={c.cpu_limit}")
            if c.state == "waiting" and c.message:
                hl.append(clip(c.message, 180))
            if c.last_message:
                hl.append(clip(c.last_message, 180))
        for ctype, status, _r, msg in pod.conditions:
            if ctype == "PodScheduled" and status != "True" and msg:
                hl.append(msg[:160])
        if pod.node_selector:
            hl.append("nodeSelector " + ",".join(f"{k}={v}" for k, v in pod.node_selector))
        ids.append(log.cite(det.pod, f"pod {pod.name}: {_pod_state(pod)}", hl))
    names = {p.name for p in obs.pods} | {obs.name}
    warn = [e for e in obs.events if _telling(e) and (e.object_name in names or e.object_kind in ("ReplicaSet", "Job"))]
    if det is not None and det.events is not None and det.events.ok:
        mine = [e for e in warn if pod is None or e.object_name in (pod.name, obs.name)] or warn
        mine.sort(key=lambda e: not _probe_kill(e))  # the kubelet saying why it restarts the container first
        summary = f"{len(mine)} warning event(s) for {pod.name if pod else obs.name}"
        ids.append(log.cite(det.events, summary, [f"{e.reason}: {clip(e.message, 180)}" for e in mine[:3]]))
    elif warn:
        ns_events = [r for r in log_results(log, "list_events", obs.namespace)]
        if ns_events:
            ids.append(
                log.cite(ns_events[0], f"{len(warn)} warning event(s) about {obs.name}", [f"{e.reason}: {clip(e.message, 180)}" for e in warn[:3]])
            )
    if det is not None:
        for result, label in ((det.previous_log, "previous"), (det.current_log, "current")):
            if result is not None and result.ok and c is not None:
                text = obs.logs.get((pod.name if pod else "", c.name, label == "previous"), "")
                lines = error_lines(text, limit=3)
                if not lines and label == "previous" and obs.variables.get("stop_line"):
                    lines = [obs.variables["stop_line"]]  # how the last run ended (a SIGTERM while starting)
                if lines or label == "previous":
                    ids.append(log.cite(result, f"{label} log of {c.name} ({len(text.splitlines())} lines)", lines))
    if obs.workload is not None and (finding.family in ("rollout_stuck", "quota_exceeded", "job_failed") or not obs.pods):
        r = next(iter(log_results(log, "list_workloads", obs.namespace)), None)
        if r is not None:
            conds = [f"{t}={s} {rr}: {m}"[:160] for t, s, rr, m in obs.workload.conditions if s != "True" or t in ("ReplicaFailure", "Failed")]
            if obs.workload.paused:
                conds.insert(0, "paused: true")
            ids.append(log.cite(r, f"{obs.kind} {obs.name}: {obs.workload.ready or 0}/{obs.workload.replicas} ready", conds))
    for result, summary, hl in obs.cites:
        ids.append(log.cite(result, summary, hl))
    return list(dict.fromkeys(ids))


def _cite_change(log: EvidenceLog, finding: Finding) -> None:
    """The newest rollout's template diff, when a changed field can explain the family."""
    ch = finding.obs.rollout
    if ch is None or finding.match is None:
        return
    relevant = [c for c in ch.changes if explains(finding.family, c)]
    if not relevant:
        return
    eid = log.cite(
        ch.result,
        f"ReplicaSet {ch.current} (revision {ch.current_revision}) against {ch.previous} (revision {ch.previous_revision})",
        [c.text() for c in relevant[:4]],
    )
    finding.evidence.append(eid)
    data = ch.result.data if isinstance(ch.result.data, dict) else {}
    when = before_onset((data.get("metadata") or {}).get("creationTimestamp"), finding.obs)
    finding.changed = (
        f"What changed: revision {ch.current_revision} (ReplicaSet {ch.current}"
        + (f", {when}" if when else "")
        + ") changed "
        + "; ".join(c.text() for c in relevant[:3])
        + f" from revision {ch.previous_revision} [{eid}]."
    )


def _probe_kill(e: EventView) -> bool:
    """The kubelet's ``Killing: Container X failed liveness probe, will be restarted`` (type Normal)."""
    return e.reason == "Killing" and "probe" in e.message.lower()


def _telling(e: EventView) -> bool:
    """Events that say what went wrong: warnings, and the Normal event of a probe-triggered restart."""
    return e.type == "Warning" or _probe_kill(e)


def log_results(log: EvidenceLog, tool: str, namespace: str) -> list:
    return [r for r in log.results if r.tool == tool and r.ok and (r.args or {}).get("namespace") == namespace]
