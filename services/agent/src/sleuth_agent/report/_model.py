"""What the rules read: the objects of one cluster that the asker may see, as the collector got
them through the scoped tools, and small accessors over them.

An object has a ``record`` (what kube-mcp's list tool returned: ``list_workloads``, ``list_pods``,
``list_pvcs``, ``list_resources`` — see ``sleuth_kube_mcp.shaping``) and, for the objects the rules
judge by their pod template, ``data``: the object in full as the API serves it (``get_resource``).

| kind | record | data |
|---|---|---|
| Deployment, StatefulSet, DaemonSet, CronJob | list_workloads | full object |
| Job | list_workloads (``job``: start/completion times) | full object for a Job no CronJob owns |
| Pod | list_pods | full object for a pod no controller owns |
| PodDisruptionBudget, HorizontalPodAutoscaler | list_resources (``min_available``, ``max_replicas`` …) | — |
| PersistentVolumeClaim | list_pvcs (``capacity``, ``phase`` …) | — |
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml

from sleuth_common.k8s import LabelSelector, as_label_selector

__all__ = [
    "CONTROLLER_KINDS",
    "TEMPLATE_KINDS",
    "Inventory",
    "K8sObject",
    "containers",
    "desired_replicas",
    "kubectl_patch",
    "pod_spec",
    "selector_labels",
    "template_labels",
    "template_patch",
    "to_yaml",
]

Obj = Mapping[str, Any]

CONTROLLER_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"})
"""Owners that make a pod or a Job part of another object (judged through that object)."""
TEMPLATE_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod")
"""Kinds whose pod spec the container rules judge (a Job only when no CronJob owns it, a Pod only
when no controller owns it)."""


@dataclass(frozen=True)
class K8sObject:
    kind: str
    namespace: str
    name: str
    record: Obj = field(default_factory=dict)
    data: Obj = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return "/".join(p for p in (self.kind, self.namespace, self.name) if p)

    @property
    def owner(self) -> tuple[str, str] | None:
        """The controlling owner (kind, name) as the record says, else from the full object."""
        o = self.record.get("owner")
        if isinstance(o, Mapping) and o.get("kind"):
            return str(o.get("kind")), str(o.get("name") or "")
        for ref in (self.data.get("metadata") or {}).get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("controller"):
                return str(ref.get("kind")), str(ref.get("name") or "")
        return None

    @property
    def owned(self) -> bool:
        """Part of a controller the report judges instead (a ReplicaSet's pod, a CronJob's Job)."""
        o = self.owner
        return o is not None and o[0] in CONTROLLER_KINDS

    @property
    def resource(self) -> str:
        """How kubectl names it: ``deployment/checkout-api``."""
        return f"{self.kind.lower()}/{self.name}"

    @property
    def ns_flag(self) -> str:
        return f" -n {self.namespace}" if self.namespace else ""


@dataclass
class Inventory:
    """One cluster's objects in the asker's scope. ``listed[kind]`` holds the namespaces where
    that kind was listed (a kind the asker may not list, or a tool that failed, leaves its
    namespace out, and rules that read the kind skip it there). ``pvc_usage``: used/capacity per
    (namespace, claim) when a metrics source answered, else None."""

    cluster: str
    namespaces: list[str] = field(default_factory=list)
    objects: dict[str, list[K8sObject]] = field(default_factory=dict)
    listed: dict[str, set[str]] = field(default_factory=dict)
    now: datetime | None = None
    pvc_usage: dict[tuple[str, str], float] | None = None
    metrics_note: str = ""

    def add(self, obj: K8sObject) -> None:
        self.objects.setdefault(obj.kind, []).append(obj)

    def mark_listed(self, kind: str, namespace: str) -> None:
        self.listed.setdefault(kind, set()).add(namespace)

    def readable(self, kind: str, namespace: str) -> bool:
        return namespace in self.listed.get(kind, ())

    def of(self, kind: str, namespace: str | None = None) -> list[K8sObject]:
        return [o for o in self.objects.get(kind, ()) if namespace is None or o.namespace == namespace]

    def subjects(self, kinds: tuple[str, ...]) -> Iterator[K8sObject]:
        """The objects a rule judges: of ``kinds``, not owned by a controller (judged through
        it), and read in full where the kind has a pod template."""
        for kind in kinds:
            for o in self.objects.get(kind, ()):
                if o.owned:
                    continue
                if kind in TEMPLATE_KINDS and not o.data:
                    continue
                yield o

    def get(self, kind: str, namespace: str, name: str) -> K8sObject | None:
        return next((o for o in self.of(kind, namespace) if o.name == name), None)

    def count(self) -> int:
        return sum(1 for kind in self.objects for _ in self.subjects((kind,)))


# -- accessors over full objects --------------------------------------------------------------
def pod_spec(obj: K8sObject) -> Obj:
    """The pod spec of a workload's template (a CronJob's job template), or a Pod's own spec."""
    spec = obj.data.get("spec") or {}
    if obj.kind == "Pod":
        return spec
    if obj.kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return (spec.get("template") or {}).get("spec") or {}


