"""Multi-replica workloads with neither pod anti-affinity nor a topology spread constraint: the
scheduler may put every replica on one node (or one zone), and one failure takes them all."""

from __future__ import annotations

from collections.abc import Iterator

from sleuth_agent.report._model import (
    Inventory,
    K8sObject,
    desired_replicas,
    pod_spec,
    selector_labels,
    template_patch,
    to_yaml,
)
from sleuth_agent.report._registry import Hit, rule


@rule("no_spread", title="Replicas not spread across nodes", severity="medium",
      kinds=("Deployment", "StatefulSet"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    replicas = desired_replicas(obj)
    spec = pod_spec(obj)
    if replicas < 2 or spec.get("topologySpreadConstraints") or (spec.get("affinity") or {}).get("podAntiAffinity"):
        return
    sel = selector_labels(obj)
    selector = sel.to_dict() if sel is not None else {"matchLabels": {"app": obj.name}}
    spread = [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": selector},
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": selector},
    ]
    yield Hit(
        why=f"Nothing spreads the {replicas} replicas over nodes or zones, so the scheduler may place them "
            "together and one node failure takes every replica down at once.",
        fix=to_yaml(obj, template_patch(obj, {"topologySpreadConstraints": spread})),
        observed={"replicas": replicas, "selector": str(sel) if sel is not None else ""},
    )
