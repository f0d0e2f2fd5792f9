"""Label selectors (`a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`) and field selectors."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


class SelectorError(ValueError):
    """A selector the API server would reject with 400 BadRequest."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label, as the API server does.
        return not present or labels[self.key] not in self.values


_TOKEN = re.compile(r"\s*(\(|\)|,|!=|==|=|!|[^\s(),=!]+)")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip():
                raise SelectorError(f"unable to parse requirement: {text!r}")
            break
        out.append(m.group(1))
        pos = m.end()
    return out


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """Parse a label selector; raise SelectorError the way the API server refuses bad ones."""
    toks = _tokens(text or "")
    reqs: list[Requirement] = []
    i = 0

    def take() -> str:
        nonlocal i
        if i >= len(toks):
            raise SelectorError(f"unable to parse requirement: found end of input in {text!r}")
        i += 1
        return toks[i - 1]

    while i < len(toks):
        tok = take()
        if tok == "!":
            reqs.append(Requirement(take(), "!"))
        elif tok in ("(", ")", ",", "=", "==", "!="):
            raise SelectorError(f"unable to parse requirement: unexpected {tok!r} in {text!r}")
        else:
            key = tok
            nxt = toks[i] if i < len(toks) else ","
            if nxt == ",":
                reqs.append(Requirement(key, "exists"))
            elif nxt in ("=", "==", "!="):
                i += 1
                value = toks[i] if i < len(toks) and toks[i] != "," else ""
                if value:
                    i += 1
                reqs.append(Requirement(key, "!=" if nxt == "!=" else "=", (value,)))
            elif nxt in ("in", "notin"):
                i += 1
                if take() != "(":
                    raise SelectorError(f"unable to parse requirement: expected '(' in {text!r}")
                values: list[str] = []
                while (tok := take()) != ")":
                    if tok != ",":
                        values.append(tok)
                reqs.append(Requirement(key, nxt, tuple(values)))
            else:
                raise SelectorError(f"unable to parse requirement: unexpected {nxt!r} in {text!r}")
        if i < len(toks):
            if toks[i] != ",":
                raise SelectorError(f"unable to parse requirement: expected ',' in {text!r}")
            i += 1
    return tuple(reqs)


def labels_match(reqs: tuple[Requirement, ...], obj: Obj) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


# -- field selectors ------------------------------------------------------------------------------

def _path(*keys: str) -> Callable[[Obj], str]:
    def get(obj: Obj) -> str:
        cur: Any = obj
        for k in keys:
            cur = cur.get(k) if isinstance(cur, dict) else None
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


_REF_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_FIELDS: dict[str, dict[str, Callable[[Obj], str]]] = {
    "pods": {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _path("spec", "hostNetwork"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "events": {
        **{f"involvedObject.{f}": _path("involvedObject", f) for f in _REF_FIELDS},
        **{f"regarding.{f}": _path("involvedObject", f) for f in _REF_FIELDS},
        "reason": _path("reason"),
        "type": _path("type"),
        "source": _path("source", "component"),
        "reportingComponent": _path("reportingComponent"),
        "reportingController": _path("reportingComponent"),
    },
    "nodes": {"spec.unschedulable": _path("spec", "unschedulable")},
    "secrets": {"type": _path("type")},
    "namespaces": {"status.phase": _path("status", "phase")},
    "replicasets": {"status.replicas": _path("status", "replicas")},
    "replicationcontrollers": {"status.replicas": _path("status", "replicas")},
    "jobs": {"status.successful": _path("status", "succeeded")},
    "services": {"spec.clusterIP": _path("spec", "clusterIP"), "spec.type": _path("spec", "type")},
}
_COMMON = {"metadata.name": _path("metadata", "name"), "metadata.namespace": _path("metadata", "namespace")}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool
    get: Callable[[Obj], str]

    def matches(self, obj: Obj) -> bool:
        return (self.get(obj) == self.value) != self.negate


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_field_selector(text: str, plural: str) -> tuple[FieldRequirement, ...]:
    """Parse `a=b,c!=d` for resource `plural`; unknown fields raise like the API server's."""
    reqs: list[FieldRequirement] = []
    known = {**_COMMON, **_FIELDS.get(plural, {})}
    for part in _split_unescaped(text or "", ","):
        if not part.strip():
            continue
        m = re.match(r"^(.*?)(!=|==|=)(.*)$", part)
        if m is None or "\\" in m.group(1):
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        name, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3))
        getter = known.get(name)
        if getter is None:
            raise SelectorError(f'"{name}" is not a known field selector: only "metadata.name", '
                                f'"metadata.namespace"' if plural not in _FIELDS
                                else f"field label not supported: {name}")
        reqs.append(FieldRequirement(name, value, op == "!=", getter))
    return tuple(reqs)


def fields_match(reqs: tuple[FieldRequirement, ...], obj: Obj) -> bool:
    return all(r.matches(obj) for r in reqs)
