"""Workloads with one replica and no PodDisruptionBudget: every drain or node upgrade takes the
service down, with nothing to stop the eviction or keep a second copy up."""

from __future__ import annotations

from collections.abc import Iterator

from sleuth_agent.report._model import (
    Inventory,
    K8sObject,
    desired_replicas,
    selector_labels,
    template_labels,
)
from sleuth_agent.report._registry import Hit, rule
from sleuth_common.k8s import as_label_selector


def covered_by_pdb(obj: K8sObject, inv: Inventory) -> list[str]:
    """Names of the PDBs of the namespace whose selector selects the workload's pods."""
    labels = template_labels(obj)
    out = []
    for pdb in inv.of("PodDisruptionBudget", obj.namespace):
        sel = pdb.record.get("selector")
        if isinstance(sel, str) and sel and as_label_selector(sel).matches(labels):  # type: ignore[union-attr]
            out.append(pdb.name)
    return out


def hpa_min(obj: K8sObject, inv: Inventory) -> int | None:
    for hpa in inv.of("HorizontalPodAutoscaler", obj.namespace):
        if hpa.record.get("target") == f"{obj.kind}/{obj.name}":
            value = hpa.record.get("min_replicas", 1)
            return value if isinstance(value, int) else None
    return None


@rule("single_replica_no_pdb", title="One replica, no PodDisruptionBudget", severity="medium",
      kinds=("Deployment", "StatefulSet"), reads=("PodDisruptionBudget", "HorizontalPodAutoscaler"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    if desired_replicas(obj) != 1 or covered_by_pdb(obj, inv):
        return
    low = hpa_min(obj, inv)
    if low is not None and low >= 2:
        return  # the HPA keeps two or more
    sel = selector_labels(obj)
    selector = str(sel) if sel is not None else "app=" + obj.name
    scale = f"kubectl scale {obj.resource}{obj.ns_flag} --replicas=2"
    if obj.kind == "StatefulSet":
        scale += "   # only if the software runs replicated"
    yield Hit(
        why="With a single replica and no PodDisruptionBudget, every node drain or upgrade evicts "
            "the only pod and the service is down until it is rescheduled.",
        fix=f"{scale}\nkubectl create poddisruptionbudget {obj.name}{obj.ns_flag} "
            f"--selector={selector} --max-unavailable=1",
        observed={"replicas": 1, "selector": selector, "pdbs": 0},
    )
