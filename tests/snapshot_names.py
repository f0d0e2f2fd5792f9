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


def _names_by_namespace(snapshot: Path) -> dict[str, set[str]]:
    by_ns: dict[str, set[str]] = {}
    for obj in _objects(snapshot):
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace")
        if not ns:
            continue
        names = by_ns.setdefault(str(ns), set())
        if obj.get("kind") == "Event":
            inv = obj.get("involvedObject") or {}
            if inv.get("name"):
                names.add(str(inv["name"]))
            continue
        if meta.get("name"):
            names.add(str(meta["name"]))
    logs = snapshot / "logs"
    if logs.is_dir():
        for ns_dir in logs.iterdir():
            if ns_dir.is_dir():
                by_ns.setdefault(ns_dir.name, set()).update(p.name for p in ns_dir.iterdir() if p.is_dir())
    return by_ns


def tenant_names(snapshot: Path, namespace: str) -> set[str]:
    """Object names that exist only in ``namespace`` (pods, workloads, configmaps, events'
    objects ...): a name shared with another namespace (``default``, ``kube-root-ca.crt``) tells
    nothing; names shorter than 4 characters are too generic to grep for."""
    by_ns = _names_by_namespace(snapshot)
    elsewhere = set().union(*(v for k, v in by_ns.items() if k != namespace)) if len(by_ns) > 1 else set()
    return {n for n in by_ns.get(namespace, set()) - elsewhere if len(n) >= 4 and n != namespace}
