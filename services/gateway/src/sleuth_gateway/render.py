"""Server-side Markdown → HTML for the web chat. Raw HTML in the source is escaped, never passed."""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt

__all__ = ["render_markdown"]


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


def render_markdown(text: str) -> str:
    return _md().render(text or "")
