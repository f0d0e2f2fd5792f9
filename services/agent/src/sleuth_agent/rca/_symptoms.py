"""Does the question assert a current problem ("checkout keeps restarting", "504s since 9am",
"why is it getting killed")? Then an answer of "healthy" would contradict the asker without
evidence that the symptom recovered: all-green pods with no current signal mean the cause is
somewhere the investigator did not look, so it abstains instead."""

from __future__ import annotations

import re

__all__ = ["asserted_symptoms", "ongoing", "request_level"]

_SYMPTOM = re.compile(
    r"\b(restart(?:s|ed|ing)?|crash(?:es|ed|ing|looping)?|crashloop\w*|5\d\ds?|5xxs?|errors?|erroring|slow(?:ness|er)?|"
    r"latency|time ?outs?|timing out|timed out|down|not working|doesn'?t work|does not work|(?:getting |gets |got )?killed|"
    r"oom\w*|exit(?:ed)?(?: code)? ?\d+|unavailable|refused|hangs?|hanging|failing|fails)\b",
    re.IGNORECASE,
)
# A yes/no question ("is it down?", "any errors?") asks; it does not assert.
_ASKING = re.compile(r"^\s*(?:is|are|was|were|does|do|did|has|have|any|anything|could|can|should)\b", re.IGNORECASE)


def asserted_symptoms(text: str) -> list[str]:
    """The symptom words of the sentences in ``text`` that state a problem (not a yes/no question)."""
    found: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text or ""):
        if not sentence.strip() or (_ASKING.match(sentence) and sentence.rstrip().endswith("?")):
            continue
        found.extend(m.group(0).lower() for m in _SYMPTOM.finditer(sentence))
    return list(dict.fromkeys(found))


_REQUEST = re.compile(
    r"^(?:5\d\ds?|5xxs?|errors?|erroring|slow\w*|latency|time ?outs?|timing out|timed out|down|not working|"
    r"doesn'?t work|does not work|unavailable|refused|hangs?|hanging|failing|fails)$"
)
_ONGOING = re.compile(r"^(?:restarts|restarting|crash(?:es|ing|looping)|crashloop\w*|(?:getting|gets) killed)$")


def request_level(symptoms: list[str]) -> bool:
    """Symptoms seen by callers (5xx, errors, slow, timeouts, down): Ready pods do not refute them."""
    return any(_REQUEST.match(w) for w in symptoms)


def ongoing(symptoms: list[str]) -> bool:
    """Restart symptoms stated as still happening ("keeps restarting", "crashing")."""
    return any(_ONGOING.match(w) for w in symptoms)
