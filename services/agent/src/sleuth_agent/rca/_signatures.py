"""The signature catalog (``signatures.yaml``) and its matcher over typed observations."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from sleuth_agent.rca._observe import Facts
from sleuth_common.messages.jobs import Confidence

__all__ = ["Match", "Signature", "load_catalog", "match_all", "match_facts"]

_CONFIDENCES: tuple[Confidence, ...] = ("high", "medium", "low")


@dataclass(frozen=True)
class Signature:
    family: str
    match: Mapping[str, Any]
    confidence: Any = "medium"
    extract: Mapping[str, Any] = field(default_factory=dict)
    summary: str = ""
    actions: tuple[Mapping[str, str], ...] = ()


@dataclass(frozen=True)
class Match:
    signature: Signature
    confidence: Confidence
    variables: dict[str, str]


@functools.cache
def load_catalog(path: str | None = None) -> tuple[Signature, ...]:
    """Load the catalog (the packaged ``signatures.yaml`` unless ``path`` is given)."""
    if path:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = resources.files("sleuth_agent.rca").joinpath("signatures.yaml").read_text(encoding="utf-8")
    doc = yaml.safe_load(text) or {}
    out = []
    for raw in doc.get("signatures") or []:
        out.append(
            Signature(
                family=raw["family"],
                match=raw["match"],
                confidence=raw.get("confidence", "medium"),
                extract=raw.get("extract") or {},
                summary=" ".join(str(raw.get("summary", "")).split()),
                actions=tuple(raw.get("actions") or ()),
            )
        )
    return tuple(out)


def _search(pattern: str, values: Iterable[str]) -> str | None:
    rx = re.compile(pattern, re.IGNORECASE)
    for v in values:
        if rx.search(v):
            return v
    return None


def holds(matcher: Mapping[str, Any], facts: Facts) -> bool:
    """True when every key of ``matcher`` holds for ``facts``."""
    for key, arg in matcher.items():
        if key == "any":
            ok = any(holds(m, facts) for m in arg)
        elif key == "all":
            ok = all(holds(m, facts) for m in arg)
        elif key == "not":
            ok = not holds(arg, facts)
        elif key == "exit_code":
            ok = any(c in arg for c in facts.exit_codes)
        elif key == "exit_code_not":
            ok = any(c not in arg for c in facts.exit_codes)
        elif key == "restarts_at_least":
            ok = facts.max_restarts >= int(arg)
        elif key == "init_failed":
            ok = facts.init_failed == bool(arg)
        elif key in (
            "waiting_reason",
            "termination_reason",
            "last_termination_reason",
            "phase",
            "event_reason",
            "pod_reason",
            "workload_kind",
        ):
            ok = any(v in arg for v in facts.values(key))
        elif key in (
            "event_message",
            "waiting_message",
            "condition_message",
            "log",
            "exception",
            "termination_message",
            "pod_message",
            "workload_condition",
            "alert",
        ) or key.startswith("derived."):
            ok = _search(str(arg), facts.values(key)) is not None
        else:
            raise ValueError(f"unknown matcher key {key!r} in the signature catalog")
        if not ok:
            return False
    return True


def _level(value: object) -> Confidence:
    """A catalog's confidence word; anything else reads as ``medium``."""
    return next((level for level in _CONFIDENCES if value == level), "medium")


def _confidence(spec: Any, facts: Facts) -> Confidence:
    if isinstance(spec, str):
        return _level(spec)
    if "low_if" in spec and holds(spec["low_if"], facts):
        return "low"  # a contradiction holds the signature at low, whatever else agrees
    if "high_if" in spec and holds(spec["high_if"], facts):
        return "high"
    return _level(spec.get("base", "medium"))


def _extract(spec: Mapping[str, Any], facts: Facts) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, rule in spec.items():
        sources = rule.get("from") or []
        sources = [sources] if isinstance(sources, str) else list(sources)
        rx = re.compile(rule["regex"], re.IGNORECASE)
        for source in sources:
            for value in facts.values(source):
                m = rx.search(value)
                if m:
                    # One line in the answer, whatever the message's own line breaks.
                    out[name] = " ".join((m.group(1) if m.groups() and m.group(1) else m.group(0)).split())
                    break
            if name in out:
                break
    return out


def match_facts(facts: Facts, catalog: Iterable[Signature] | None = None) -> Match | None:
    """The first signature that matches, with its confidence and variables."""
    found = match_all(facts, catalog)
    return found[0] if found else None


def match_all(facts: Facts, catalog: Iterable[Signature] | None = None) -> list[Match]:
    """Every matching signature in catalog order, one per family (the first of each family)."""
    out: list[Match] = []
    families: set[str] = set()
    for sig in catalog if catalog is not None else load_catalog():
        if sig.family in families:
            continue
        if holds(sig.match, facts):
            families.add(sig.family)
            out.append(Match(sig, _confidence(sig.confidence, facts), _extract(sig.extract, facts)))
    return out
