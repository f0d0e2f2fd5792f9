"""Ranking: which of a workload's matched signatures is its root cause, which are alternatives,
and how findings order against each other (confidence, named by the question, catalog position)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sleuth_agent.rca._signatures import Match, load_catalog

if TYPE_CHECKING:
    from sleuth_agent.rca._observe import WorkloadObservation
    from sleuth_agent.rca.engine.registry import Located
    from sleuth_common.messages.jobs import Confidence

__all__ = ["Finding", "rank_matches"]

_CONFIDENCE_SCORE = {"high": 0.9, "medium": 0.6, "low": 0.3}


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
    def confidence(self) -> Confidence:
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
