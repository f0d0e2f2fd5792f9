"""A runbook: Markdown with YAML front matter, parsed strictly.

```markdown
---
title: Postgres disk full
tags: [alert:PostgresDiskFull, family:disk_full, workload:postgres, namespace:team-a]
---
1. Check the volume: `kubectl -n team-a exec postgres-0 -- df -h /var/lib/postgresql`
2. ...
```

Tags are ``kind:value`` (kinds in :data:`TAG_KINDS`) or a bare word. ``namespace:`` and ``cluster:``
tags limit who sees the runbook (:class:`~sleuth_agent.knowledge.Visibility`); the others are what it
is about. Everything that is not exactly this is refused with the reason: a missing or unreadable
front matter, an unknown key, a title or tag of the wrong shape, an empty body, a document over
``max_bytes``, control characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

__all__ = ["TAG_KINDS", "Runbook", "RunbookError", "parse_runbook"]

TAG_KINDS = frozenset({"alert", "family", "workload", "namespace", "cluster", "kind"})
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_TAG = re.compile(r"^(?:(?P<kind>[a-z]+):)?(?P<value>[A-Za-z0-9][A-Za-z0-9._/-]{0,252})$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_KEYS = frozenset({"title", "tags"})
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_TITLE = 200
MAX_TAGS = 50


class RunbookError(ValueError):
    """A document that is not a valid runbook; ``str(err)`` says why, for the person who sent it."""


@dataclass(frozen=True)
class Runbook:
    id: str
    title: str
    tags: tuple[str, ...]
    """Normalised: ``kind:value`` with the kind lower-case; alert names keep their case elsewhere but
    compare case-insensitively, so every tag is stored lower-case."""
    body: str
    source: str = ""
    """Where it came from: ``dir:<file>``, ``chat:<user>`` …"""
    updated: float = 0.0
    _by_kind: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    def tagged(self, kind: str) -> tuple[str, ...]:
        """The values of this runbook's ``kind:`` tags."""
        if not self._by_kind:
            by: dict[str, list[str]] = {}
            for tag in self.tags:
                k, sep, v = tag.partition(":")
                if sep:
                    by.setdefault(k, []).append(v)
            object.__setattr__(self, "_by_kind", {k: tuple(v) for k, v in by.items()} or {"": ()})
        return self._by_kind.get(kind, ())

    def to_text(self) -> str:
        """The document as it would be written to a file (round-trips through :func:`parse_runbook`)."""
        head = yaml.safe_dump({"title": self.title, "tags": list(self.tags)}, sort_keys=False, allow_unicode=True)
        return f"---\n{head}---\n{self.body}\n"


def parse_runbook(text: str, *, id: str, source: str = "", max_bytes: int = 65_536, updated: float = 0.0) -> Runbook:
    """The runbook in ``text``, or :class:`RunbookError` saying what is wrong with it."""
    if not _ID.match(id):
        raise RunbookError(f"invalid id {id[:70]!r}: use lower-case letters, digits and '-', at most 63")
    size = len(text.encode("utf-8", "replace"))
    if size > max_bytes:
        raise RunbookError(f"too big: {size} bytes, at most {max_bytes}")
    text = text.replace("\r\n", "\n")
    if _CONTROL.search(text):
        raise RunbookError("contains control characters")
    if not text.startswith("---\n"):
        raise RunbookError("no front matter: start with a line '---', then title: and tags:, then '---'")
    end = text.find("\n---\n", 3)
    if end < 0:
        if text.rstrip().endswith("\n---"):
            end = len(text.rstrip()) - 4
        else:
            raise RunbookError("front matter is not closed by a line '---'")
    try:
        meta = yaml.load(text[4:end], Loader=_LOADER)  # a safe loader (libyaml's when present)
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        raise RunbookError(f"front matter is not valid YAML{line}") from None
    if not isinstance(meta, dict):
        raise RunbookError("front matter must be a mapping with title: and tags:")
    unknown = sorted(str(k) for k in meta if k not in _KEYS)
    if unknown:
        raise RunbookError(f"unknown front matter key(s): {', '.join(unknown)[:100]} (only title, tags)")
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        raise RunbookError("title: is missing or empty")
    title = " ".join(title.split())
    if len(title) > MAX_TITLE:
        raise RunbookError(f"title is longer than {MAX_TITLE} characters")
    tags = _tags(meta.get("tags", []))
    body = text[end + 5:].strip("\n") if end + 5 <= len(text) else ""
    if not body.strip():
        raise RunbookError("the body is empty")
    return Runbook(id=id, title=title, tags=tags, body=body, source=source, updated=updated)


def _tags(raw: object) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RunbookError("tags: must be a list, e.g. [alert:KubePodCrashLooping, namespace:team-a]")
    if len(raw) > MAX_TAGS:
        raise RunbookError(f"more than {MAX_TAGS} tags")
    out: list[str] = []
    for tag in raw:
        if not isinstance(tag, str) or not (m := _TAG.match(tag.strip())):
            raise RunbookError(f"invalid tag {str(tag)[:70]!r}: kind:value or a word, no spaces")
        kind = m["kind"]
        if kind is not None and kind not in TAG_KINDS:
            raise RunbookError(f"unknown tag kind {kind!r} (known: {', '.join(sorted(TAG_KINDS))})")
        out.append(f"{kind}:{m['value']}".lower() if kind else m["value"].lower())
    return tuple(dict.fromkeys(out))
