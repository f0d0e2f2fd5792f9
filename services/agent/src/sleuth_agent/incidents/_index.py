"""The "seen before" index: every remembered incident, searchable by object and by evidence.

Ranking (:meth:`IncidentIndex.search`), best first:

1. the same family on the same object (``resource``) — the same failure again;
2. the same object, another family;
3. a close evidence signature (:func:`similarity` at least ``min_similarity``: the share of
   normalised signature items two incidents have in common) — the same failure elsewhere.

Within a rank, the more similar signature, then the newer incident. Candidates for rank 3 come from
a BM25 index (``bm25s``) over signature, family and alert names (the best ``_CANDIDATES`` scores),
rebuilt in the background; incidents added since the last build are compared one by one.

Only incidents :func:`visible_to` the reader's scope are ever ranked, and never the job being
answered. The state is replaced, never changed in place, so a search running in a worker thread
reads a consistent snapshot while the event loop adds incidents.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import bm25s

from sleuth_agent.incidents._record import visible_to
from sleuth_agent.knowledge import tokens
from sleuth_common.messages import Incident, ScopeReply

__all__ = ["IncidentIndex", "SeenBefore", "similarity"]

_CANDIDATES = 50
_SAME_FAILURE, _SAME_OBJECT, _CLOSE = 3, 2, 1


def similarity(a: Iterable[str], b: Iterable[str]) -> float:
    """Jaccard similarity of two signatures (0 when either is empty)."""
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa and sb else 0.0


@dataclass(frozen=True)
class SeenBefore:
    incident: Incident
    rank: int
    """3 same failure on the same object, 2 same object, 1 close evidence."""
    similarity: float


def _text(i: Incident) -> list[str]:
    return tokens(" ".join((*i.signature, i.family.replace("_", " "), *i.alerts))) or ["_"]


@dataclass(frozen=True)
class _State:
    docs: dict[str, Incident] = field(default_factory=dict)
    """By job id, oldest first (never changed: a new state is made)."""
    by_resource: dict[str, tuple[str, ...]] = field(default_factory=dict)
    indexed: tuple[str, ...] = ()
    """Job ids in the BM25 index, in its document order."""
    indexed_set: frozenset[str] = frozenset()
    pending: tuple[str, ...] = ()
    """Job ids not in the BM25 index yet: compared one by one."""
    bm25: bm25s.BM25 | None = None


class IncidentIndex:
    """At most ``max_incidents`` incidents, none older than ``max_age`` seconds."""

    def __init__(self, max_incidents: int = 10_000, max_age: float = 90 * 86400.0) -> None:
        self.max_incidents = max_incidents
        self.max_age = max_age
        self._state = _State()

    def __len__(self) -> int:
        return len(self._state.docs)

    def __contains__(self, job_id: str) -> bool:
        return job_id in self._state.docs

    def get(self, job_id: str) -> Incident | None:
        return self._state.docs.get(job_id)

    @property
    def pending(self) -> int:
        """Incidents not in the BM25 index yet."""
        return len(self._state.pending)

    def add(self, incidents: Iterable[Incident], *, now: float | None = None) -> int:
        """Add (or, by job id, replace — feedback) incidents; drop the expired and the oldest over the
        cap. Returns how many were new."""
        now = time.time() if now is None else now
        docs = dict(self._state.docs)
        newest = next(reversed(docs.values())).at if docs else 0.0
        new, in_order = 0, True
        for i in incidents:
            if now - i.at > self.max_age:
                continue
            new += i.job_id not in docs
            in_order = in_order and i.at >= newest and i.job_id not in docs
            newest = max(newest, i.at)
            docs.pop(i.job_id, None)
            docs[i.job_id] = i
        if not in_order:  # a load, or feedback on an old one: order by time again (otherwise appended in order)
            docs = {i.job_id: i for i in sorted(docs.values(), key=lambda i: i.at)}
        for job_id, i in list(docs.items()):  # oldest first: drop the expired, then what is over the cap
            if now - i.at <= self.max_age and len(docs) <= self.max_incidents:
                break
            del docs[job_id]
        self._replace(docs)
        return new

    def _replace(self, docs: dict[str, Incident]) -> None:
        by_resource: dict[str, list[str]] = {}
        for i in docs.values():
            by_resource.setdefault(i.resource, []).append(i.job_id)
        old = self._state
        pending = tuple(j for j in docs if j not in old.indexed_set)
        self._state = _State(docs, {k: tuple(v) for k, v in by_resource.items()}, old.indexed, old.indexed_set,
                             pending, old.bm25)

    def rebuild(self) -> None:
        """Index every incident with BM25 (in a worker thread; the event loop keeps adding)."""
        state = self._state
        ids = tuple(state.docs)
        bm25 = None
        if ids:
            bm25 = bm25s.BM25()
            bm25.index([_text(state.docs[j]) for j in ids], show_progress=False)
        current = self._state  # added meanwhile: kept, searched one by one until the next rebuild
        indexed = frozenset(ids)
        pending = tuple(j for j in current.docs if j not in indexed)
        self._state = _State(current.docs, current.by_resource, ids, indexed, pending, bm25)

    def search(self, query: Incident, scope: ScopeReply, *, k: int = 3, min_similarity: float = 0.5,
               exclude: str = "") -> list[SeenBefore]:
        """The ``k`` earlier incidents most like ``query`` that ``scope`` may read."""
        state = self._state
        skip = {exclude or query.job_id}
        found: dict[str, SeenBefore] = {}

        def consider(job_id: str, rank: int | None = None) -> None:
            i = state.docs.get(job_id)
            if i is None or job_id in skip or job_id in found:
                return
            sim = similarity(query.signature, i.signature)
            if rank is None:
                if sim < min_similarity:
                    return
                rank = _CLOSE
            if visible_to(i, scope):
                found[job_id] = SeenBefore(i, rank, round(sim, 3))

        for job_id in state.by_resource.get(query.resource, ()):
            consider(job_id, _SAME_FAILURE if state.docs[job_id].family == query.family else _SAME_OBJECT)
        if query.signature:
            if state.bm25 is not None and state.indexed:
                scores = state.bm25.get_scores(_text(query))
                best = scores.argsort()[::-1][:_CANDIDATES]
                for n in best:
                    if scores[n] > 0:
                        consider(state.indexed[int(n)])
            for job_id in state.pending:
                consider(job_id)
        ranked = sorted(found.values(), key=lambda s: (-s.rank, -s.similarity, -s.incident.at))
        return ranked[:k]
