"""Kubernetes objects for the rule tests, and how the collector would hold them.

Builders write objects as the API serves them; ``k8s(raw)`` turns one into the ``K8sObject`` the
collector makes, with the record produced by kube-mcp's own shaping functions (so a rule test
reads exactly the shape production reads). The defaults follow every rule: a test starts from a
clean object and breaks one thing."""

from __future__ import annotations

import copy
from typing import Any

from sleuth_agent.report import Inventory, K8sObject, Outcome, load_rules, run_rules
from sleuth_common.k8s import parse_time
from sleuth_common.messages import Finding
from sleuth_kube_mcp import shaping

Obj = dict[str, Any]
NS = "team-a"
ALL_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod",
             "PodDisruptionBudget", "HorizontalPodAutoscaler", "PersistentVolumeClaim")
_TEMPLATE = {"Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod"}
_WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"}


def container(name: str = "app", image: str = "registry.internal/app:1.4.2", port: int | None = 8080,
              **overrides: Any) -> Obj:
    c: Obj = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        "livenessProbe": {"httpGet": {"path": "/livez", "port": port or 8080}, "periodSeconds": 10, "failureThreshold": 6},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": port or 8080}, "periodSeconds": 5},
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    if port is not None:
        c["ports"] = [{"containerPort": port, "protocol": "TCP", "name": "http"}]
    for k, v in overrides.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    return c


def pod_spec(*containers: Obj, **extra: Any) -> Obj:
    return {
        "containers": list(containers) or [container()],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001},
        **extra,
    }


def _spread(labels: dict[str, str]) -> list[Obj]:
    return [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": labels}}]


def workload(kind: str = "Deployment", name: str = "web", ns: str = NS, replicas: int | None = 3,
             spec: Obj | None = None, status: Obj | None = None, annotations: dict[str, str] | None = None) -> Obj:
    labels = {"app": name}
    tpl = copy.deepcopy(spec) if spec is not None else pod_spec()
    if kind in ("Deployment", "StatefulSet") and "topologySpreadConstraints" not in tpl and spec is None:
        tpl["topologySpreadConstraints"] = _spread(labels)
    body: Obj = {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": tpl}}
    if replicas is not None and kind != "DaemonSet":
        body["replicas"] = replicas
    if kind == "StatefulSet":
        body["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": ns, "annotations": annotations or {},
                         "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": body, "status": status or {}}


def cronjob(name: str = "nightly", ns: str = NS, schedule: str = "0 2 * * *", policy: str | None = "Forbid",
            spec: Obj | None = None, active: int = 0) -> Obj:
    job_spec = {"template": {"spec": copy.deepcopy(spec) if spec is not None else
                             pod_spec(container("run", port=None, livenessProbe=None, readinessProbe=None),
                                      restartPolicy="OnFailure")}}
    body: Obj = {"schedule": schedule, "jobTemplate": {"spec": job_spec}}
    if policy is not None:
        body["concurrencyPolicy"] = policy
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": body, "status": {"active": [{"name": f"{name}-{i}"} for i in range(active)]}}


def job(name: str, ns: str = NS, cron: str | None = None, start: str = "", end: str = "", active: int = 0) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "creationTimestamp": start or "2026-11-01T00:00:00Z"}
    if cron:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": cron, "controller": True}]
    status: Obj = {"active": active}
    if start:
        status["startTime"] = start
    if end:
        status["completionTime"] = end
        status["succeeded"] = 1
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"template": {"spec": pod_spec(container("run", port=None))}}, "status": status}


def pod(name: str = "debug", ns: str = NS, spec: Obj | None = None, owner: tuple[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "labels": {"app": name}, "creationTimestamp": "2026-11-01T00:00:00Z"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec or pod_spec(), "status": {"phase": "Running"}}


def pdb(name: str = "web", ns: str = NS, selector: Obj | None = None, **spec: Any) -> Obj:
    body = {"selector": selector if selector is not None else {"matchLabels": {"app": "web"}}, **spec}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": body, "status": {}}


def hpa(name: str = "web", ns: str = NS, target: str = "web", low: int = 2, high: int = 10,
        current: int | None = None, conditions: list[Obj] | None = None) -> Obj:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": target}, "minReplicas": low, "maxReplicas": high},
            "status": {"currentReplicas": current, "desiredReplicas": current, "conditions": conditions or []}}


def pvc(name: str = "data", ns: str = NS, capacity: str = "10Gi") -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"resources": {"requests": {"storage": capacity}}, "storageClassName": "standard"},
            "status": {"phase": "Bound", "capacity": {"storage": capacity}}}


def k8s(raw: Obj) -> K8sObject:
    """The object as the collector holds it: the kube-mcp record, and the full object where the
    rules read its pod template (not for a controller's pod or a CronJob's Job)."""
    kind = raw["kind"]
    if kind in _WORKLOADS:
        record = shaping.workload_summary(raw, kind)
    elif kind == "Pod":
        record = shaping.pod_summary(raw)
    elif kind == "PersistentVolumeClaim":
        record = shaping.pvc_record(raw)
    else:
        record = shaping.resource_record(raw, kind)
    meta = raw.get("metadata") or {}
    obj = K8sObject(kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""), record)
    if kind in _TEMPLATE and not obj.owned:
        obj = K8sObject(obj.kind, obj.namespace, obj.name, record, raw)
    return obj


def inventory(*raws: Obj, unlisted: tuple[tuple[str, str], ...] = (), now: str = "",
              pvc_usage: dict[tuple[str, str], float] | None = None, metrics_note: str = "") -> Inventory:
    """An inventory of ``raws``; every kind counts as listed in every namespace seen except the
    (kind, namespace) pairs of ``unlisted``."""
    objs = [k8s(r) for r in raws]
    namespaces = sorted({o.namespace for o in objs} | {NS})
    inv = Inventory("demo", namespaces, now=parse_time(now) if now else None, pvc_usage=pvc_usage,
                    metrics_note=metrics_note)
    for o in objs:
        inv.add(o)
    for kind in ALL_KINDS:
        for ns in namespaces:
            if (kind, ns) not in unlisted:
                inv.mark_listed(kind, ns)
    return inv


def run(rule_id: str, inv: Inventory) -> Outcome:
    return run_rules(inv, [load_rules()[rule_id]])


def findings(rule_id: str, *raws: Obj, **kw: Any) -> list[Finding]:
    """What the rule ``rule_id`` finds among ``raws`` (asserting it did not fail on any)."""
    out = run(rule_id, inventory(*raws, **kw))
    assert not out.not_checked, out.not_checked
    return out.findings
