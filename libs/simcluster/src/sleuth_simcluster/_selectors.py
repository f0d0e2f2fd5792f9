"""Field selectors per resource: which fields the API server lets each resource be selected by,
and how it reads them from an object (its field label conversion). The selector syntax, and label
selectors, are `sleuth_common.k8s`'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sleuth_common.k8s import FieldSelector, SelectorError
from sleuth_common.k8s import parse_field_selector as parse_field_syntax

Obj = dict[str, Any]

__all__ = ["ResourceFieldSelector", "SelectorError", "fields_match", "parse_field_selector"]


# -- field selectors ------------------------------------------------------------------------------

def _path(*keys: str) -> Callable[[Obj], str]:
    def get(obj: Obj) -> str:
        cur: Any = obj
        for k in keys:
            cur = cur.get(k) if isinstance(cur, dict) else None
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


_REF_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_FIELDS: dict[str, dict[str, Callable[[Obj], str]]] = {
    "pods": {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _path("spec", "hostNetwork"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "events": {
        **{f"involvedObject.{f}": _path("involvedObject", f) for f in _REF_FIELDS},
        **{f"regarding.{f}": _path("involvedObject", f) for f in _REF_FIELDS},
        "reason": _path("reason"),
        "type": _path("type"),
        "source": _path("source", "component"),
        "reportingComponent": _path("reportingComponent"),
        "reportingController": _path("reportingComponent"),
    },
    "nodes": {"spec.unschedulable": _path("spec", "unschedulable")},
    "secrets": {"type": _path("type")},
    "namespaces": {"status.phase": _path("status", "phase")},
    "replicasets": {"status.replicas": _path("status", "replicas")},
    "replicationcontrollers": {"status.replicas": _path("status", "replicas")},
    "jobs": {"status.successful": _path("status", "succeeded")},
    "services": {"spec.clusterIP": _path("spec", "clusterIP"), "spec.type": _path("spec", "type")},
}
_COMMON = {"metadata.name": _path("metadata", "name"), "metadata.namespace": _path("metadata", "namespace")}


@dataclass(frozen=True)
class ResourceFieldSelector:
    """A field selector checked against one resource's fields, with their readers bound."""

    selector: FieldSelector
    getters: tuple[tuple[str, Callable[[Obj], str]], ...] = ()

    def __bool__(self) -> bool:
        return not self.selector.is_empty

    def matches(self, obj: Obj) -> bool:
        getters = dict(self.getters)
        return self.selector.matches(lambda name: getters[name](obj))


def parse_field_selector(text: str, plural: str) -> ResourceFieldSelector:
    """Parse `a=b,c!=d` for resource `plural`; unknown fields raise like the API server's."""
    selector = parse_field_syntax(text or "")
    known = {**_COMMON, **_FIELDS.get(plural, {})}
    for name in selector.fields:
        if name not in known:
            raise SelectorError(f'"{name}" is not a known field selector: only "metadata.name", '
                                f'"metadata.namespace"' if plural not in _FIELDS
                                else f"field label not supported: {name}")
    return ResourceFieldSelector(selector, tuple((name, known[name]) for name in selector.fields))


def fields_match(selector: ResourceFieldSelector, obj: Obj) -> bool:
    return selector.matches(obj)
