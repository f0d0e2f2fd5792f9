"""Names of a tenant's objects, read from a snapshot: what a leak test greps for."""

from __future__ import annotations

from pathlib import Path

import yaml


def _objects(snapshot: Path):
    for f in sorted((snapshot / "cluster").rglob("*")):
        if f.suffix not in {".yaml", ".yml", ".json"}:
            continue
        for doc in yaml.safe_load_all(f.read_text()):
            if not isinstance(doc, dict):
                continue
            if doc.get("kind", "").endswith("List") and isinstance(doc.get("items"), list):
                yield from (d for d in doc["items"] if isinstance(d, dict))
            else:
                yield doc


def tenant_names(snapshot: Path, namespace: str) -> set[str]:
    """Every object name in ``namespace`` (pods, workloads, configmaps, events' objects ...),
    the namespace itself excluded, names shorter than 4 characters excluded (too generic)."""
    names: set[str] = set()
    for obj in _objects(snapshot):
        meta = obj.get("metadata") or {}
        if meta.get("namespace") != namespace:
            continue
        if obj.get("kind") == "Event":
            inv = obj.get("involvedObject") or {}
            if inv.get("name"):
                names.add(str(inv["name"]))
            continue
        if meta.get("name"):
            names.add(str(meta["name"]))
    logs = snapshot / "logs" / namespace
    if logs.is_dir():
        names.update(p.name for p in logs.iterdir() if p.is_dir())
    return {n for n in names if len(n) >= 4 and n != namespace}