def containers(obj: K8sObject, init: bool = False) -> list[Obj]:
    """The containers of the pod spec (and the init containers first when ``init``)."""
    spec = pod_spec(obj)
    out = list(spec.get("initContainers") or []) if init else []
    return [c for c in [*out, *(spec.get("containers") or [])] if isinstance(c, Mapping)]


def template_labels(obj: K8sObject) -> dict[str, str]:
    if obj.kind == "Pod":
        labels = (obj.data.get("metadata") or {}).get("labels")
    else:
        spec = obj.data.get("spec") or {}
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    return {str(k): str(v) for k, v in (labels or {}).items()}


def selector_labels(obj: K8sObject) -> LabelSelector | None:
    """The workload's own selector (``spec.selector``), or its template labels."""
    sel = (obj.data.get("spec") or {}).get("selector")
    if sel:
        return as_label_selector(sel)
    labels = template_labels(obj)
    return LabelSelector.from_map(labels) if labels else None


def desired_replicas(obj: K8sObject) -> int:
    """``spec.replicas`` (1 when unset, as the API defaults it)."""
    value = (obj.data.get("spec") or {}).get("replicas", 1)
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"spec.replicas is {value!r}, not a number")
    return value


# -- fixes --------------------------------------------------------------------------------------
def template_patch(obj: K8sObject, pod_spec_patch: dict[str, Any]) -> dict[str, Any]:
    """A strategic-merge patch that sets ``pod_spec_patch`` in the object's pod template."""
    if obj.kind == "Pod":
        return {"spec": pod_spec_patch}
    inner = {"template": {"spec": pod_spec_patch}}
    if obj.kind == "CronJob":
        return {"spec": {"jobTemplate": {"spec": inner}}}
    return {"spec": inner}


def kubectl_patch(obj: K8sObject, patch: dict[str, Any], kind: str = "") -> str:
    """``kubectl patch`` with an inline JSON patch (strategic merge: containers merge by name)."""
    body = json.dumps(patch, separators=(",", ":"))
    flag = f" --type={kind}" if kind else ""
    return f"kubectl patch {obj.kind.lower()} {obj.name}{obj.ns_flag}{flag} -p '{body}'"


def to_yaml(obj: K8sObject, patch: dict[str, Any]) -> str:
    """A YAML patch with the command that applies it in its first line (a Pod cannot be changed
    in place: the comment says to recreate it)."""
    if obj.kind == "Pod":
        head = f"# pod {obj.name}{obj.ns_flag}: pods cannot be patched here; add this to its manifest and recreate it"
    else:
        head = f"# kubectl patch {obj.kind.lower()} {obj.name}{obj.ns_flag} --patch-file fix.yaml"
    return head + "\n" + yaml.dump(patch, Dumper=_Dumper, sort_keys=False, default_flow_style=False).rstrip()


class _Dumper(yaml.SafeDumper):
    """Writes a repeated value out again (a fix is read by people: no ``&id001`` anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True
