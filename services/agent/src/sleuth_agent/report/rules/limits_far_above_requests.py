"""Containers whose limits are far above their requests: the scheduler places them by the
request, so the node overcommits and, under pressure, they are the ones OOM-killed or throttled."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from sleuth_agent.report._model import Inventory, K8sObject, containers
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report._thresholds import thresholds
from sleuth_agent.report.rules._helpers import quantity, round_up_quantity


@rule("limits_far_above_requests", title="Limits far above requests", severity="low",
      kinds=("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    ratios = thresholds("limits_far_above_requests")
    for c in containers(obj):
        res = c.get("resources") or {}
        name = str(c.get("name") or "")
        for resource, most in (("memory", Decimal(str(ratios["memory_ratio"]))), ("cpu", Decimal(str(ratios["cpu_ratio"])))):
            req, lim = quantity(res, "requests", resource), quantity(res, "limits", resource)
            if req is None or lim is None or req <= 0 or lim / req <= most:
                continue
            ratio = lim / req
            if resource == "memory":
                new = round_up_quantity(lim, "memory")
                why = (f"The memory limit is {ratio:.1f}x the request, so the node promises memory it "
                       "may not have and this container is among the first killed when it runs short.")
            else:
                new = round_up_quantity(lim / most, "cpu")
                why = (f"The CPU limit is {ratio:.1f}x the request, so the scheduler plans for far less "
                       "CPU than the container uses at its peaks and the node runs hot.")
            yield Hit(
                why=why,
                fix=f"kubectl set resources {obj.resource}{obj.ns_flag} -c {name} --requests={resource}={new}",
                observed={"container": name, "resource": resource, "request": str((res.get("requests") or {})[resource]),
                          "limit": str((res.get("limits") or {})[resource]), "ratio": round(float(ratio), 2)},
            )
