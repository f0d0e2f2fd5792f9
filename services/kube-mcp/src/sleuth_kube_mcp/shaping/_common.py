"""Small helpers shared by the shaping functions (pure: dicts in, dicts out)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleuth_common.k8s import SelectorError, as_label_selector, controller_ref, quantity_or_none

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
    ref = controller_ref({"metadata": meta})
    return {"kind": ref.kind, "name": ref.name} if ref else None


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
    """A LabelSelector (or a plain map, as in Service.spec.selector) as ``kubectl -l`` text, in
    the order written; None when there is none, it is empty or it is not valid."""
    if not selector:
        return None
    try:
        sel = as_label_selector(selector)
    except SelectorError:
        return None
    return (str(sel) if sel is not None else "") or None


parse_quantity = quantity_or_none
"""A Kubernetes quantity ("256Mi", "500m", "2") as a Decimal, or None when it is not one."""
