"""Caps (DESIGN §2 step 5): each result, and each round of calls, fits a budget of characters
a model reads; what was cut is said, never silently dropped."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RoundBudget", "cap_text"]


def cap_text(text: str, limit: int | None) -> tuple[str, int]:
    """``text`` cut to about ``limit`` characters with a note saying how much was cut; returns
    the new text and the number of characters cut (0 = untouched)."""
    if limit is None or limit <= 0 or len(text) <= limit:
        return text, 0
    keep = max(0, limit - 160)
    cut = len(text) - keep
    # Cut at a line end when one is near, so a log or YAML line is not split.
    nl = text.rfind("\n", max(0, keep - 2000), keep)
    if nl > 0:
        cut += keep - nl
        keep = nl
    note = (
        f"\n[… {cut} of {len(text)} characters cut to fit the budget; narrow the query "
        "(a namespace, a name, a label selector, fewer lines) to see the rest]"
    )
    return text[:keep] + note, cut


@dataclass
class RoundBudget:
    """Characters left for the results of one round of tool calls (one model turn)."""

    limit: int
    used: int = 0

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)

    def take(self, text: str, per_result: int | None = None) -> tuple[str, int]:
        """Cap ``text`` to the per-result limit and what is left of the round; count it used."""
        limit = self.left if per_result is None else min(per_result, self.left)
        if limit <= 0:
            note = "[result not shown: this round's budget of results is spent; ask for less per round]"
            return note, len(text)
        shown, cut = cap_text(text, limit)
        self.used += len(shown)
        return shown, cut
