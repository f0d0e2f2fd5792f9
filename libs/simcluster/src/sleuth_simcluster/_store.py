"""Objects of a snapshot, indexed by storage key, namespace and name at load time."""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from sleuth_common.k8s import parse_time

from ._convert import event_to_core, hpa_v1_to_v2
from ._registry import RESOURCES, preferred, storage_for

log = logging.getLogger(__name__)

Obj = dict[str, Any]
StorageKey = tuple[str, str]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UID_NAMESPACE = uuid.UUID("6f1d2c1e-5b0a-4d39-9a6e-2f1bb1a0c0de")


class Store:
    """Read-only object store: `get` and `list` are dictionary look-ups."""

    def __init__(self) -> None:
        self._objects: dict[StorageKey, dict[tuple[str, str], Obj]] = defaultdict(dict)
        self._by_ns: dict[StorageKey, dict[str, list[Obj]]] = defaultdict(lambda: defaultdict(list))
        self.skipped: list[str] = []
        self._sealed = False

    # -- loading -----------------------------------------------------------------------------
    def add(self, obj: Obj, origin: str = "") -> bool:
        """Store one object; answers False (and remembers why) for kinds simcluster does not serve."""
        kind = obj.get("kind")
        api_version = obj.get("apiVersion", "")
        meta = obj.get("metadata")
        if not isinstance(kind, str) or not isinstance(meta, dict) or not meta.get("name"):
            self.skipped.append(f"{origin}: not a Kubernetes object")
            return False
        key = storage_for(str(api_version), kind)
        if key is None:
            self.skipped.append(f"{origin}: {api_version} {kind} is not served")
            return False
        res = preferred(key)
        if key == ("", "events") and str(api_version).startswith("events.k8s.io/"):
            obj = event_to_core(obj)
            meta = obj["metadata"]
        elif key == ("autoscaling", "horizontalpodautoscalers") and api_version == "autoscaling/v1":
            obj = hpa_v1_to_v2(obj)
            meta = obj["metadata"]
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        if res.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        ns, name = meta.get("namespace", ""), meta["name"]
        meta.setdefault("uid", str(uuid.uuid5(_UID_NAMESPACE, f"{key}/{ns}/{name}")))
        meta.setdefault("resourceVersion", "1")
        existing = self._objects[key].get((ns, name))
        if existing is not None:
            self._by_ns[key][ns].remove(existing)
        self._objects[key][(ns, name)] = obj
        self._by_ns[key][ns].append(obj)
        return True

    def seal(self) -> None:
        """Finish loading: namespaces for every namespace used, event uids, stable ordering."""
        used = {ns for key, by_ns in self._by_ns.items() for ns, objs in by_ns.items() if ns and objs}
        stamps = [o["metadata"]["creationTimestamp"] for objs in self._objects.values() for o in objs.values()
                  if isinstance(o["metadata"].get("creationTimestamp"), str)]
        oldest = {"creationTimestamp": min(stamps, key=lambda t: parse_time(t) or _EPOCH)} if stamps else {}
        for ns in sorted(used | {"default"}):
            if ("", ns) not in self._objects[("", "namespaces")]:
                # a namespace the snapshot left out: as old as the oldest object, so AGE reads sensibly
                self.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, **oldest},
                          "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        for event in self.list(("", "events")):
            ref = event.get("involvedObject")
            if isinstance(ref, dict) and not ref.get("uid") and ref.get("kind") and ref.get("name"):
                target = self.find(ref.get("apiVersion", ""), ref["kind"], ref.get("namespace", ""), ref["name"])
                if target is not None:
                    ref["uid"] = target["metadata"]["uid"]
        for by_ns in self._by_ns.values():
            for objs in by_ns.values():
                objs.sort(key=lambda o: o["metadata"]["name"])
        self._sealed = True

    # -- reading -----------------------------------------------------------------------------
    def get(self, key: StorageKey, namespace: str, name: str) -> Obj | None:
        return self._objects.get(key, {}).get((namespace, name))

    def list(self, key: StorageKey, namespace: str | None = None) -> list[Obj]:
        """Objects of one storage key, in one namespace or all (sorted by namespace then name)."""
        by_ns = self._by_ns.get(key)
        if not by_ns:
            return []
        if namespace is not None:
            return list(by_ns.get(namespace, ()))
        out: list[Obj] = []
        for ns in sorted(by_ns):
            out.extend(by_ns[ns])
        return out

    def find(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        """An object by apiVersion (may be empty) and kind, as a reference names it."""
        keys: Iterable[StorageKey]
        key = storage_for(api_version, kind) if api_version else None
        if key is not None:
            keys = (key,)
        else:
            keys = {r.storage for r in RESOURCES.values() if r.kind == kind}
        for k in keys:
            ns = namespace if preferred(k).namespaced else ""
            obj = self.get(k, ns, name)
            if obj is not None:
                return obj
        return None

    def objects(self) -> Iterator[Obj]:
        """Every stored object, in no particular order."""
        for by_key in self._objects.values():
            yield from by_key.values()

    def count(self) -> int:
        return sum(len(v) for v in self._objects.values())
