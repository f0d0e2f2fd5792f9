"""What changed: the pod template of a Deployment's current ReplicaSet against the previous one.

A failure that starts with a rollout is usually explained by the one or two fields the rollout
changed (an image, a memory limit, an env var, a probe path, an argument). The diff is its own
evidence (``get_resource`` of both ReplicaSets) and becomes a typed ``TemplateChange`` fact; the
report quotes it when the changed field can explain the family that was diagnosed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sleuth_agent.rca._records import items_of
from sleuth_common.mcp import ToolResult

__all__ = [
    "RolloutChange", "TemplateChange", "explains", "pod_revision_changes", "revision_changes", "rollout_changes", "template_diff",
]

Read = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]

_CONTAINER_FIELDS_ALL = (
    "image", "command", "args", "env", "envFrom", "resources", "securityContext", "ports", "readinessProbe",
    "livenessProbe", "startupProbe", "volumeMounts", "serviceAccountName", "nodeSelector", "affinity",
    "tolerations", "volumes", "imagePullSecrets", "labels",
)
# Which changed fields can explain which family (the rest of a diff is context, not cause).
_EXPLAINS: dict[str, tuple[str, ...]] = {
    "oom_killed": ("resources", "env", "args", "command", "image"),
    "cpu_throttled": ("resources", "env", "args", "image"),
    "crash_loop_app_error": ("image", "env", "envFrom", "args", "command", "volumes", "volumeMounts", "securityContext"),
    "missing_config": ("env", "envFrom", "volumes", "volumeMounts"),
    "image_pull": ("image", "imagePullSecrets"),
    "probe_failure": ("readinessProbe", "livenessProbe", "startupProbe", "ports", "args", "command", "image", "env"),
    "unschedulable_resources": ("resources",),
    "unschedulable_constraints": ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints"),
    "quota_exceeded": ("resources",),
    "rbac_denied": ("serviceAccountName",),
    "volume_mount_failed": ("volumes", "volumeMounts", "securityContext"),
    "dns_failure": ("env", "envFrom", "args", "dnsPolicy", "dnsConfig"),
    "dependency_unreachable": ("env", "envFrom", "args"),
    "network_policy_blocked": ("labels",),
    "job_failed": ("image", "env", "args", "command", "resources"),
    # an admission policy can refuse any field of the template
    "rollout_stuck": _CONTAINER_FIELDS_ALL,
}
_CONTAINER_FIELDS = (
    "image", "command", "args", "env", "envFrom", "resources", "securityContext", "ports",
    "readinessProbe", "livenessProbe", "startupProbe", "volumeMounts",
)
_POD_FIELDS = (
    "serviceAccountName", "nodeSelector", "affinity", "tolerations", "volumes", "imagePullSecrets",
    "topologySpreadConstraints", "dnsPolicy", "dnsConfig", "securityContext",
)


@dataclass(frozen=True)
class TemplateChange:
    """One field that differs between the previous and the current pod template."""

    field: str  # the kind of field: image, resources, env, readinessProbe ...
    path: str  # where: "container api resources.limits.memory"
    before: str
    after: str

    def text(self) -> str:
        return f"{self.path}: {self.before or '(unset)'} → {self.after or '(unset)'}"


def _short(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))[:200]


def _leaves(prefix: str, value: Any) -> dict[str, Any]:
    """Flatten mappings (and name-keyed lists such as env) to ``a.b.c`` paths."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(f"{prefix}.{k}" if prefix else str(k), v))
        return out or {prefix: {}}
    if isinstance(value, list) and value and all(isinstance(x, Mapping) and "name" in x for x in value):
        out = {}
        for x in value:
            rest = {k: v for k, v in x.items() if k != "name"}
            out.update(_leaves(f"{prefix}[{x['name']}]", rest if rest else ""))
        return out
    return {prefix: value}


def _diff(field: str, where: str, before: Any, after: Any) -> list[TemplateChange]:
    if before == after:
        return []
    if field in ("image", "serviceAccountName", "dnsPolicy") or not isinstance(before or after, Mapping | list):
        return [TemplateChange(field, f"{where}{field}", _short(before), _short(after))]
    old, new = _leaves(field, before or {}), _leaves(field, after or {})
    changes = []
    for path in sorted(set(old) | set(new)):
        if old.get(path) != new.get(path):
            changes.append(TemplateChange(field, f"{where}{path}", _short(old.get(path)), _short(new.get(path))))
    return changes


def template_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[TemplateChange]:
    """The fields that differ between two pod templates (``spec.template`` of two ReplicaSets)."""
    old_spec, new_spec = before.get("spec") or {}, after.get("spec") or {}
    changes: list[TemplateChange] = []
    for field in _POD_FIELDS:
        changes.extend(_diff(field, "", old_spec.get(field), new_spec.get(field)))
    for group in ("initContainers", "containers"):
        old_c = {c.get("name"): c for c in old_spec.get(group) or [] if isinstance(c, Mapping)}
        new_c = {c.get("name"): c for c in new_spec.get(group) or [] if isinstance(c, Mapping)}
        for name in sorted(set(old_c) | set(new_c), key=str):
            if name not in old_c or name not in new_c:
                changes.append(TemplateChange("containers", f"{group} {name}", "present" if name in old_c else "", "present" if name in new_c else ""))
                continue
            for field in _CONTAINER_FIELDS:
                changes.extend(_diff(field, f"container {name} ", old_c[name].get(field), new_c[name].get(field)))
    old_labels = {k: v for k, v in ((before.get("metadata") or {}).get("labels") or {}).items() if k != "pod-template-hash"}
    new_labels = {k: v for k, v in ((after.get("metadata") or {}).get("labels") or {}).items() if k != "pod-template-hash"}
    changes.extend(_diff("labels", "pod ", old_labels, new_labels))
    return changes


