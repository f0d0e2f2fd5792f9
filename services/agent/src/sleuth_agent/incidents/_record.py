"""What an incident keeps of a finished investigation, and who may see it again.

- **Which answers**: ``diagnosed`` ones only. A healthy or inconclusive answer has no decisive
  evidence to sign and no fix to remember; recording every "is team-a fine?" would bury the real
  incidents and make "seen before" claim a history that is only a question asked twice.
- **The signature** of the decisive evidence (the evidence the root cause paragraph cites;
  all of it when the answer cites none): each highlight lower-cased with IPs, UUIDs, hashes,
  generated name suffixes, times and numbers replaced by placeholders — exit codes excepted, they
  are the point — cut to 160 characters. Never the raw tool output: highlights are already the
  investigator's own one-line readings of it.
- **Who may see it**: every namespace the record names — the root cause's and affected object's,
  the ``-n`` of the decisive evidence's commands, ``Kind/ns/name`` references, and any namespace of
  the asker's scope whose name appears in the kept text. Decisive evidence read without a
  namespace (a node, a StorageClass, ``-A``) or a cluster-scoped root cause makes it
  ``cluster_wide_only``. A reader needs all of it on every cluster the record may be from.
- **Who may give feedback**: the asker and the answer's readers (a channel's members: user names in
  ``readers``, groups in ``reader_groups``) — see :mod:`._feedback`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence

from sleuth_common.messages import Incident, InvestigationJob, InvestigationResult, ScopeReply

__all__ = ["incident_of", "namespaces_named", "normalise", "visible_to"]

_ITEM_CHARS = 160
_CITED = re.compile(r"\bE\d{2,3}\b")
_NS_FLAG = re.compile(r"(?:^|\s)(?:-n|--namespace)(?:=|\s+)([a-z0-9][a-z0-9-]{0,62})(?=\s|$)")
_ALL_NS = re.compile(r"(?:^|\s)(?:-A|--all-namespaces)(?=\s|$)")
_REF = re.compile(r"\b[A-Z][A-Za-z]+/([a-z0-9][a-z0-9-]{0,62})/[a-z0-9][a-z0-9.-]*")
_WORD = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")

_EXIT = re.compile(r"\bexit(?:ed)?(?: with)?(?: code|code)?[ =:]+(\d{1,3})\b")
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b|\bsha256:[0-9a-f]+\b")
_SUFFIX = re.compile(r"(?<=-)(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{4,10}(?![a-z0-9])")  # pod-name tails
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")
_HIDE = str.maketrans("0123456789", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
_SHOW = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "0123456789")


def normalise(text: str) -> str:
    """One highlight as a signature item: what stays the same when the same failure happens again."""
    s = text.lower()
    s = _EXIT.sub(lambda m: f"exit code {m[1].translate(_HIDE)}", s)  # kept: hidden from the number rule
    s = _TIME.sub("<time>", s)
    s = _UUID.sub("<id>", s)
    s = _IP.sub("<ip>", s)
    s = _HASH.sub("<id>", s)
    s = _SUFFIX.sub("<id>", s)
    s = _NUMBER.sub("<n>", s).translate(_SHOW)
    s = _SPACE.sub(" ", s).strip(" ;,.")
    return s if len(s) <= _ITEM_CHARS else s[: _ITEM_CHARS - 1] + "…"


def _shorten(text: str, limit: int) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cited(result: InvestigationResult) -> set[str]:
    """Evidence ids the root cause paragraph cites (``**Root cause** … [E02, E03]``)."""
    for para in result.answer_markdown.split("\n\n"):
        if para.lstrip().startswith("**Root cause**"):
            return set(_CITED.findall(para))
    return set(_CITED.findall(result.root_cause.summary if result.root_cause else ""))


def _ns_of(ref: str) -> str:
    parts = ref.split("/")
    return parts[1] if len(parts) == 3 else ""


def _scoped_clusters(job: InvestigationJob, scope: ScopeReply, namespace: str) -> list[str]:
    """The clusters this investigation may have found ``namespace`` (or the cluster-scoped object) on."""
    names = [c for c in job.clusters if c in scope.clusters] or sorted(scope.clusters)
    return [c for c in names if scope.clusters[c].cluster_wide or (namespace and namespace in scope.clusters[c].namespaces)]


def incident_of(job: InvestigationJob, result: InvestigationResult, scope: ScopeReply, *, max_summary: int = 600,
                max_actions: int = 5, max_signature: int = 12, now: float | None = None) -> Incident | None:
    """The incident ``result`` is worth remembering as, or None (not diagnosed, no object, no cluster)."""
    rc = result.root_cause
    if result.status != "diagnosed" or rc is None or not rc.resource or not job.id:
        return None
    namespace = _ns_of(rc.resource)
    clusters = _scoped_clusters(job, scope, namespace)
    if not clusters:
        return None
    cited = _cited(result)
    decisive = [e for e in result.evidence if e.id in cited] or list(result.evidence)
    signature = list(dict.fromkeys(normalise(h) for e in decisive for h in (e.highlights or (e.summary,)) if h.strip()))
    summary = _shorten(rc.summary or rc.chain, max_summary)
    actions = tuple(_shorten(a.text, max_summary) for a in result.actions[:max_actions] if a.text.strip())
    namespaces = {n for n in (namespace, _ns_of(rc.affected)) if n}
    cluster_wide_only = not namespace
    for e in decisive:
        if not e.command:
            continue
        flags = _NS_FLAG.findall(e.command)
        namespaces.update(flags)
        if _ALL_NS.search(e.command) or (e.command.startswith("kubectl ") and not flags):
            cluster_wide_only = True
    texts = [summary, rc.chain, *actions, *(a.command for a in result.actions[:max_actions]), *signature]
    namespaces.update(m for t in texts for m in _REF.findall(t))
    namespaces.update(_mentioned(texts, (n for c in clusters for n in scope.clusters[c].namespaces)))
    return Incident(
        job_id=job.id, clusters=tuple(clusters), namespaces=tuple(sorted(namespaces)),
        cluster_wide_only=cluster_wide_only, family=rc.family, resource=rc.resource, confidence=rc.confidence,
        alerts=tuple(dict.fromkeys(a.labels["alertname"] for a in job.alerts if a.labels.get("alertname"))),
        signature=tuple(signature[:max_signature]), summary=summary, actions=actions,
        at=time.time() if now is None else now, user=job.requester.user, origin=job.origin,
        readers=tuple(sorted({m.user for m in job.audience if m.user and m.user != job.requester.user})),
        reader_groups=tuple(sorted({g for m in job.audience if not m.user for g in m.groups})),
        question=_shorten(job.question, max_summary),
        commands=tuple(dict.fromkeys(e.command for e in decisive if e.command))[:max_signature],
    )


def namespaces_named(text: str) -> set[str]:
    """Namespaces ``text`` names explicitly (``Kind/ns/name``, ``-n ns``): a "fixed by" text."""
    return set(_REF.findall(text)) | set(_NS_FLAG.findall(text))


def _mentioned(texts: Iterable[str], namespaces: Iterable[str]) -> set[str]:
    """The ``namespaces`` named as a whole word in ``texts``."""
    words = {w for t in texts for w in _WORD.findall(t.lower())}
    return {n for n in namespaces if n in words}


def visible_to(incident: Incident, scope: ScopeReply, clusters: Sequence[str] = ()) -> bool:
    """Whether everyone ``scope`` stands for (for a channel, it is already every reader's
    intersection) may read everything ``incident`` names, on every cluster it may be from."""
    if not incident.clusters:
        return False
    for name in incident.clusters:
        cs = scope.clusters.get(name)
        if cs is None or (clusters and name not in clusters):
            return False
        if cs.cluster_wide:
            continue
        if incident.cluster_wide_only or not set(incident.namespaces) <= set(cs.namespaces):
            return False
    return True
