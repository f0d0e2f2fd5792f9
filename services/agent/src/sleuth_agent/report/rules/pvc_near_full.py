"""PersistentVolumeClaims nearly full, by the kubelet's volume statistics
(``kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes``) when a Prometheus
tool answers for the cluster; without metrics the rule does not run and the report says so."""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal

from sleuth_agent.report._model import Inventory, K8sObject, kubectl_patch
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report._thresholds import thresholds
from sleuth_common.k8s import format_quantity, parse_quantity
from sleuth_common.messages import Severity


def _needs_metrics(inv: Inventory) -> str:
    if inv.pvc_usage is not None:
        return ""
    return inv.metrics_note or "no volume usage metrics"


@rule("pvc_near_full", title="Volume nearly full", severity="high", kinds=("PersistentVolumeClaim",),
      requires=_needs_metrics)
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    used = (inv.pvc_usage or {}).get((obj.namespace, obj.name))
    t = thresholds("pvc_near_full")
    if used is None or used < float(t["medium"]):
        return
    severity: Severity = "critical" if used >= float(t["critical"]) else "high" if used >= float(t["high"]) else "medium"
    capacity = obj.record.get("capacity") or obj.record.get("requested")
    gib = Decimal(1024**3)
    size = ""
    if capacity:
        grown = parse_quantity(capacity) * Decimal(str(t["grow_by"]))
        size = format_quantity(Decimal(math.ceil(grown / gib)) * gib)
    fix = (kubectl_patch(obj, {"spec": {"resources": {"requests": {"storage": size}}}}).replace(
        "persistentvolumeclaim", "pvc") + "   # needs a StorageClass with allowVolumeExpansion"
           if size else f"kubectl get pvc {obj.name}{obj.ns_flag}   # grow it, or delete what fills it")
    yield Hit(
        why=f"The volume is {used:.0%} full, and a full volume fails every write of the pods that mount it.",
        fix=fix,
        severity=severity,
        observed={"used": round(used, 3), "capacity": capacity, "storage_class": obj.record.get("storage_class")},
    )
