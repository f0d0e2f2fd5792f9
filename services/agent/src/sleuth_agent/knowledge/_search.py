"""Runbook search: BM25 (``bm25s``) over title, tags and body, ranked by tag matches first.

A query is free text (the question, the alert's summary, the finding) and *tags* — ``alert:<name>``,
``family:<family>``, ``workload:<name>``, ``kind:<Kind>`` — from what the investigation knows. Hits
are ranked by the weight of the tags they match (:data:`_ABOUT`: alert 4, workload 2, family and
kind 1 each), so any tag match ranks above text alone; among equals BM25 decides.

Who may see a runbook (:class:`Visibility`): one tagged ``namespace:`` only someone who may read
*every* namespace it names on the cluster asked about (a runbook for team-a and team-b may say
things about both), or a cluster-wide reader; one tagged ``cluster:`` only for questions about
that cluster. Untagged runbooks are for everyone. Invisible runbooks are dropped before ranking, so
nothing about them — not even that one matched — reaches an answer.

The index is rebuilt whole when the runbooks change (1,000 runbooks index in well under a second);
search scores every document (``get_scores``) so visibility never starves the top k.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import bm25s

from sleuth_agent.knowledge._runbooks import Runbook

__all__ = ["Hit", "RunbookIndex", "Visibility", "query_tags", "tokens"]

_ABOUT = {"alert": 4, "workload": 2, "family": 1, "kind": 1}
"""Tag kinds a query matches, and what a match weighs: a runbook written for the alert that fired is
the most specific, then one for the workload, then one for the failure family or the object's kind."""
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_STEP = re.compile(r"^\s*(\d{1,3})[.)]\s+(.+)$")
_STOP = frozenset(
    "a an and are as at be but by can do does for from has have how i if in into is it its may me my no not of "
    "on or our so than that the their then there these they this to was we were what when where which who why "
    "will with you your".split()
)


def tokens(text: str) -> list[str]:
    """Lower-case words without stop words; ``KubePodCrashLooping`` also gives kube, pod, crash, looping."""
    out: list[str] = []
    for word in re.findall(r"[A-Za-z0-9]+", text):
        low = word.lower()
        if low not in _STOP and len(low) > 1:
            out.append(low)
        parts = _CAMEL.split(word)
        if len(parts) > 1:
            out.extend(p.lower() for p in parts if len(p) > 1 and p.lower() not in _STOP)
    return out


def query_tags(*, alert: str = "", family: str = "", workload: str = "", kind: str = "") -> frozenset[str]:
    """The tags an investigation's facts match (empty facts are left out)."""
    pairs = (("alert", alert), ("family", family), ("workload", workload), ("kind", kind))
    return frozenset(f"{k}:{v}".lower() for k, v in pairs if v)


@dataclass(frozen=True)
class Visibility:
    """What the asker may read on the cluster asked about."""

    cluster: str
    namespaces: frozenset[str]
    cluster_wide: bool = False

    def allows(self, runbook: Runbook) -> bool:
        clusters = runbook.tagged("cluster")
        if clusters and self.cluster.lower() not in clusters:
            return False
        namespaces = runbook.tagged("namespace")
        return not namespaces or self.cluster_wide or set(namespaces) <= self.namespaces


@dataclass(frozen=True)
class Hit:
    runbook: Runbook
    score: float
    matched_tags: tuple[str, ...]
    """The query's tags this runbook carries (alert/family/workload/kind): why it is relevant."""
    step: tuple[int, str] | None
    """The numbered step of the body that best matches the query, if any shares a word with it."""
    weight: int = 0
    """What those tags weigh together (see :data:`_ABOUT`)."""


class RunbookIndex:
    def __init__(self, runbooks: Iterable[Runbook]) -> None:
        self.runbooks: tuple[Runbook, ...] = tuple(sorted(runbooks, key=lambda r: r.id))
        """Every document, standing instructions too (``kb list``)."""
        self._searchable = tuple(r for r in self.runbooks if r.type == "runbook")
        self.instructions = tuple(r for r in self.runbooks if r.type == "instruction")
        self._bm25: bm25s.BM25 | None = None
        if self._searchable:
            corpus = [tokens(f"{r.title} {r.title} {' '.join(r.tags)} {r.body}") or ["_"] for r in self._searchable]
            self._bm25 = bm25s.BM25()
            self._bm25.index(corpus, show_progress=False)

    def __len__(self) -> int:
        return len(self.runbooks)

    def search(self, text: str, tags: Iterable[str] = (), *, visible: Visibility, k: int = 3,
               tagged_only: bool = False) -> list[Hit]:
        """The best ``k`` runbooks ``visible`` allows for the query; with ``tagged_only``, only those
        whose tags match one of ``tags`` (what an answer links without being asked)."""
        if self._bm25 is None or k <= 0:
            return []
        wanted = {t.lower() for t in tags}
        words = tokens(text) + [w for t in wanted for w in tokens(t.partition(":")[2])]
        scores = self._bm25.get_scores(words) if words else [0.0] * len(self._searchable)
        ranked: list[tuple[int, float, Runbook, tuple[str, ...]]] = []  # (tag weight, bm25, runbook, matched)
        for runbook, score in zip(self._searchable, scores, strict=True):
            matched = tuple(t for t in runbook.tags if t in wanted and t.partition(":")[0] in _ABOUT)
            if (tagged_only and not matched) or (not matched and score <= 0):
                continue
            if not visible.allows(runbook):
                continue
            ranked.append((sum(_ABOUT[t.partition(":")[0]] for t in matched), float(score), runbook, matched))
        ranked.sort(key=lambda t: (-t[0], -t[1], t[2].id))
        return [Hit(rb, round(score, 4), matched, best_step(rb.body, words), weight)
                for weight, score, rb, matched in ranked[:k]]


def best_step(body: str, words: Iterable[str]) -> tuple[int, str] | None:
    """The numbered list item sharing the most words with the query (the first among equals)."""
    query = set(words)
    best: tuple[int, int, str] | None = None
    for line in body.splitlines():
        m = _STEP.match(line)
        if not m:
            continue
        overlap = len(query & set(tokens(m[2])))
        if overlap and (best is None or overlap > best[0]):
            best = (overlap, int(m[1]), m[2].strip())
    return None if best is None else (best[1], best[2])
