"""Quoting levels, so a replacement never breaks the JSON it sits in.

Redaction runs over serialized JSON, and that JSON often holds JSON again inside a string (a
``last-applied-configuration`` annotation, a log line that printed an object), which may hold JSON
again. A string at *level* k (k = 0: the outermost) is delimited by a quote preceded by
``2**k - 1`` backslashes: ``"`` at level 0, ``\\"`` at level 1, ``\\\\\\"`` at level 2. Inside it, a
quote belongs to the string's end exactly when the backslashes before it, counted modulo
``2**(k+1)``, number ``2**k - 1``.

``safe_span`` is the last word before a span is replaced: it moves the span's ends out of escape
sequences (``\\n``, ``\\"``, ``\\u00e9``) and stops it at a raw quote, so a replacement inside a
JSON string stays inside that string and the document stays valid.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["backslashes_before", "closing_quote", "line_end", "quote_at_level", "safe_span"]

_HEX = frozenset("0123456789abcdefABCDEF")


def backslashes_before(s: str, i: int) -> int:
    """How many backslashes end at ``i - 1``."""
    j = i
    while j > 0 and s[j - 1] == "\\":
        j -= 1
    return i - j


def quote_at_level(b: int) -> bool:
    """True when ``b`` (backslashes before a quote) is ``2**k - 1`` for some k: an opening quote."""
    return (b + 1) & b == 0


@lru_cache(maxsize=16)
def _closer(b0: int) -> re.Pattern[str]:
    """A raw newline, or a quote preceded by ``b0`` backslashes plus pairs of ``b0 + 1``: the quote
    that closes a string opened at that level."""
    return re.compile(rf"\n|(?<!\\)(?:\\{{{2 * (b0 + 1)}}})*\\{{{b0}}}\"")


def closing_quote(s: str, start: int, b0: int, limit: int) -> int:
    """Index of the backslashes that begin the quote closing a string opened by a quote with ``b0``
    backslashes before it, searching ``s[start:limit]``; -1 when it does not close there. A raw
    newline ends the search (no JSON string holds one)."""
    m = _closer(b0).search(s, start, limit)
    if m is None or m.group() == "\n":
        return -1
    return m.end() - 1 - b0


_LINE_STOP = re.compile(r'[\n\r"]|\\[nr]|\\u[0-9a-fA-F]{4}|\\.')


def line_end(s: str, start: int, limit: int, *, quotes: bool = True) -> int:
    """End of the line that ``start`` (not inside an escape) is on: a raw newline, an escaped one
    (``\\n``, ``\\r``), or (with ``quotes``) a raw quote — the end of the JSON string the line
    sits in; ``limit`` when none comes first."""
    for m in _LINE_STOP.finditer(s, start, limit):
        tok = m.group()
        if tok == '"' and not quotes:
            continue
        if len(tok) == 1 or tok[1] in "nr":
            return m.start()
    return limit


def _escape_end(s: str, j: int) -> int:
    """``s[j]`` is a backslash that starts an escape: the index just after the escape."""
    if s[j + 1 : j + 2] == "u" and len(s) >= j + 6 and all(c in _HEX for c in s[j + 2 : j + 6]):
        return j + 6
    return min(len(s), j + 2)


def _escape_around(s: str, i: int) -> tuple[int, int] | None:
    """The escape sequence that position ``i`` falls strictly inside, as ``(start, end)``."""
    for k in range(1, 6):
        j = i - k
        if j < 0:
            break
        if s[j] != "\\":
            continue
        if backslashes_before(s, j + 1) % 2 == 1:  # s[j] starts an escape
            end = _escape_end(s, j)
            return (j, end) if j < i < end else None
        return None
    return None


def safe_span(s: str, start: int, end: int, raw_quotes: bool = False) -> tuple[int, int]:
    """``(start, end)`` moved inwards so that it neither begins nor ends inside an escape sequence
    and, unless ``raw_quotes``, holds no raw quote. May return an empty span."""
    around = _escape_around(s, start)
    if around is not None:
        start = around[1]
    around = _escape_around(s, end)
    if around is not None:
        end = around[0]
    if not raw_quotes and start < end:
        q = start
        while True:
            q = s.find('"', q, end)
            if q < 0:
                break
            if backslashes_before(s, q) % 2 == 0:
                end = q
                break
            q += 1
    return start, max(start, end)
