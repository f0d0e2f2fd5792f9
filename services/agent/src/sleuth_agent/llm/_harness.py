"""The evidence rule for the model's answer (DESIGN §3): claims cite evidence ids of this run.
An answer that cites ids this run never produced, or cites none although evidence exists, fails."""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["EVIDENCE_ID", "check_answer", "cited_ids"]

EVIDENCE_ID = re.compile(r"\bE\d{2,4}\b")


def cited_ids(text: str) -> list[str]:
    return list(dict.fromkeys(EVIDENCE_ID.findall(text)))


def check_answer(text: str, known: Collection[str]) -> list[str]:
    """Problems of ``text`` ([] = it passes)."""
    problems: list[str] = []
    if not text.strip():
        return ["the answer is empty"]
    cited = cited_ids(text)
    unknown = [i for i in cited if i not in known]
    if unknown:
        problems.append("it cites evidence ids that do not exist in this run: " + ", ".join(unknown))
    if known and not any(i in known for i in cited):
        problems.append("it cites no evidence id, although every claim must cite one")
    return problems
