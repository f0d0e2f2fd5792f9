"""``redact_text``: one Aho-Corasick pass over a lower-cased copy of the text finds every place a
rule's trigger occurs; each rule's finder then looks only there. The corpus in
``libs/common/tests/data/redaction_corpus.yaml`` is the specification: add a shape there first,
then a rule.

Valid JSON in, valid JSON out: every span is moved out of escape sequences and stopped at a raw
quote before it is replaced (``_escapes.safe_span``), and a bare JSON scalar under a secret key is
replaced by a quoted placeholder.

Speed: the trigger scan runs at memory speed on bytes for ASCII text. Finders look at the
neighbourhood of their trigger with regexes free of nested quantifiers; a trigger inside a span
already found is skipped; what a finder shares with the others (the next PEM footer, where the
Secrets are) is worked out once per call (``Memo``); the looking around that has no natural
bound (which object a ``data`` key belongs to) draws on a budget linear in the text, and once it
is spent the rules redact rather than look. So the cost is linear in the text plus the number of
trigger hits — ``tests/test_redaction_adversarial.py`` holds the texts built to break that.
"""

from __future__ import annotations

import re

import ahocorasick_rs

from sleuth_common.redact._assign import ASSIGN_RULES
from sleuth_common.redact._base import Memo, Rule, Span
from sleuth_common.redact._blocks import BLOCK_RULES
from sleuth_common.redact._escapes import safe_span
from sleuth_common.redact._names import REDACTED
from sleuth_common.redact._shapes import SHAPE_RULES

__all__ = ["RULES", "redact_text"]

RULES: tuple[Rule, ...] = (*BLOCK_RULES, *SHAPE_RULES, *ASSIGN_RULES)

_BY_TRIGGER: dict[str, list[Rule]] = {}
for _rule in RULES:
    _BY_TRIGGER.setdefault(_rule.trigger, []).append(_rule)
_TRIGGERS = list(_BY_TRIGGER)
_TRIGGER_RULES = [tuple(_BY_TRIGGER[t]) for t in _TRIGGERS]
_MATCHER = ahocorasick_rs.AhoCorasick(_TRIGGERS)
_BYTES_MATCHER = ahocorasick_rs.BytesAhoCorasick([t.encode() for t in _TRIGGERS])
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def find_spans(text: str) -> list[Span]:
    """Every span a rule wants replaced, unsorted and possibly overlapping."""
    if text.isascii():
        low = text.lower()
        # On bytes the matcher runs ~4x faster; for ASCII, byte offsets are character offsets.
        hits = _BYTES_MATCHER.find_matches_as_indexes(low.encode("ascii"), overlapping=True)
    else:
        low = text.translate(_ASCII_LOWER)  # same length: only ASCII letters change
        hits = _MATCHER.find_matches_as_indexes(low, overlapping=True)
    spans: list[Span] = []
    memo: Memo = {}
    cover_start, cover_end = -1, -1
    for idx, start, end in hits:
        if cover_start <= start and end <= cover_end:
            continue  # inside a span already found: whatever it holds is replaced anyway
        for rule in _TRIGGER_RULES[idx]:
            for span in rule.find(text, low, start, memo):
                spans.append(span)
                if span.end > cover_end and not span.wrap and text.find('"', span.start, span.end) < 0:
                    cover_start, cover_end = span.start, span.end
    return spans


_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


def _bare_json_scalar(text: str, start: int, end: int) -> bool:
    """Is ``text[start:end]`` a bare JSON scalar in a value position (after ``:``, ``,`` or ``[``,
    before ``,``, ``}``, ``]`` or the end)? Replacing it unquoted would break the document."""
    if not _SCALAR.fullmatch(text, start, end):
        return False
    i = start - 1
    while i >= 0 and text[i] in " \t\r\n":
        i -= 1
    j = end
    while j < len(text) and text[j] in " \t\r\n":
        j += 1
    return i >= 0 and text[i] in ":,[" and (j == len(text) or text[j] in ",}]")


def redact_text(text: str) -> tuple[str, int]:
    """Replace every credential-shaped value in ``text``; returns the new text and how many
    values were replaced. Valid JSON stays valid JSON."""
    if not text:
        return text, 0
    spans = find_spans(text)
    if not spans:
        return text, 0
    spans.sort()
    out: list[str] = []
    pos = 0
    count = 0
    i = 0
    n = len(spans)
    while i < n:
        start, end, wrap, raw = spans[i]
        i += 1
        # overlapping spans merge into one replacement
        while i < n and spans[i].start < end:
            end = max(end, spans[i].end)
            wrap = wrap if spans[i].start > start else (wrap or spans[i].wrap)
            raw = raw or spans[i].raw_quotes  # set only where the context is plain text
            i += 1
        if start < pos:
            start = pos
        if wrap:
            if start >= end:
                continue
        else:
            start, end = safe_span(text, start, end, raw)
            if start >= end or text[start:end] == REDACTED:
                continue
            if _bare_json_scalar(text, start, end):
                wrap = '"'  # a number/true/false/null in a JSON value position: keep it JSON
        out.append(text[pos:start])
        out.append(f"{wrap}{REDACTED}{wrap}")
        pos = end
        count += 1
    if not count:
        return text, 0
    out.append(text[pos:])
    return "".join(out), count
