"""Small helpers shared by the shaping functions (pure: dicts in, dicts out)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = [
    "compact",
    "conditions",
    "owner",
    "parse_quantity",
    "selector_string",
]


def compact(d: Mapping[str, Any]) -> dict[str, Any]:
    """Drop keys whose value is None (keeps False, 0 and empty strings that mean something)."""
    return {k: v for k, v in d.items() if v is not None}


def owner(meta: Mapping[str, Any]) -> dict[str, str] | None:
    """The controlling owner (``{"kind", "name"}``), or the first owner, or None."""
    refs = meta.get("ownerReferences") or []
    if not refs:
        return None
    ref = next((r for r in refs if r.get("controller")), refs[0])
    return {"kind": str(ref.get("kind", "")), "name": str(ref.get("name", ""))}


def conditions(items: list[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for c in items or []:
        out.append(
            compact(
                {
                    "type": c.get("type"),
                    "status": c.get("status"),
                    "reason": c.get("reason") or None,
                    "message": c.get("message") or None,
                    "last_transition": c.get("lastTransitionTime") or c.get("lastUpdateTime"),
                }
            )
        )
    return out


def selector_string(selector: Mapping[str, Any] | None) -> str | None:
    """A LabelSelector (or a plain map, as in Service.spec.selector) as ``kubectl -l`` text."""
    if not selector:
        return None
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        return ",".join(f"{k}={v}" for k, v in selector.items()) or None
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or None


_QTY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def parse_quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity ("256Mi", "500m", "2") as a number, or None when it is not one."""
    if isinstance(value, int | float):
        return Decimal(str(value))
    m = _QTY.match(str(value or "").strip())
    if not m or m.group(2) not in _SUFFIX:
        return None
    try:
        return Decimal(m.group(1)) * _SUFFIX[m.group(2)]
    except InvalidOperation:
        return None
