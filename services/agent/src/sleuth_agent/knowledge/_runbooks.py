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

**Standing instructions** are the same documents with ``type: instruction``: a short rule (at most
:data:`MAX_INSTRUCTION` characters) given to the AI model on every run for the scope its
``namespace:``/``cluster:`` tags name, e.g. "in team-a, restarts of batch-* between 02:00 and 03:00
are the nightly job". One may also ``suppress`` — mark a finding as expected — and must then name
what it hides: the failure ``family``, and the ``workload`` (a glob) or the ``alert``; optionally a
time window ``between: "02:00-03:00"`` in ``timezone`` (IANA, default UTC)::

    ---
    title: Nightly batch restarts
    type: instruction
    tags: [namespace:team-a]
    suppress: {family: crash_loop_app_error, workload: "batch-*", between: "02:00-03:00", timezone: Europe/Berlin}
    ---
    In team-a, restarts of batch-* between 02:00 and 03:00 are the nightly job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

__all__ = ["MAX_INSTRUCTION", "TAG_KINDS", "Runbook", "RunbookError", "Suppression", "md_plain", "no_images",
           "parse_runbook"]

TAG_KINDS = frozenset({"alert", "family", "workload", "namespace", "cluster", "kind"})
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_TAG = re.compile(r"^(?:(?P<kind>[a-z]+):)?(?P<value>[A-Za-z0-9][A-Za-z0-9._/-]{0,252})$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_KEYS = frozenset({"title", "tags", "type", "suppress"})
_SUPPRESS_KEYS = frozenset({"family", "workload", "alert", "between", "timezone"})
_WINDOW = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")
_NAME = re.compile(r"^[A-Za-z0-9*?][A-Za-z0-9._*?-]{0,252}$")
MAX_INSTRUCTION = 1000
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_TITLE = 200
MAX_TAGS = 50


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")


def no_images(text: str) -> str:
    """Markdown images as their alt text: a runbook shown to a tenant never makes their browser or
    chat client fetch a URL (a tracking pixel)."""
    return _IMAGE.sub(lambda m: f"[image: {m[1]}]" if m[1] else "[image]", text)


def md_plain(text: str) -> str:
    """``text`` with every Markdown (and table) character escaped: a title shows as written, never as a
    link, an image, emphasis or extra table cells."""
    return _MARKDOWN.sub(r"\\\1", text)


class RunbookError(ValueError):
    """A document that is not a valid runbook; ``str(err)`` says why, for the person who sent it."""


@dataclass(frozen=True)
class Suppression:
    """What a standing instruction marks as expected: findings of ``family`` on a workload matching
    ``workload`` (a glob) or for the alert ``alert``, within ``between`` (minutes of the day in
    ``timezone``; ``None`` = all day)."""

    family: str
    workload: str = ""
    alert: str = ""
    between: tuple[int, int] | None = None
    timezone: str = "UTC"

    def describe(self) -> str:
        what = [f"`{self.family}`"]
        if self.workload:
            what.append(f"on workloads `{self.workload}`")
        if self.alert:
            what.append(f"for alert `{self.alert}`")
        if self.between is not None:
            (a, b) = self.between
            what.append(f"between {a // 60:02d}:{a % 60:02d} and {b // 60:02d}:{b % 60:02d} {self.timezone}")
        return " ".join(what)


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
    type: str = "runbook"
    """``runbook`` (linked in answers, searched) or ``instruction`` (a standing instruction)."""
    suppress: Suppression | None = None
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
        meta: dict[str, object] = {"title": self.title, "tags": list(self.tags)}
        if self.type != "runbook":
            meta["type"] = self.type
        if self.suppress is not None:
            sup = self.suppress
            fields = {k: v for k, v in (("family", sup.family), ("workload", sup.workload),
                                        ("alert", sup.alert), ("timezone", sup.timezone)) if v}
            if sup.between is not None:
                a, b = sup.between
                fields["between"] = f"{a // 60:02d}:{a % 60:02d}-{b // 60:02d}:{b % 60:02d}"
            meta["suppress"] = fields
        head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
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
        _no_duplicate_keys(yaml.compose(text[4:end], Loader=_LOADER))
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
    kind = meta.get("type", "runbook")
    if kind not in ("runbook", "instruction"):
        raise RunbookError("type: must be runbook or instruction")
    suppress = None
    if kind == "instruction":
        if len(body) > MAX_INSTRUCTION:
            raise RunbookError(f"a standing instruction is at most {MAX_INSTRUCTION} characters; this one has {len(body)}")
        if "suppress" in meta:
            suppress = _suppression(meta["suppress"])
    elif "suppress" in meta:
        raise RunbookError("suppress: belongs to a standing instruction (type: instruction)")
    return Runbook(id=id, title=title, tags=tags, body=body, source=source, updated=updated, type=kind,
                   suppress=suppress)


def _no_duplicate_keys(node: yaml.Node | None) -> None:
    """YAML lets a key repeat and keeps the last: a reviewer reading ``tags: [namespace:team-b]`` first
    would not see that a later ``tags:`` replaced it. Refused instead, at every level."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(getattr(key, "value", key))
            if name in seen:
                raise RunbookError(f"front matter key {name[:60]!r} is given twice")
            seen.add(name)
            _no_duplicate_keys(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _no_duplicate_keys(item)


def _suppression(raw: object) -> Suppression:
    if not isinstance(raw, dict):
        raise RunbookError("suppress: must be a mapping {family, workload or alert, between, timezone}")
    unknown = sorted(str(k) for k in raw if k not in _SUPPRESS_KEYS)
    if unknown:
        raise RunbookError(f"unknown suppress key(s): {', '.join(unknown)[:100]}")
    values = {k: raw.get(k) for k in _SUPPRESS_KEYS}
    for key in ("family", "workload", "alert"):
        v = values[key]
        if v is not None and (not isinstance(v, str) or not _NAME.match(v)):
            raise RunbookError(f"suppress.{key} must be a name or a glob, no spaces")
    family, workload, alert = (str(values[k] or "") for k in ("family", "workload", "alert"))
    if not family or "*" in family or "?" in family:
        raise RunbookError("suppress must name the failure family it hides (suppress.family, no wildcard)")
    if not workload and not alert:
        raise RunbookError("suppress must name what it hides: suppress.workload (a glob) or suppress.alert")
    if workload and sum(c.isalnum() for c in workload) < 3:
        raise RunbookError("suppress.workload must name workloads (at least 3 letters or digits, e.g. batch-*), "
                           "not match nearly every one")
    between = None
    if values["between"] is not None:
        m = _WINDOW.match(str(values["between"]))
        if not m:
            raise RunbookError('suppress.between must be "HH:MM-HH:MM"')
        between = (int(m[1]) * 60 + int(m[2]), int(m[3]) * 60 + int(m[4]))
    tz = str(values["timezone"] or "UTC")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise RunbookError(f"unknown timezone {tz[:60]!r}") from None
    return Suppression(family.lower(), workload.lower(), alert.lower(), between, tz)


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