def explains(family: str, change: TemplateChange) -> bool:
    return change.field in _EXPLAINS.get(family, ())


@dataclass(frozen=True)
class RolloutChange:
    current: str
    previous: str
    current_revision: str
    previous_revision: str
    changes: tuple[TemplateChange, ...]
    result: ToolResult  # the current ReplicaSet, read in full (the evidence to cite)
    kind: str = "ReplicaSet"  # or ControllerRevision (StatefulSets)


def _revision(record: Mapping[str, Any]) -> int:
    try:
        return int(str(record.get("revision") or 0))
    except ValueError:
        return 0


async def _read_and_diff(read: Read, namespace: str, kind: str, new: str, old: str, old_kind: str = "") -> tuple[ToolResult, Mapping[str, Any], tuple[TemplateChange, ...]] | None:
    """Read two objects (``old_kind`` defaults to ``kind``) and diff their pod templates:
    (the new object's result, the old object, the changes), or None when a read failed or nothing
    differs."""
    got = await asyncio.gather(
        read("get_resource", {"kind": kind, "name": new, "namespace": namespace}),
        read("get_resource", {"kind": old_kind or kind, "name": old, "namespace": namespace}),
    )
    if not all(r.ok and isinstance(r.data, Mapping) for r in got):
        return None
    changes = template_diff(_pod_template(got[1].data), _pod_template(got[0].data))
    return (got[0], got[1].data, tuple(changes)) if changes else None


def _pod_template(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec.template`` (Deployment, ReplicaSet), or ``data.spec.template`` (ControllerRevision)."""
    if obj.get("kind") == "ControllerRevision" or ("data" in obj and "spec" not in obj):
        return ((obj.get("data") or {}).get("spec") or {}).get("template") or {}
    return ((obj.get("spec") or {}).get("template")) or {}


def _number(obj: Mapping[str, Any]) -> str:
    return str(obj.get("revision") or "?")


async def rollout_changes(read: Read, namespace: str, deployment: str, workloads: ToolResult | None) -> RolloutChange | None:
    """The diff between the two newest ReplicaSets of ``deployment`` (two ``get_resource`` reads)."""
    if workloads is None or not workloads.ok:
        return None
    owned = [
        w for w in items_of(workloads.data, "workloads")
        if w.get("kind") == "ReplicaSet" and _owner_name(w.get("owner")) == deployment
    ]
    owned.sort(key=_revision, reverse=True)
    record = next(
        (w for w in items_of(workloads.data, "workloads") if w.get("kind") == "Deployment" and w.get("name") == deployment), {}
    )
    if record.get("paused") and owned:
        # A template edited after the pause waits: no ReplicaSet has it yet.
        newest = str(owned[0].get("name"))
        pending = await _read_and_diff(read, namespace, "Deployment", deployment, newest, old_kind="ReplicaSet")
        if pending is not None:
            result, _old, changes = pending
            return RolloutChange(deployment, newest, "pending (paused)", str(_revision(owned[0])), changes, result,
                                 kind="Deployment template")
    if len(owned) < 2 or _revision(owned[0]) == 0:
        return None
    cur, prev = owned[0], owned[1]
    found = await _read_and_diff(read, namespace, "ReplicaSet", str(cur.get("name")), str(prev.get("name")))
    if found is None:
        return None
    result, _old, changes = found
    return RolloutChange(str(cur.get("name")), str(prev.get("name")), str(_revision(cur)), str(_revision(prev)), changes, result)


def _owner_name(owner: Any) -> str:
    if isinstance(owner, Mapping):
        return str(owner.get("name") or "")
    if isinstance(owner, str):
        return owner.rpartition("/")[2]
    return ""


async def _revisions(read: Read, namespace: str, new: str, old: str) -> RolloutChange | None:
    found = await _read_and_diff(read, namespace, "ControllerRevision", new, old)
    if found is None:
        return None
    result, previous, changes = found
    return RolloutChange(new, old, _number(result.data), _number(previous), changes, result, kind="ControllerRevision")


async def revision_changes(read: Read, namespace: str, name: str, workloads: ToolResult | None) -> RolloutChange | None:
    """A StatefulSet whose update is under way (``currentRevision`` ≠ ``updateRevision``): the diff
    between the pod templates of its two ControllerRevisions (two ``get_resource`` reads)."""
    if workloads is None or not workloads.ok:
        return None
    sts = next(
        (w for w in items_of(workloads.data, "workloads") if w.get("kind") == "StatefulSet" and w.get("name") == name), None
    )
    if sts is None:
        return None
    cur, upd = str(sts.get("current_revision") or ""), str(sts.get("update_revision") or "")
    if not cur or not upd or cur == upd:
        return None
    return await _revisions(read, namespace, upd, cur)


async def pod_revision_changes(read: Read, namespace: str, pods: list[Any], owner: str = "") -> RolloutChange | None:
    """A DaemonSet (or StatefulSet) mid-update: its failing pods carry one ``controller-revision-hash``
    label and its healthy ones another. The two ControllerRevisions are named after them; their
    pod templates are diffed (two ``get_resource`` reads)."""
    def revision(p: Any) -> str:
        # a StatefulSet's pods carry the revision's name, a DaemonSet's only its hash (<owner>-<hash>)
        label = str(dict(p.labels).get("controller-revision-hash") or "")
        return f"{owner}-{label}" if label and owner and not label.startswith(owner + "-") else label

    bad = sorted({revision(p) for p in pods if not p.healthy} - {""})
    good = sorted({revision(p) for p in pods if p.healthy} - {""} - set(bad))
    if len(bad) != 1 or len(good) != 1:
        return None
    return await _revisions(read, namespace, bad[0], good[0])
