"""Conversions between served versions of one stored object (events, HorizontalPodAutoscalers)."""

from __future__ import annotations

import copy
from typing import Any

from ._registry import Resource

Obj = dict[str, Any]

# core/v1 Event field <-> events.k8s.io/v1 Event field
_EVENT_FIELDS = (
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
    ("reportingInstance", "reportingInstance"),
    ("eventTime", "eventTime"),
    ("series", "series"),
    ("action", "action"),
    ("related", "related"),
    ("reason", "reason"),
    ("type", "type"),
)


def event_to_core(obj: Obj) -> Obj:
    out: Obj = {"apiVersion": "v1", "kind": "Event", "metadata": obj.get("metadata", {})}
    for core, new in _EVENT_FIELDS:
        if new in obj:
            out[core] = obj[new]
    return out


def event_from_core(obj: Obj) -> Obj:
    out: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": obj.get("metadata", {})}
    for core, new in _EVENT_FIELDS:
        if core in obj:
            out[new] = obj[core]
    return out


def hpa_v1_to_v2(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    spec = out.setdefault("spec", {})
    target = spec.pop("targetCPUUtilizationPercentage", None)
    if target is not None:
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}}]
    status = out.setdefault("status", {})
    current = status.pop("currentCPUUtilizationPercentage", None)
    if current is not None:
        status["currentMetrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": current}}}]
    out["apiVersion"] = "autoscaling/v2"
    return out


def _cpu_utilization(metrics: Any, side: str) -> int | None:
    for metric in metrics or ():
        res = metric.get("resource") or {}
        if metric.get("type") == "Resource" and res.get("name") == "cpu":
            value = (res.get(side) or {}).get("averageUtilization")
            if value is not None:
                return int(value)
    return None


def hpa_v2_to_v1(obj: Obj) -> Obj:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    out_spec = {k: v for k, v in spec.items() if k not in ("metrics", "behavior")}
    target = _cpu_utilization(spec.get("metrics"), "target")
    if target is not None:
        out_spec["targetCPUUtilizationPercentage"] = target
    out_status = {k: v for k, v in status.items() if k not in ("currentMetrics", "conditions")}
    current = _cpu_utilization(status.get("currentMetrics"), "current")
    if current is not None:
        out_status["currentCPUUtilizationPercentage"] = current
    return {"apiVersion": "autoscaling/v1", "kind": obj["kind"], "metadata": obj["metadata"],
            "spec": out_spec, "status": out_status}


def present(obj: Obj, res: Resource) -> Obj:
    """The stored object as `res` (a group version of its resource) serves it."""
    if obj.get("apiVersion") == res.api_version:
        return obj
    if res.group == "events.k8s.io":
        return event_from_core(obj)
    if res.plural == "horizontalpodautoscalers" and res.version == "v1":
        return hpa_v2_to_v1(obj)
    return {**obj, "apiVersion": res.api_version}
