"""PodDisruptionBudgets that allow no voluntary eviction at all (``maxUnavailable: 0``,
``minAvailable: 100%``, or ``minAvailable`` at least the replicas of what they select): node
drains and cluster upgrades hang on them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sleuth_agent.report._model import Inventory, K8sObject, desired_replicas, template_labels
from sleuth_agent.report._registry import Hit, rule
from sleuth_common.k8s import as_label_selector


def _zero(value: Any) -> bool:
    return value == 0 or (isinstance(value, str) and value.strip() in ("0", "0%"))


def _selected(pdb: K8sObject, inv: Inventory) -> list[K8sObject]:
    sel = pdb.record.get("selector")
    if not isinstance(sel, str) or not sel:
        return []
    selector = as_label_selector(sel)
    assert selector is not None
    return [w for kind in ("Deployment", "StatefulSet") for w in inv.of(kind, pdb.namespace)
            if w.data and selector.matches(template_labels(w))]


@rule("pdb_blocks_eviction", title="PodDisruptionBudget blocks every eviction", severity="high",
      kinds=("PodDisruptionBudget",), reads=("Deployment", "StatefulSet"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    min_av, max_un = obj.record.get("min_available"), obj.record.get("max_unavailable")
    workloads = _selected(obj, inv)
    replicas = sum(desired_replicas(w) for w in workloads) if workloads else None
    if _zero(max_un):
        what = f"maxUnavailable is {max_un}"
    elif isinstance(min_av, str) and min_av.strip() == "100%":
        what = "minAvailable is 100%"
    elif isinstance(min_av, int) and not isinstance(min_av, bool) and replicas is not None and min_av >= replicas > 0:
        what = f"minAvailable is {min_av} and the {', '.join(w.ref for w in workloads)} it protects run {replicas}"
    else:
        return
    patch = '{"spec":{"minAvailable":null,"maxUnavailable":1}}'
    yield Hit(
        why=f"{what}, so no pod it covers may ever be evicted and every node drain or cluster "
            "upgrade waits on it forever.",
        fix=f"kubectl patch pdb {obj.name}{obj.ns_flag} --type=merge -p '{patch}'",
        observed={"min_available": min_av, "max_unavailable": max_un, "replicas": replicas,
                  "selects": [w.ref for w in workloads],
                  "disruptions_allowed": obj.record.get("disruptions_allowed")},
    )
