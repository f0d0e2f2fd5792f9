"""`meta.k8s.io/v1` Table responses, with the columns kubectl's own printers produce.

Ages are taken at the snapshot's `now`, so `kubectl get pods` reads as it did when it was taken.
Columns with priority 1 are the ones `-o wide` adds. Per-kind printers live in `_printers.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ._printers import PRINTERS, Column
from ._timefmt import since

Obj = dict[str, Any]


def wants_table(accept: str) -> bool:
    return any("as=Table" in part and "g=meta.k8s.io" in part for part in accept.split(","))


def _column_definitions(columns: list[Column]) -> list[Obj]:
    return [
        {"name": c.name, "type": c.type, "format": c.format, "description": c.description, "priority": c.priority}
        for c in columns
    ]


def partial_metadata(obj: Obj) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def _default_row(obj: Obj, now: datetime) -> list[Any]:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), since(meta.get("creationTimestamp"), now)]


_DEFAULT: tuple[list[Column], Callable[[Obj, datetime], list[Any]]] = (
    [Column("Name", format="name", description="Name must be unique within a namespace."),
     Column("Age", description="CreationTimestamp is a timestamp representing the server time when "
                               "this object was created.")],
    _default_row,
)


def table(plural: str, objects: list[Obj], now: datetime, include_object: str = "Metadata",
          resource_version: str = "1", presented: list[Obj] | None = None) -> Obj:
    """A Table for `objects` of resource `plural` (stored form), rows in the same order.

    `presented` are the objects as the requested version serves them (for `includeObject=Object`).
    """
    columns, row_fn = PRINTERS.get(plural, _DEFAULT)
    rows = []
    for i, obj in enumerate(objects):
        row: Obj = {"cells": row_fn(obj, now)}
        if include_object == "Object":
            row["object"] = (presented or objects)[i]
        elif include_object != "None":
            row["object"] = partial_metadata(obj)
        phase = (obj.get("status") or {}).get("phase") if plural == "pods" else None
        if phase in ("Succeeded", "Failed"):
            row["conditions"] = [{"type": "Completed", "status": "True", "reason": phase,
                                  "message": "The pod has completed successfully." if phase == "Succeeded"
                                  else "The pod failed."}]
        rows.append(row)
    return {
        "kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": _column_definitions(columns),
        "rows": rows,
    }
