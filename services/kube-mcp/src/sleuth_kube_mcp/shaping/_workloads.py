"""Workloads (Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, ReplicaSets) as records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleuth_kube_mcp.shaping._common import compact, conditions, owner, selector_string

__all__ = ["WORKLOAD_KINDS", "normalize_workload_kinds", "workload_summary"]

WORKLOAD_KINDS: dict[str, tuple[str, str]] = {
    # plural → (API group path, Kind)
    "deployments": ("/apis/apps/v1", "Deployment"),
    "statefulsets": ("/apis/apps/v1", "StatefulSet"),
    "daemonsets": ("/apis/apps/v1", "DaemonSet"),
    "replicasets": ("/apis/apps/v1", "ReplicaSet"),
    "jobs": ("/apis/batch/v1", "Job"),
    "cronjobs": ("/apis/batch/v1", "CronJob"),
}
_ALIASES = {
    "deployment": "deployments",
    "deploy": "deployments",
    "statefulset": "statefulsets",
    "sts": "statefulsets",
    "daemonset": "daemonsets",
    "ds": "daemonsets",
    "replicaset": "replicasets",
    "rs": "replicasets",
    "job": "jobs",
    "cronjob": "cronjobs",
    "cj": "cronjobs",
}


def normalize_workload_kinds(kinds: list[str] | str | None) -> tuple[list[str], list[str]]:
    """(known plurals in canonical order, unknown names). None/empty = every kind."""
    if not kinds:
        return list(WORKLOAD_KINDS), []
    if isinstance(kinds, str):
        kinds = [k for k in kinds.split(",")]
    wanted, unknown = set(), []
    for k in kinds:
        key = k.strip().lower()
        key = _ALIASES.get(key, key)
        if key in WORKLOAD_KINDS:
            wanted.add(key)
        elif key:
            unknown.append(k.strip())
    return [k for k in WORKLOAD_KINDS if k in wanted], unknown


def _pod_spec(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    spec = obj.get("spec") or {}
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    return ((spec.get("template") or {}).get("spec")) or {}


def _images(pod_spec: Mapping[str, Any]) -> list[str]:
    return [str(c.get("image")) for c in pod_spec.get("containers") or []]


def _resources(pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for c in pod_spec.get("containers") or []:
        r = c.get("resources") or {}
        out[str(c.get("name"))] = {
            "requests": dict(r.get("requests") or {}),
            "limits": dict(r.get("limits") or {}),
        }
    return out


def workload_summary(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The record list_workloads returns for one object of ``kind`` (the Kind, e.g. "Deployment")."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    pod_spec = _pod_spec(obj, kind)
    record: dict[str, Any] = {
        "namespace": meta.get("namespace"),
        "kind": kind,
        "name": meta.get("name"),
        "owner": owner(meta),
        "created": meta.get("creationTimestamp"),
        "labels": dict(meta.get("labels") or {}),
        "selector": selector_string(spec.get("selector")),
        "images": _images(pod_spec),
        "container_resources": _resources(pod_spec),
        "conditions": conditions(status.get("conditions")),
    }
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        record["replicas"] = {
            "desired": spec.get("replicas", 1),
            "current": status.get("replicas", 0),
            "ready": status.get("readyReplicas", 0),
            "available": status.get("availableReplicas", 0),
            "updated": status.get("updatedReplicas", status.get("fullyLabeledReplicas", 0))
            if kind != "ReplicaSet"
            else None,
        }
        record["replicas"] = compact(record["replicas"])
    if kind == "Deployment":
        record["paused"] = bool(spec.get("paused", False))
        record["strategy"] = (spec.get("strategy") or {}).get("type")
        record["progress_deadline_seconds"] = spec.get("progressDeadlineSeconds")
        record["max_unavailable"] = ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable")
        record["revision"] = (meta.get("annotations") or {}).get("deployment.kubernetes.io/revision")
    elif kind == "ReplicaSet":
        record["revision"] = (meta.get("annotations") or {}).get("deployment.kubernetes.io/revision")
    elif kind == "StatefulSet":
        record["service_name"] = spec.get("serviceName")
        record["pod_management_policy"] = spec.get("podManagementPolicy", "OrderedReady")
        record["partition"] = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition")
        record["current_revision"] = status.get("currentRevision")
        record["update_revision"] = status.get("updateRevision")
    elif kind == "DaemonSet":
        record["replicas"] = {
            "desired": status.get("desiredNumberScheduled", 0),
            "current": status.get("currentNumberScheduled", 0),
            "ready": status.get("numberReady", 0),
            "available": status.get("numberAvailable", 0),
            "updated": status.get("updatedNumberScheduled", 0),
            "misscheduled": status.get("numberMisscheduled", 0),
        }
    elif kind == "Job":
        record["job"] = compact(
            {
                "completions": spec.get("completions"),
                "parallelism": spec.get("parallelism"),
                "backoff_limit": spec.get("backoffLimit"),
                "active_deadline_seconds": spec.get("activeDeadlineSeconds"),
                "active": status.get("active", 0),
                "succeeded": status.get("succeeded", 0),
                "failed": status.get("failed", 0),
                "start_time": status.get("startTime"),
                "completion_time": status.get("completionTime"),
            }
        )
    elif kind == "CronJob":
        record["cron"] = compact(
            {
                "schedule": spec.get("schedule"),
                "suspend": bool(spec.get("suspend", False)),
                "concurrency_policy": spec.get("concurrencyPolicy"),
                "starting_deadline_seconds": spec.get("startingDeadlineSeconds"),
                "last_schedule_time": status.get("lastScheduleTime"),
                "last_successful_time": status.get("lastSuccessfulTime"),
                "active_jobs": [a.get("name") for a in status.get("active") or []],
            }
        )
    return compact(record)
