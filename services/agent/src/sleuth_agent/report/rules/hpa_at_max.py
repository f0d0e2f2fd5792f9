"""HorizontalPodAutoscalers running at their maximum: demand is above what they may scale to, so
latency and errors grow instead of replicas."""

from __future__ import annotations

import math
from collections.abc import Iterator

from sleuth_agent.report._model import Inventory, K8sObject, kubectl_patch
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report._thresholds import thresholds


@rule("hpa_at_max", title="HPA pinned at its maximum", severity="medium", kinds=("HorizontalPodAutoscaler",))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    rec = obj.record
    most = rec.get("max_replicas")
    if most is None:
        return
    most = int(most)
    current = rec.get("current_replicas")
    desired = rec.get("desired_replicas")
    limited = any(c.get("type") == "ScalingLimited" and c.get("status") == "True" and c.get("reason") == "TooManyReplicas"
                  for c in rec.get("conditions") or [])
    at_max = current is not None and int(current) >= most
    if not (at_max or limited):
        return
    new = max(most + 1, math.ceil(most * float(thresholds("hpa_at_max")["grow_by"])))
    yield Hit(
        why=f"The autoscaler of {rec.get('target') or 'its target'} runs at its maximum of {most} replicas, "
            "so more load makes the pods slower instead of adding replicas.",
        fix=kubectl_patch(obj, {"spec": {"maxReplicas": new}}, "merge").replace(
            "horizontalpodautoscaler", "hpa") + "   # if the nodes and the dependencies can take it",
        observed={"target": rec.get("target"), "max_replicas": most, "current_replicas": current,
                  "desired_replicas": desired, "scaling_limited": limited},
    )
