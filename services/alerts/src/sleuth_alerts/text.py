"""Sender-provided strings (alert labels and annotations) as inert Markdown text.

Whoever can post to a route chooses every label and annotation; the bot's post must show them as
text, never as structure. ``plain`` makes any string one line of literal text for CommonMark
(the web chat) and Mattermost:

- control characters (C0, DEL, C1), format characters (bidi overrides and isolates, zero-width
  characters) and line/paragraph separators are removed or become spaces, so nothing reorders or
  hides text and no newline starts a heading, list, table or a forged "Root cause" line;
- runs of whitespace collapse to one space; the result is cut to ``limit`` characters ("…");
- every Markdown-special ASCII character is backslash-escaped (links, images, emphasis, code,
  HTML, headings, tables, strikethrough; ``&`` entities, ``:`` autolinks and emoji, ``$`` math
  in Mattermost), and ``@`` becomes a full-width ＠ so ``@channel``/``@here``/``@user`` notify
  nobody.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["plain"]

_SPECIALS = frozenset("\\`*_{}[]()#+-.!|<>~&:$")
# Cc (controls), Cf (format: bidi overrides and isolates, zero-width, soft hyphen, tags), Cs.
_DROP = frozenset(("Cc", "Cf", "Cs"))
_SPACE = re.compile(r"\s+")


def _visible(ch: str) -> str:
    if ch in "\t\n\r\f\v" or unicodedata.category(ch) in ("Zl", "Zp", "Zs"):
        return " "
    if unicodedata.category(ch) in _DROP:
        return ""
    return ch


def plain(value: object, limit: int = 200) -> str:
    """``value`` as one line of escaped Markdown text of at most ``limit`` visible characters."""
    text = "".join(_visible(ch) for ch in str(value)[: limit * 4 + 64])
    text = _SPACE.sub(" ", text).strip()
    if len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    return "".join("\\" + ch if ch in _SPECIALS else "＠" if ch == "@" else ch for ch in text)
