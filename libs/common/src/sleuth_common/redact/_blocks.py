"""Credentials recognised by the document around them, not by their own shape:

* ``data`` / ``stringData`` of a ``kind: Secret`` written as text — ``kubectl get secret -o yaml``
  or ``-o json`` output pasted into a log line, a text result, a JSON string. Every value under
  them is replaced, whatever its key; the keys stay (``missing key "password"`` is a diagnosis).
* ``kubectl.kubernetes.io/last-applied-configuration``: its value is the whole object as JSON.
  For a Secret, that JSON holds the Secret's data in clear (base64) and nothing a diagnosis needs
  that the object itself does not show, so the annotation's value is replaced entirely. For any
  other kind it is kept — "what changed" compares it with the spec — and the other rules redact
  inside it (env pairs, secret-named keys, tokens), as they do in any escaped JSON.

The YAML side reads lines separated by raw newlines or by escaped ones at any JSON quoting level
(``\\n``, ``\\\\n`` …), optionally prefixed by a ``kubectl logs --timestamps`` time.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence

from sleuth_common.redact._base import Memo, Rule, Span, json_like
from sleuth_common.redact._escapes import backslashes_before, closing_quote, line_end, quote_at_level

__all__ = ["BLOCK_RULES"]

_KIND_SECRET = re.compile(r"kind\\*[\"']?(?:\s|\\+[nrt])*:(?:\s|\\+[nrt])*\\*[\"']?secret\b")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dt[\d:.]+(?:z|[+-]\d\d:?\d\d)? ")


def _secret_near(low: str, memo: Memo, lo: int, hi: int) -> bool:
    """Whether ``kind: Secret`` (any quoting) occurs in ``low[lo:hi]``; the text is searched once
    per call, so a text without Secrets costs one scan however many ``data`` keys it has."""
    kinds = memo.get("secret_kinds")
    if kinds is None:
        kinds = [m.start() for m in _KIND_SECRET.finditer(low)] if "secret" in low else []
        memo["secret_kinds"] = kinds
    i = bisect_left(kinds, lo)
    return i < len(kinds) and kinds[i] < hi


def _spend(low: str, memo: Memo, n: int) -> bool:
    """Charge ``n`` characters of looking around to this call's budget (linear in the text);
    False once it is spent — the rules then redact without asking what kind of object it is."""
    left = _left(low, memo) - n
    memo["budget"] = left
    return left >= 0


def _left(low: str, memo: Memo) -> int:
    left: int | None = memo.get("budget")
    return 2 * len(low) + 262_144 if left is None else left


# ---- last-applied-configuration ------------------------------------------------------------------

_GAP = re.compile(r"(?:\\*[\"']|[\s:|>+\-]|\\+[nrt])*\{")
_BRACE = re.compile(r"[{}]")


def _braces_end(low: str, start: int, limit: int) -> int:
    """Index of the brace closing the one at ``start`` (braces counted naively), or -1."""
    depth = 0
    for m in _BRACE.finditer(low, start, limit):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.start()
    return -1


def _last_applied(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    g = _GAP.match(low, at + len("last-applied-configuration"), min(len(low), at + 400))
    if g is None:
        return ()
    bs = g.end() - 1
    json_doc = json_like(low)
    if json_doc and low[bs - 1 : bs] != '"':
        return ()  # in a JSON document the value is a string; an object here is no annotation value
    if not _secret_near(low, memo, bs, len(low)):
        return ()
    limit = min(len(low), bs + max(0, _left(low, memo)))
    be = _braces_end(low, bs, limit)
    _spend(low, memo, (be if be >= 0 else limit) - bs)
    if be < 0:
        if limit == len(low):
            return ()  # never closes: not an object
        # out of budget: the value up to the end of its line or string goes
        return (Span(bs, line_end(low, bs, len(low))),)
    if _KIND_SECRET.search(low, bs, be) is None:
        return ()
    # Embedded in plain YAML/text, the JSON has raw quotes; inside a JSON string it has only
    # escaped ones, and a span that met a raw quote would have left that string.
    raw = not json_doc and low.find('\\"', bs, be) < 0
    return (Span(bs, be + 1, raw_quotes=raw),)


# ---- Secret data written as JSON ---------------------------------------------------------------

_SPACE = re.compile(r"(?:[ \t\r\n]|\\+[nrt])*")
_STRUCT = re.compile(r'[{}"]')


def _skip_space(low: str, i: int, limit: int, extra: str = "") -> int:
    """After whitespace, raw or escaped at any level (and ``extra`` characters)."""
    while True:
        m = _SPACE.match(low, i, limit)
        i = m.end() if m is not None else i
        if extra and i < limit and low[i] in extra:
            i += 1
            continue
        return i


def _kind_value(low: str, t: int, q: str, limit: int) -> str | None:
    """At a level quote ``t`` opening a key: the value when the key is ``kind``, else None."""
    k = t + 1
    if not low.startswith("kind" + q, k):
        return None
    j = _skip_space(low, k + 4 + len(q), limit)
    if not low.startswith(":", j):
        return None
    j = _skip_space(low, j + 1, limit)
    if not low.startswith(q, j):
        return ""
    m = re.compile(r"[a-z0-9]*").match(low, j + len(q))
    return m.group() if m is not None else ""


def _tokens_backward(low: str, lo: int, hi: int) -> Iterator[re.Match[str]]:
    """``_STRUCT`` matches in ``low[lo:hi]``, last first, read in chunks."""
    size = 256
    while hi > lo:
        c = max(lo, hi - size)
        yield from reversed(list(_STRUCT.finditer(low, c, hi)))
        hi = c
        size = min(4096, size * 2)


def _object_kind(low: str, key_at: int, obj_end: int, b0: int, memo: Memo) -> str | None:
    """``kind`` of the JSON object (quoting level ``b0``) that holds the key at ``key_at`` and
    whose member ends at ``obj_end``: looked for forward to the object's end, then backward to its
    start. None when it has none, or when the budget runs out first."""
    mod = 2 * (b0 + 1)
    q = "\\" * b0 + '"'
    hi = min(len(low), obj_end + 1 + max(0, _left(low, memo)))
    found: str | None = None
    depth, in_str, reached, closed = 0, False, hi, False
    for m in _STRUCT.finditer(low, obj_end + 1, hi):
        ch, t = m.group(), m.start()
        if ch == '"':
            if backslashes_before(low, t) % mod != b0:
                continue
            in_str = not in_str
            if in_str and depth == 0:
                found = _kind_value(low, t, q, len(low))
                if found is not None:
                    reached = t
                    break
            continue
        if in_str:
            continue
        depth += 1 if ch == "{" else -1
        if depth < 0:
            reached, closed = t, True
            break
    if not _spend(low, memo, reached - obj_end) or found is not None or not closed:
        return found
    lo = max(0, key_at - b0 - max(0, _left(low, memo)))
    depth, in_str, reached = 0, False, lo
    for m in _tokens_backward(low, lo, key_at - b0):
        ch, t = m.group(), m.start()
        if ch == '"':
            if backslashes_before(low, t) % mod != b0:
                continue
            in_str = not in_str
            if not in_str and depth == 0:
                found = _kind_value(low, t, q, len(low))
                if found is not None:
                    reached = t
                    break
            continue
        if in_str:
            continue
        depth += 1 if ch == "}" else -1
        if depth < 0:
            reached = t
            break
    _spend(low, memo, key_at - reached)
    return found


def _json_data(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """``"data": {"k": "v", …}`` (any quoting level) inside a Secret: every ``v``."""
    b0 = backslashes_before(low, at)
    if not quote_at_level(b0):
        return ()
    name_end = low.find('"', at + 1, at + 16)
    if name_end < 0 or low[at + 1 : name_end - b0] not in ("data", "stringdata"):
        return ()
    if backslashes_before(low, name_end) != b0:
        return ()
    i = _skip_space(low, name_end + 1, len(low))
    if not low.startswith(":", i):
        return ()
    i = _skip_space(low, i + 1, len(low))
    if not low.startswith("{", i) or not _secret_near(low, memo, 0, len(low)):
        return ()
    q = "\\" * b0 + '"'
    spans: list[Span] = []
    i += 1
    limit = len(low)
    while True:
        i = _skip_space(low, i, limit, ",")
        if low.startswith("}", i):
            break
        if not low.startswith(q, i):
            return ()
        ke = closing_quote(low, i + len(q), b0, limit)
        if ke < 0:
            return ()
        j = _skip_space(low, ke + len(q), limit)
        if not low.startswith(":", j):
            return ()
        j = _skip_space(low, j + 1, limit)
        if low.startswith(q, j):
            ve = closing_quote(low, j + len(q), b0, limit)
            if ve < 0:
                return ()
            if ve > j + len(q):
                spans.append(Span(j + len(q), ve))
            i = ve + len(q)
        elif low.startswith("{", j) or low.startswith("[", j):
            return ()  # a nested value: not Secret data
        else:
            while j < limit and low[j] not in ",}":
                j += 1
            i = j
    if not spans:
        return ()
    kind = _object_kind(low, at, i, b0, memo)
    return spans if kind == "secret" or (kind is None and memo["budget"] < 0) else ()


# ---- Secret data written as YAML ---------------------------------------------------------------


def _newline_before(low: str, p: int) -> tuple[str, int] | None:
    """The line separator in force where a line starts at ``p``: ``("\\n", -1)`` for raw text, or an
    escaped newline and the backslash count of the quote that closes the JSON string it is in."""
    if p == 0 or low[p - 1] in "\n\r":
        return "\n", -1
    if low[p - 1] == "n":
        b = backslashes_before(low, p - 1)
        if b >= 1 and b & (b - 1) == 0 and backslashes_before(low, p - 1 - b) % 2 == 0:
            return "\\" * b + "n", b - 1
    if low[p - 1] == '"':
        b = backslashes_before(low, p - 1)
        if quote_at_level(b):
            return "\\" * (b + 1) + "n", b
    return None


class _Lines:
    """The lines of a YAML text around a position, read lazily in either direction: the work is
    what the object at hand spans. Looking around is charged to the budget (a line costs at least
    64 characters' worth: per line, not per character, is what the work costs)."""

    def __init__(self, low: str, nl: str, lo: int, hi: int, memo: Memo, *, prefix: bool) -> None:
        self.low, self.nl, self.lo, self.hi, self.memo = low, nl, lo, hi, memo
        self.cr = "\r" if nl == "\n" else "\\" * (len(nl) - 1) + "r"
        self.prefix = prefix  # each line starts with a `kubectl logs --timestamps` time

    def line_from(self, s: int) -> tuple[int, int]:
        e = self.low.find(self.nl, s, self.hi)
        return s, (e if e >= 0 else self.hi)

    def next(self, line: tuple[int, int], *, charge: bool = True) -> tuple[int, int] | None:
        if line[1] >= self.hi or (charge and not _spend(self.low, self.memo, max(64, line[1] - line[0]))):
            return None
        return self.line_from(line[1] + len(self.nl))

    def prev(self, line: tuple[int, int]) -> tuple[int, int] | None:
        if line[0] <= self.lo or not _spend(self.low, self.memo, max(64, line[1] - line[0])):
            return None
        k = self.low.rfind(self.nl, self.lo, line[0] - len(self.nl))
        s = k + len(self.nl) if k >= 0 else self.lo
        return s, line[0] - len(self.nl)

    def body(self, line: tuple[int, int]) -> tuple[int, int]:
        s, e = line
        if self.prefix:
            m = _TIMESTAMP.match(self.low, s, e)
            if m is not None:
                s = m.end()
        if self.low.endswith(self.cr, s, e):
            e -= len(self.cr)
        return s, e

    def indent(self, line: tuple[int, int]) -> tuple[int, int, bool]:
        """(indentation of the key, start of the key, the line opens a list item)."""
        s, e = self.body(line)
        j = s
        while j < e and self.low[j] == " ":
            j += 1
        item = self.low.startswith("- ", j, e) or self.low[j:e] == "-"
        k = j
        if item:
            k = j + 1
            while k < e and self.low[k] == " ":
                k += 1
        return k - s, k, item

    def blank(self, line: tuple[int, int]) -> bool:
        s, e = self.body(line)
        rest = self.low[s:e].strip()
        return not rest or rest.startswith("#")


_KEY = re.compile(r"(?:- +)?(?P<key>\\*\"[^\"\\]*\\*\"|'[^']*'|[^\s:#\"'][^:#]*?)[ \t]*:(?:[ \t]+|$)")
_LINE_PREFIX = re.compile(r"(?:\d{4}-\d\d-\d\dt[\d:.]+(?:z|[+-]\d\d:?\d\d)? )? *(?:- +)?")
_FLOW_ENTRY = re.compile(r"[^{},:]+:[ \t]*([^,}]+)")
_BLOCK_SCALAR = frozenset({"|", ">", "|-", ">-", "|+", ">+"})


def _yaml_kind_secret(lines: _Lines, first: tuple[int, int], last: tuple[int, int], ind: int) -> bool:
    """Whether the mapping holding the key on line ``first`` (indentation ``ind``; its value runs to
    line ``last``) has ``kind: Secret``."""
    low = lines.low
    for step, start in ((-1, first), (1, last)):
        if step == -1 and lines.indent(first)[2]:
            continue  # the key opened the list item: nothing before it in this mapping
        line = start
        while True:
            nxt = lines.prev(line) if step == -1 else lines.next(line)
            if nxt is None:
                break
            line = nxt
            if lines.blank(line):
                continue
            s, e = lines.body(line)
            if low.startswith("---", s):
                break
            ki, ks, item = lines.indent(line)
            if ki < ind or (item and ki == ind and step == 1):
                break
            if ki == ind and low.startswith("kind", ks) and _KIND_SECRET.match(low, ks, e):
                return True
            if item and ki == ind:
                break
    return False


def _line_start(low: str, at: int) -> int:
    """Start of the line ``at`` is on (after a raw or escaped newline or a string's opening quote)."""
    j = at
    lo = max(0, at - 200)
    while j > lo:
        c = low[j - 1]
        if c in "\n\r\"" or (c == "n" and low[j - 2 : j - 1] == "\\"):
            break
        j -= 1
    return j


def _yaml_data(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """``data:`` / ``stringData:`` as a YAML key inside a Secret: every value under it."""
    if at > 0 and (low[at - 1].isalnum() or low[at - 1] in "_-.") and not (
            low[at - 1] == "n" and _newline_before(low, at) is not None):
        return ()  # metadata:, …_data: (but `\\ndata:` is a new line)
    p = _line_start(low, at)
    pm = _LINE_PREFIX.match(low, p, at)
    if pm is None or pm.end() != at:
        return ()  # not a key at the start of its line
    found = _newline_before(low, p)
    if found is None or not _secret_near(low, memo, 0, len(low)):
        return ()
    nl, b0 = found
    raw = b0 < 0  # raw newlines: plain text, never inside a JSON string
    lines = _Lines(low, nl, 0, len(low), memo, prefix=_TIMESTAMP.match(low, p, at) is not None)
    first = lines.line_from(p)
    ind, ks, _item = lines.indent(first)
    if ks != at:
        return ()
    _, e = lines.body(first)
    colon = low.find(":", at, e)
    rest = low[colon + 1 : e].strip()
    spans: list[Span] = []
    last = first
    if rest.startswith("{"):
        close = low.find("}", colon, e)
        if close < 0:
            return ()
        for m in _FLOW_ENTRY.finditer(low, low.find("{", colon, e) + 1, close):
            spans.append(Span(m.start(1), m.end(1), raw_quotes=raw))
    elif rest and not rest.startswith("#"):
        return ()
    else:
        entry = -1
        nxt = lines.next(first, charge=False)
        while nxt is not None:
            line = nxt
            # the block's own lines are not charged: each is read for its own value
            nxt = lines.next(line, charge=False)
            if lines.blank(line):
                continue
            ki, kstart, _ = lines.indent(line)
            if ki <= ind:
                break
            last = line
            _, le = lines.body(line)
            if entry < 0:
                entry = ki
            key = _KEY.match(low, kstart, le) if ki == entry else None
            if key is not None:
                value = low[key.end() : le].strip()
                if value and value not in _BLOCK_SCALAR:
                    spans.append(Span(key.end(), le, raw_quotes=raw))
            else:
                spans.append(Span(kstart, le, raw_quotes=raw))
    if spans and (_yaml_kind_secret(lines, first, last, ind) or memo.get("budget", 0) < 0):
        return spans
    return ()


BLOCK_RULES: tuple[Rule, ...] = (
    Rule("last_applied_configuration", "last-applied-configuration", _last_applied),
    Rule("secret_data_json", '"data', _json_data),
    Rule("secret_string_data_json", '"stringdata', _json_data),
    Rule("secret_data_yaml", "data:", _yaml_data),
    Rule("secret_string_data_yaml", "stringdata:", _yaml_data),
)
