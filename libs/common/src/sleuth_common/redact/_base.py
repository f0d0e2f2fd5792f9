"""What a redaction rule is: a lower-case literal that must occur where it applies (its trigger),
and a finder that, given the place the trigger was found, returns the spans to replace.

Finders see the original text and a lower-cased copy of the same length (only ASCII letters
differ). They look at a bounded neighbourhood of the trigger, so the work is linear in the number
of places a trigger occurs, never in the length of the text times the number of rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["Finder", "Memo", "Rule", "Span", "json_like", "looks_random", "regex_rule"]


class Span(NamedTuple):
    """``text[start:end]`` is replaced. ``wrap``: quote token put around the placeholder (a JSON
    number or literal under a secret key becomes a JSON string). ``raw_quotes``: the span may hold
    raw quotes (it was found in raw-newline YAML, which is never inside a JSON string)."""

    start: int
    end: int
    wrap: str = ""
    raw_quotes: bool = False


Memo = dict[str, Any]
"""Per-call state shared by the finders of one ``redact_text`` call (caches, a work budget)."""

Finder = Callable[[str, str, int, Memo], Sequence[Span]]


@dataclass(frozen=True)
class Rule:
    name: str
    trigger: str  # lower-case literal the finder is called for
    find: Finder


def regex_rule(name: str, trigger: str, rest: str, group: int | str = 0,
               check: Callable[[str, str, re.Match[str]], bool] | None = None) -> Rule:
    """A rule whose span is ``group`` of ``trigger + rest`` matched (on the lower-cased text) where
    the trigger was found, kept when ``check(text, low, match)`` agrees."""
    pattern = re.compile(re.escape(trigger) + rest)

    def find(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
        m = pattern.match(low, at)
        if m is None or (check is not None and not check(text, low, m)):
            return ()
        s0, s1 = m.span(group)
        return (Span(s0, s1),) if s0 < s1 else ()

    return Rule(name, trigger, find)


def looks_random(value: str) -> bool:
    """A value with a digit, mixed case, or 32+ characters: a generated secret rather than a word
    (``Bearer authentication required`` is English, ``Bearer swzHJMyPu0…`` is not)."""
    if any(c.isdigit() for c in value):
        return True
    if len(value) >= 32:
        return True
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and not value.istitle()


_JSON_START = re.compile(r"\s*(?:\{\s*[\"}]|\[\s*(?:[\"{\[\]\-0-9]|true|false|null))")


def json_like(low: str) -> bool:
    """Whether the text is a JSON document (not a TOML ``[table]`` or an INI ``[section]``): there,
    a raw quote always opens or closes a string."""
    return _JSON_START.match(low) is not None
