"""Deployments whose rollout stopped: ``Progressing=False`` with ``ProgressDeadlineExceeded``."""

from __future__ import annotations

from collections.abc import Iterator

from sleuth_agent.report._model import Inventory, K8sObject
from sleuth_agent.report._registry import Hit, rule


@rule("rollout_stuck", title="Rollout stuck", severity="high", kinds=("Deployment",))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    status = obj.data.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
            meta = obj.data.get("metadata") or {}
            revision = str((meta.get("annotations") or {}).get("deployment.kubernetes.io/revision") or "")
            deadline = (obj.data.get("spec") or {}).get("progressDeadlineSeconds", 600)
            rev = f"revision {revision}" if revision else "the current revision"
            yield Hit(
                why=f"The rollout of {rev} has made no progress for over {deadline}s, so the "
                    "Deployment runs with fewer available pods than it asks for.",
                fix=f"kubectl rollout status {obj.resource}{obj.ns_flag}   # why is {rev} stuck? "
                    f"(sleuth investigate tells you)\n"
                    f"kubectl rollout undo {obj.resource}{obj.ns_flag}     # or go back to the previous revision",
                observed={"revision": revision, "progress_deadline_seconds": deadline,
                          "message": str(cond.get("message") or "")[:200],
                          "available": status.get("availableReplicas", 0),
                          "replicas": (obj.data.get("spec") or {}).get("replicas", 1)},
            )
            return
