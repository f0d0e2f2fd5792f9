"""Text in and out of Mattermost: the bot's mention, answers in Mattermost's Markdown, and
answers over the post limit split into numbered posts."""

from __future__ import annotations

import re

__all__ = ["for_mattermost", "mentions", "split_post", "without_mention"]

_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_EVIDENCE_REF = re.compile(r"\[(E\d{1,4})\]")
_FENCE = "```"
_NUMBER_ROOM = 16  # "*(12/12)*\n\n"


def _mention(username: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w@.\-])@{re.escape(username)}(?![\w\-]|\.\w)", re.IGNORECASE)


def mentions(text: str, username: str) -> bool:
    """Whether ``text`` names ``@username`` outside code (for posts that carry no mention list:
    those of other bots and integrations)."""
    return bool(username) and bool(_mention(username).search(_CODE.sub(" ", text)))


def without_mention(text: str, username: str) -> str:
    """``text`` without ``@username`` (the question left when the bot is addressed)."""
    if not username:
        return text.strip()
    return re.sub(r"[ \t]{2,}", " ", _mention(username).sub(" ", text)).strip(" \t,:")


def for_mattermost(markdown: str) -> str:
    """An answer as Mattermost renders it best: evidence references such as ``[E01]`` (which
    Mattermost would leave as bracketed text) as code spans, outside existing code."""
    out, last = [], 0
    for m in _CODE.finditer(markdown):
        out.append(_EVIDENCE_REF.sub(r"`\1`", markdown[last : m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_EVIDENCE_REF.sub(r"`\1`", markdown[last:]))
    return "".join(out)


def _pieces(text: str, limit: int) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` characters: at paragraphs, else lines, else
    anywhere; a piece that ends inside a code fence closes it and the next one reopens it."""
    chunks: list[str] = []
    current = ""
    for para in re.split(r"(?<=\n\n)", text):
        if len(current) + len(para) <= limit:
            current += para
            continue
        if current:
            chunks.append(current)
            current = ""
        while len(para) > limit:
            cut = para.rfind("\n", 0, limit)
            cut = cut + 1 if cut > limit // 2 else max(limit, 1)
            chunks.append(para[:cut])
            para = para[cut:]
        current = para
    if current:
        chunks.append(current)
    fixed: list[str] = []
    carry = ""
    for chunk in chunks:
        chunk = carry + chunk
        carry = ""
        if chunk.count(_FENCE) % 2:
            opening = chunk[chunk.rfind(_FENCE) :].split("\n", 1)[0][:24]
            chunk = chunk.rstrip("\n") + "\n" + _FENCE + "\n"
            carry = opening + "\n"
        fixed.append(chunk.strip("\n"))
    return [c for c in fixed if c.strip()]


def split_post(text: str, limit: int) -> list[str]:
    """``text`` as one post, or numbered posts (``*(1/3)*``) of at most ``limit`` characters."""
    if len(text) <= limit:
        return [text]
    # Room for the number, and for a code fence closed and reopened at a cut (at most half of
    # a very small limit).
    room = min(_NUMBER_ROOM + 2 * (len(_FENCE) + 24), limit // 2)
    pieces = _pieces(text, max(limit - room, 1))
    n = len(pieces)
    return [f"*({i}/{n})*\n\n{p}" for i, p in enumerate(pieces, 1)]
