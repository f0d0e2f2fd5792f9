"""Steps 2 and 3 of the scope filter: drop foreign records from a result, or withhold it
(DESIGN §2). Reports counts, never names.

What names a namespace, at any depth:
- a key containing ``namespace`` (not ``...selector``) with a string value, or a list of strings;
- map keys under a key such as ``namespaces`` / ``by_namespace`` (``{"team-a": {...}}``);
- ``ns/name`` strings whose ``ns`` is a namespace the same document names elsewhere.
Kubernetes ``metadata.namespace`` and ``involvedObject.namespace`` are covered by the first rule
because a record's nested objects count as part of the record.

A *record* is an element of a list. A record naming any namespace outside scope is dropped,
together with everything inside it; lists nested in a record are records of their own and are
filtered one by one. A top-level document (a JSON object) whose own fields name a foreign
namespace is withheld whole.

Growth points for the full filter (later issue): IP resolution, peer-shaped records,
``filter_bytes`` budgets per server, redaction and data markers.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sleuth_common.scope._model import FilterOutcome, Scope

__all__ = ["filter_data", "filter_result"]

_NS_REF = re.compile(r"^([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)/[A-Za-z0-9][-A-Za-z0-9_.:]*$")

NARROW_MESSAGE = (
    "This result was withheld: it is unstructured text from a call that was not limited to your "
    "namespaces, so it cannot be checked. Narrow the query with a namespace argument ({scope})."
)


def _is_ns_key(key: str) -> bool:
    k = key.lower()
    return "namespace" in k and not k.endswith("selector")


def _is_ns_map_key(key: str) -> bool:
    k = key.lower()
    return k.endswith("namespaces") or k.startswith(("by_namespace", "per_namespace", "bynamespace"))


class _Walker:
    def __init__(self, scope: Scope, known_foreign: frozenset[str]) -> None:
        self.scope = scope
        self.known_foreign = known_foreign
        self.removed = 0

    # -- does a value (outside its nested lists) name a foreign namespace? ----------------------
    def names_foreign(self, node: Any) -> bool:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, str) and _is_ns_key(key):
                    if isinstance(value, str) and value and not self.scope.allows(value):
                        return True
                if isinstance(value, dict) and self.names_foreign(value):
                    return True
                if isinstance(value, str) and self._foreign_ref(value):
                    return True
            return False
        if isinstance(node, str):
            return self._foreign_ref(node)
        return False

    def _foreign_ref(self, text: str) -> bool:
        if not self.known_foreign or "/" not in text:
            return False
        m = _NS_REF.match(text)
        return bool(m and m.group(1) in self.known_foreign)

    # -- rebuild a value without foreign records ----------------------------------------------
    def clean(self, node: Any, key: str = "") -> Any:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for k, v in node.items():
                if isinstance(k, str) and isinstance(v, dict) and _is_ns_map_key(k):
                    kept = {}
                    for nk, nv in v.items():
                        if self.scope.allows(nk):
                            kept[nk] = self.clean(nv)
                        else:
                            self.removed += 1
                    out[k] = kept
                else:
                    out[k] = self.clean(v, k)
            return out
        if isinstance(node, list):
            ns_list = bool(key) and _is_ns_key(key)
            items = []
            for item in node:
                if ns_list and isinstance(item, str):
                    foreign = bool(item) and not self.scope.allows(item)
                else:
                    foreign = self.names_foreign(item)
                if foreign:
                    self.removed += 1
                else:
                    items.append(self.clean(item))
            return items
        return node


def _namespaces_named(node: Any, found: set[str]) -> None:
    """Every namespace a document names under a namespace key or map, at any depth."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            for k, v in cur.items():
                if isinstance(k, str) and _is_ns_key(k):
                    if isinstance(v, str) and v:
                        found.add(v)
                    elif isinstance(v, list):
                        found.update(x for x in v if isinstance(x, str) and x)
                if isinstance(k, str) and isinstance(v, dict) and _is_ns_map_key(k):
                    found.update(x for x in v if isinstance(x, str))
                if isinstance(v, dict | list):
                    stack.append(v)
        elif isinstance(cur, list):
            stack.extend(x for x in cur if isinstance(x, dict | list))


def filter_data(data: Any, scope: Scope) -> FilterOutcome:
    """Filter already-parsed JSON (see the module docstring)."""
    if scope.cluster_wide:
        return FilterOutcome("kept", data, 0, "")
    named: set[str] = set()
    _namespaces_named(data, named)
    foreign = frozenset(ns for ns in named if not scope.allows(ns))
    if not foreign:
        return FilterOutcome("kept", data, 0, "")
    walker = _Walker(scope, foreign)
    if isinstance(data, dict) and walker.names_foreign(data):
        return FilterOutcome(
            "withheld", None, 0, "the result is about a namespace outside your access and was withheld"
        )
    cleaned = walker.clean(data)
    if walker.removed:
        plural = "s" if walker.removed != 1 else ""
        return FilterOutcome(
            "filtered",
            cleaned,
            walker.removed,
            f"{walker.removed} record{plural} from namespaces outside your access removed",
        )
    return FilterOutcome("kept", cleaned, 0, "")


def filter_result(
    text: str | bytes, scope: Scope, *, pinned: bool = False, max_bytes: int | None = None
) -> FilterOutcome:
    """Filter one tool result for ``scope``.

    ``pinned``: the call's arguments limited it to namespaces in scope (see
    ``pinned_by_arguments``); only then may unstructured text pass. ``max_bytes``: results larger
    than this are withheld as too large to check (fail closed).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if max_bytes is not None and len(text) > max_bytes and not scope.cluster_wide:
        return FilterOutcome(
            "withheld", None, 0, f"the result is larger than {max_bytes} bytes; narrow the query"
        )
    try:
        data = json.loads(text)
    except ValueError:
        if scope.cluster_wide or pinned:
            return FilterOutcome("kept", text, 0, "")
        return FilterOutcome("withheld", None, 0, NARROW_MESSAGE.format(scope=scope.describe()))
    return filter_data(data, scope)
