"""Plan: which clusters, namespaces and workloads a question is about, from the question text
verified against live objects (DESIGN §3). A name matching two workloads or none resolves to
nothing."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sleuth_common.config import ClusterSettings

__all__ = ["QuestionTerms", "matching", "mentions", "parse_question", "pick_clusters", "resolve_names"]

_TOKEN = re.compile(r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?")
_STOP = frozenset(
    """a an the is are was were be been am do does did why what whats which who how when where
    in on at of for to from with without by about into my our your their its this that these those
    it me we us you they there here and or not no yes please can could would should will shall
    failing failed fail fails failure crashing crash crashes crashed broken down up wrong happening
    going on slow error errors erroring issue issues problem problems restarting restart restarts
    pod pods deployment deployments statefulset statefulsets daemonset daemonsets job jobs cronjob
    cronjobs service services app apps application workload workloads namespace namespaces ns cluster
    clusters container containers node nodes running pending healthy unhealthy ok okay status check
    tell show look see find investigate explain diagnose all any some everything anything something
    today now currently still again since lately recently keeps keep stuck working work works
    hi hello hey thanks thank kubectl right has have had been being get gets got getting give gives
    gave giving return returns returning returned throw throws throwing threw just though also""".split()
)
_KIND_WORDS = (
    "deployment|deploy|statefulset|sts|daemonset|ds|pod|job|cronjob|service|svc|app|workload|api|worker"
)
_KINDS = rf"(?:{_KIND_WORDS}|deployments|pods|services|apps)"
_NS_CLAIMS = (
    re.compile(r"(?:\bnamespaces?\s+|\bns\s+|(?:^|\s)-n\s+)([a-z0-9][-a-z0-9]*)"),
    re.compile(r"(?<![-a-z0-9.])(?=([a-z0-9][-a-z0-9]*)\s+namespace\b)"),
)
_OBJECTS = (
    re.compile(rf"\b{_KINDS}\s+([a-z0-9][-a-z0-9.]*)"),
    re.compile(rf"(?<![-a-z0-9.])(?=([a-z0-9][-a-z0-9.]*)\s+{_KINDS}\b)"),
    re.compile(
        r"\b(?:why|how come)\s+(?:is|are|does|do|did|was|were|has|have)\s+(?:the\s+|my\s+|our\s+)?([a-z0-9][-a-z0-9.]*)"
    ),
)
# "the worker in ...", "our exporter?", "the worker looked stuck": the head of a determined noun
# phrase is followed by a function word, a past-tense verb or the end; in "the exporter rollout"
# the head is "rollout", not "exporter".
_DETERMINED = re.compile(
    r"\b(?:the|my|our|this|that|their)\s+([a-z0-9][-a-z0-9.]*[a-z0-9])\b(?=\s*(?:[^-a-z0-9\s]|$)|\s+([a-z0-9']+))"
)
_IN_CLAIM = re.compile(r"\bin\s+([a-z0-9][-a-z0-9]*[a-z0-9])\b")


def mentions(text: str, name: str) -> bool:
    """``name`` appears in ``text`` as a whole word (hyphens and dots belong to words)."""
    low, word = text.lower(), name.lower()
    if word not in low:  # most names are not in the text: no pattern compiled for them (2,000 namespaces)
        return False
    return re.search(rf"(?<![a-z0-9.-]){re.escape(word)}(?![a-z0-9-]|\.[a-z0-9])", low) is not None


@dataclass(frozen=True)
class QuestionTerms:
    text: str
    tokens: tuple[str, ...]
    names: tuple[str, ...]  # tokens that may name an object
    namespace_claims: tuple[str, ...]  # tokens the question presents as namespaces
    object_words: tuple[str, ...] = ()  # tokens the question presents as an object's name
    referenced: tuple[str, ...] = ()  # tokens after a determiner ("the worker", "our api"): one object meant
    hosts: tuple[str, ...] = ()  # host names the question gives ("wiki.lab.example.org"): an Ingress may route them
    cleared: tuple[str, ...] = ()  # what the asker says is fine ("pgbouncer is fine"): not the target

    def names_an_object(self, words: Iterable[str]) -> bool:
        """Does one of ``words`` look like the name of a specific object?"""
        return any("-" in w or any(ch.isdigit() for ch in w) or w in self.object_words for w in words)


# Not object names: HTTP statuses ("502s", "5xx"), times ("8am", "09:30"), sizes and durations.
_NOT_A_NAME = re.compile(r"^(?:[1-5]\d\ds?|[45]xxs?|\d{1,2}(?:am|pm)|\d+(?:ms|s|m|h|min|mins|d|x|%)|\d+(?:\.\d+)?(?:mi|gi|ki|m|g|k))$")
_HOST = re.compile(r"(?<![-a-z0-9.@/])((?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\.){2,}[a-z]{2,})(?![-a-z0-9])")
# "pgbouncer is fine", "redis itself is up and healthy", "the db looks ok": the asker clears it.
_CLEARED = re.compile(
    r"([a-z0-9][-a-z0-9.]*)\s+(?:itself\s+)?(?:is|are|looks?|seems?)\s+(?:all\s+|totally\s+|perfectly\s+)?"
    r"(?:fine|ok|okay|healthy|up|green|good|working)\b"
)


def parse_question(question: str, cluster_words: Iterable[str] = ()) -> QuestionTerms:
    text = question.lower()
    hosts = tuple(dict.fromkeys(m.group(1) for m in _HOST.finditer(text) if not m.group(1).endswith((".svc", ".local"))))
    tokens = tuple(_TOKEN.findall(text))
    skip = {w.lower() for w in cluster_words}
    cleared = tuple(dict.fromkeys(m.group(1) for m in _CLEARED.finditer(text) if m.group(1) not in _STOP))
    names = tuple(
        dict.fromkeys(
            t
            for t in tokens
            if t not in _STOP
            and t not in skip
            and not t.isdigit()
            and len(t) > 1
            and not _NOT_A_NAME.match(t)
            and t not in hosts
            and t not in cleared
        )
    )
    claims: list[str] = []
    for rx in _NS_CLAIMS:
        for m in rx.finditer(text):
            tok = m.group(1)
            if tok and tok not in _STOP and tok not in skip:
                claims.append(tok)
    for m in _IN_CLAIM.finditer(text):
        tok = m.group(1)
        if tok not in _STOP and tok not in skip and ("-" in tok or any(ch.isdigit() for ch in tok)):
            claims.append(tok)
    objects = []
    for rx in _OBJECTS:
        for m in rx.finditer(text):
            tok = m.group(1)
            if tok and tok not in _STOP and tok not in skip:
                objects.append(tok)
    referenced = [
        m.group(1)
        for m in _DETERMINED.finditer(text)
        if m.group(1) not in _STOP
        and m.group(1) not in skip
        and (m.group(2) is None or m.group(2) in _STOP or m.group(2).endswith("ed"))
        and m.group(2) not in ("namespace", "namespaces", "ns", "cluster")
    ]
    return QuestionTerms(
        question,
        tokens,
        names,
        tuple(dict.fromkeys(claims)),
        tuple(dict.fromkeys(o for o in objects if o not in cleared and not _NOT_A_NAME.match(o))),
        tuple(dict.fromkeys(r for r in referenced if r not in cleared)),
        hosts,
        cleared,
    )


def pick_clusters(
    requested: Sequence[str], question: str, clusters: Sequence[ClusterSettings], in_scope: Iterable[str]
) -> tuple[list[ClusterSettings], list[str]]:
    """(clusters to investigate, cluster names the caller asked for but cannot read).

    Explicit ``requested`` names first, then names/aliases mentioned in the question, else every
    configured cluster in scope. Only names the caller supplied are ever returned as refused."""
    scoped = set(in_scope)

    def lookup(word: str) -> ClusterSettings | None:
        w = word.lower()
        for c in clusters:
            if c.name.lower() == w or w in (a.lower() for a in c.aliases):
                return c
        return None

    wanted: list[ClusterSettings] = []
    refused: list[str] = []
    asked = list(requested)
    if not asked:
        for c in clusters:
            for word in (c.name, *c.aliases):
                if mentions(question, word):
                    asked.append(word)
                    break
    for word in asked:
        found = lookup(word)
        if found is None or found.name not in scoped:
            refused.append(word)
        elif found not in wanted:
            wanted.append(found)
    if not asked:
        wanted = [c for c in clusters if c.name in scoped]
    return wanted, refused


def resolve_names(
    names: Iterable[str], candidates: Iterable[tuple[str, str]]
) -> tuple[set[tuple[str, str]], list[str], list[str]]:
    """Match question words against live (namespace, workload) names.

    A word matches a workload whose name equals it or contains it between word boundaries
    (``checkout`` → ``checkout-api``); an exact name wins over partial ones. A word matching
    more than one workload is ambiguous and resolves to nothing. Returns (matched workloads,
    words that matched nothing, words that matched several)."""
    pool = list(dict.fromkeys(candidates))
    matched: set[tuple[str, str]] = set()
    unmatched: list[str] = []
    ambiguous: list[str] = []
    for word in names:
        hits = matching(word, pool)
        names_hit = {h[1] for h in hits}
        if len(names_hit) == 1:
            matched.update(hits)
        elif not hits:
            unmatched.append(word)
        else:
            ambiguous.append(word)
    return matched, unmatched, ambiguous


def matching(word: str, candidates: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (namespace, name) candidates ``word`` may mean: an exact name, else names containing
    it between word boundaries."""
    pool = list(dict.fromkeys(candidates))
    exact = [c for c in pool if c[1] == word]
    hits = exact or [c for c in pool if mentions(c[1].replace("-", " "), word.replace("-", " "))]
    if not hits:
        hits = [c for c in pool if re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", c[1])]
    return hits


# Labels that name the object an alert is about, most specific first. ``service`` comes last:
# it is often where the metric was scraped from rather than the subject.
_ALERT_OBJECT_LABELS = (
    ("pod", "pod"),
    ("persistentvolumeclaim", "pvc"),
    ("deployment", "deployment"),
    ("statefulset", "statefulset"),
    ("daemonset", "daemonset"),
    ("job_name", "job"),
    ("cronjob", "cronjob"),
    ("horizontalpodautoscaler", "hpa"),
    ("service", "service"),
)
# Services that expose metrics about other objects (kube-state-metrics, the kubelet/cAdvisor,
# node-exporter, Prometheus itself): a ``service`` label naming one says where the metric came from.
_SCRAPE_SERVICE = re.compile(
    r"kube-state-metrics|kubelet|cadvisor|node-exporter|prometheus|apiserver|kube-proxy|metrics-server|"
    r"blackbox-exporter|alertmanager",
    re.IGNORECASE,
)


def _scrape_service(labels: dict[str, str]) -> bool:
    """Is the alert's ``service`` label the Prometheus scrape target rather than its subject?"""
    svc = labels.get("service", "")
    return bool(svc) and (_SCRAPE_SERVICE.search(svc) is not None or svc == labels.get("job"))


def _exporter_label(key: str, value: str, labels: dict[str, str]) -> bool:
    """Is this ``pod``/``container`` label the exporter's own (the scrape target's), not the
    subject's? A metric without a pod of its own (an HPA's, a Deployment's) carries the pod of
    kube-state-metrics that exported it: it matches the scrape job or service name."""
    if key not in ("pod", "container"):
        return False
    scrapers = {labels.get("job", ""), labels.get("service", "") if _scrape_service(labels) else ""} - {""}
    return any(value == s or value.startswith(s + "-") for s in scrapers) or (
        _SCRAPE_SERVICE.search(value) is not None and _SCRAPE_SERVICE.search(labels.get("job", "")) is not None
    )


@dataclass(frozen=True)
class AlertTarget:
    """What structured alert labels say the investigation is about."""

    namespaces: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()  # object names from labels (pod, deployment, job_name, ...)
    nodes: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()  # "AlertName: description" for the matcher
    containers: tuple[str, ...] = ()


def alert_target(alerts: Iterable[object]) -> AlertTarget:
    """Targets from Alertmanager labels (namespace, pod, deployment, statefulset, daemonset,
    job_name, node, service, cluster/region). ``job`` is Prometheus' scrape job, not a Job."""
    ns: list[str] = []
    objs: list[str] = []
    nodes: list[str] = []
    clusters: list[str] = []
    facts: list[str] = []
    containers: list[str] = []
    for a in alerts:
        labels = dict(getattr(a, "labels", {}) or {})
        ann = dict(getattr(a, "annotations", {}) or {})
        subjects = [
            labels[key]
            for key, _kind in _ALERT_OBJECT_LABELS
            if labels.get(key)
            and not (key == "service" and _scrape_service(labels))
            and not _exporter_label(key, labels[key], labels)
        ]
        objs.extend(subjects)
        # ``node`` (like ``instance``, ``job``, ``endpoint``, ``prometheus``) is scrape metadata when
        # the alert names an object: the kubelet on that node reported the metric. Alone, it is
        # the subject (a node alert).
        if labels.get("node") and not subjects:
            nodes.append(labels["node"])
        # The namespace label names the subject's namespace, unless the alert is about a node and
        # the only namespace is the exporter's own (kube-state-metrics runs in ``monitoring``).
        exporter_ns = (
            not subjects
            and labels.get("node")
            and (_exporter_label("pod", labels.get("pod", ""), labels) or _scrape_service(labels))
        )
        if labels.get("namespace") and not exporter_ns:
            ns.append(labels["namespace"])
        if labels.get("container") and not _exporter_label("container", labels["container"], labels):
            containers.append(labels["container"])
        for key in ("cluster", "region"):
            if labels.get(key):
                clusters.append(labels[key])
        text = ann.get("description") or ann.get("summary") or ann.get("message") or ""
        facts.append(f"{labels.get('alertname', 'alert')}: {text}".strip())
    return AlertTarget(
        tuple(dict.fromkeys(ns)),
        tuple(dict.fromkeys(objs)),
        tuple(dict.fromkeys(nodes)),
        tuple(dict.fromkeys(clusters)),
        tuple(facts),
        tuple(dict.fromkeys(containers)),
    )


def terms_for_alerts(target: AlertTarget) -> QuestionTerms:
    """Question terms built from alert labels only (never from the alert's free text)."""
    words = [*target.objects]
    text = " ".join([*(f"namespace {n}" for n in target.namespaces), *words, *target.nodes])
    return QuestionTerms(
        text=text,
        tokens=tuple(words),
        names=tuple(words),
        namespace_claims=target.namespaces,
        object_words=tuple(words),
    )
