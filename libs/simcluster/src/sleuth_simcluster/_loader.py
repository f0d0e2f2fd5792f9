"""Reading a snapshot directory (DESIGN §4) or a `kubectl cluster-info dump --output-directory`."""

from __future__ import annotations

import json
import logging
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ._identities import add_sleuth_identities
from ._store import Store
from ._timefmt import parse_time

log = logging.getLogger(__name__)

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """Safe YAML that keeps timestamps as the strings Kubernetes objects carry."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}

_OBJECT_SUFFIXES = (".yaml", ".yml", ".json")
_DUMP_SECTION = re.compile(r"^==== (START|END) logs for container (\S+) of pod (\S+)/(\S+) ====$")
_EVENT_TIMES = ("lastTimestamp", "eventTime", "firstTimestamp")
_CONDITION_TIMES = ("lastTransitionTime", "lastUpdateTime", "lastProbeTime", "lastHeartbeatTime")
_STATUS_TIMES = ("startTime", "completionTime")
_CONTAINER_STATUSES = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
_LOG_TAIL_BYTES = 64 * 1024


class SnapshotError(ValueError):
    """The snapshot directory cannot be served."""


@dataclass(frozen=True)
class User:
    """An identity: a snapshot user (with its bearer token), or the one a request impersonates
    (no token; ``uid`` and ``extra`` only ever come from ``Impersonate-Uid`` / ``Impersonate-Extra-*``)."""

    name: str
    groups: tuple[str, ...]
    token: str
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass
class Logs:
    """Container logs by (namespace, pod, container, previous): a file path or text, read lazily."""

    sources: dict[tuple[str, str, str, bool], Path | str] = field(default_factory=dict)

    def text(self, namespace: str, pod: str, container: str, previous: bool) -> str | None:
        src = self.sources.get((namespace, pod, container, previous))
        if src is None:
            return None
        return src.read_text(encoding="utf-8", errors="replace") if isinstance(src, Path) else src


@dataclass
class Snapshot:
    name: str
    cluster_name: str
    aliases: tuple[str, ...]
    now: datetime
    users: dict[str, User]
    store: Store
    logs: Logs
    description: str = ""

    def user_by_token(self, token: str) -> User | None:
        for user in self.users.values():
            if secrets.compare_digest(user.token.encode(), token.encode()):
                return user
        return None


def parse_documents(text: str, suffix: str) -> list[Any]:
    """Every document of a YAML or JSON file (JSON is YAML, but the JSON parser is much faster)."""
    if suffix == ".json":
        try:
            return [json.loads(text)]
        except json.JSONDecodeError:
            pass
    return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]


def flatten(doc: Any) -> list[dict[str, Any]]:
    """Objects in one document: itself, or the items of a `List` / `*List` (typed items get their kind)."""
    if not isinstance(doc, dict):
        return []
    kind = doc.get("kind")
    items = doc.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        item_kind = kind[: -len("List")] if kind != "List" else None
        out: list[dict[str, Any]] = []
        for item in items:
            if isinstance(item, dict):
                if item_kind and "kind" not in item:
                    item = {"apiVersion": doc.get("apiVersion", "v1"), "kind": item_kind, **item}
                out.extend(flatten(item))
        return out
    return [doc]


def _load_objects(store: Store, root: Path, skip_dirs: set[Path]) -> None:
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in _OBJECT_SUFFIXES:
            continue
        if any(d in path.parents for d in skip_dirs) or path.name in ("snapshot.yaml", "scenario.yaml"):
            continue
        try:
            docs = parse_documents(path.read_text(encoding="utf-8"), path.suffix)
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise SnapshotError(f"{path}: {exc}") from exc
        for doc in docs:
            for obj in flatten(doc):
                store.add(obj, origin=str(path.relative_to(root)))


def _load_logs(logs: Logs, root: Path) -> None:
    for path in sorted(root.glob("*/*/*.log")):
        ns, pod = path.parent.parent.name, path.parent.name
        name = path.name[: -len(".log")]
        previous = name.endswith(".previous")
        container = name[: -len(".previous")] if previous else name
        logs.sources[(ns, pod, container, previous)] = path


def _served_last_terminated(pod: dict[str, Any] | None, container: str) -> bool:
    """Whether the kubelet answered `kubectl logs` (no --previous) for this container with the logs
    of its last terminated instance (`lastState.terminated`): a container in CrashLoopBackOff has
    no running instance, so what the dump holds is also what `--previous` would have shown."""
    status = (pod or {}).get("status") or {}
    for key in _CONTAINER_STATUSES:
        for cs in status.get(key) or ():
            if not isinstance(cs, dict) or cs.get("name") != container:
                continue
            state, last = cs.get("state") or {}, cs.get("lastState") or {}
            if "running" in state or not last.get("terminated"):
                return False
            terminated = state.get("terminated")
            return not terminated or not terminated.get("containerID")
    return False


def _load_dump_logs(logs: Logs, root: Path, store: Store) -> None:
    """`<ns>/<pod>/logs.txt` of cluster-info dump: sections per container, or one unnamed block."""
    for path in sorted(root.glob("*/*/logs.txt")):
        ns, pod = path.parent.parent.name, path.parent.name
        current: str | None = None
        chunks: dict[str, list[str]] = {}
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            m = _DUMP_SECTION.match(line)
            if m:
                current = m.group(2) if m.group(1) == "START" else None
                chunks.setdefault(m.group(2), [])
            elif current is not None:
                chunks[current].append(line)
        pod_obj = store.get(("", "pods"), ns, pod)
        for container, lines in chunks.items():
            text = "".join(line + "\n" for line in lines)
            logs.sources[(ns, pod, container, False)] = text
            if _served_last_terminated(pod_obj, container):
                logs.sources[(ns, pod, container, True)] = text


def _object_times(obj: dict[str, Any]) -> list[Any]:
    """The timestamps one object carries that say when something happened (not deletionTimestamp,
    which may lie in the future)."""
    meta = obj.get("metadata")
    out: list[Any] = [meta.get("creationTimestamp")] if isinstance(meta, dict) else []
    out.extend(obj.get(k) for k in _EVENT_TIMES)
    series = obj.get("series")
    if isinstance(series, dict):
        out.append(series.get("lastObservedTime"))
    status = obj.get("status")
    if not isinstance(status, dict):
        return out
    out.extend(status.get(k) for k in _STATUS_TIMES)
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict):
            out.extend(cond.get(k) for k in _CONDITION_TIMES)
    for key in _CONTAINER_STATUSES:
        for cs in status.get(key) or ():
            if not isinstance(cs, dict):
                continue
            for state in (cs.get("state"), cs.get("lastState")):
                for detail in (state or {}).values() if isinstance(state, dict) else ():
                    if isinstance(detail, dict):
                        out.extend((detail.get("startedAt"), detail.get("finishedAt")))
    return out


def _last_log_time(src: Path | str) -> datetime | None:
    """The timestamp of the last line that starts with one (RFC 3339, as `kubectl logs --timestamps`
    writes it, or an application's own); only the tail of a file is read."""
    if isinstance(src, Path):
        try:
            with src.open("rb") as fh:
                size = fh.seek(0, 2)
                fh.seek(max(0, size - _LOG_TAIL_BYTES))
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return None
    else:
        text = src[-_LOG_TAIL_BYTES:]
    for line in reversed(text.splitlines()):
        stamp = line.lstrip().split(" ", 1)[0].strip("[]")
        if "T" in stamp:
            ts = parse_time(stamp)
            if ts is not None:
                return ts
    return None


def newest_time(store: Store, logs: Logs) -> datetime | None:
    """The newest timestamp in the snapshot's objects and logs: when a snapshot (or a cluster-info
    dump) without a `now` was taken, as far as it tells."""
    newest: datetime | None = None
    for obj in store.objects():
        for value in _object_times(obj):
            ts = parse_time(value)
            if ts is not None and (newest is None or ts > newest):
                newest = ts
    for src in logs.sources.values():
        ts = _last_log_time(src)
        if ts is not None and (newest is None or ts > newest):
            newest = ts
    return newest


def _users(raw: Any) -> dict[str, User]:
    users: dict[str, User] = {}
    for name, spec in (raw or {}).items():
        spec = spec or {}
        token = str(spec.get("token") or f"{name}-{secrets.token_hex(16)}")
        users[str(name)] = User(str(name), tuple(str(g) for g in spec.get("groups") or ()), token)
    return users


def load_snapshot(directory: Path | str) -> Snapshot:
    """Load a snapshot directory; a directory without `cluster/` is read as a cluster-info dump.

    `snapshot.yaml` is optional. Without users in it: one `admin` (``system:masters``); Sleuth's own
    identities are added either way. Without `now`: the newest timestamp in the objects and logs."""
    root = Path(directory)
    if not root.is_dir():
        raise SnapshotError(f"{root}: not a directory")
    meta_path = root / "snapshot.yaml"
    meta: dict[str, Any] = {}
    if meta_path.is_file():
        meta = yaml.load(meta_path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    store, logs = Store(), Logs()
    if (root / "cluster").is_dir():
        _load_objects(store, root / "cluster", skip_dirs=set())
        if (root / "logs").is_dir():
            _load_logs(logs, root / "logs")
    else:
        _load_objects(store, root, skip_dirs={root / "logs", root / "metrics"})
        _load_dump_logs(logs, root, store)
        if (root / "logs").is_dir():
            _load_logs(logs, root / "logs")
    cluster = meta.get("cluster") or {}
    name = str(meta.get("name") or root.name)
    users = _users(meta.get("users"))
    if not users:
        users = _users({"admin": {"groups": ["system:masters"]}})
    users.update(_users(add_sleuth_identities(store, users)))
    store.seal()
    for skipped in store.skipped:
        log.info("snapshot object skipped: %s", skipped)
    # no `now` (a cluster-info dump, a snapshot.yaml naming only users): when the snapshot was taken
    now = parse_time(meta.get("now")) or newest_time(store, logs) or datetime.now(UTC)
    return Snapshot(
        name=name, cluster_name=str(cluster.get("name") or name),
        aliases=tuple(str(a) for a in cluster.get("aliases") or ()), now=now, users=users,
        store=store, logs=logs, description=str(meta.get("description") or ""),
    )
