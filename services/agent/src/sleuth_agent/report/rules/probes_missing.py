"""Long-running containers without a liveness probe (a hung process is never restarted), or
serving ports without a readiness probe (traffic reaches pods that are not ready). Jobs and
CronJobs run to completion and are left out."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sleuth_agent.report._model import Inventory, K8sObject, containers, template_patch, to_yaml
from sleuth_agent.report._registry import Hit, rule


def first_port(c: Mapping[str, Any]) -> int | str | None:
    for p in c.get("ports") or []:
        if isinstance(p, Mapping) and p.get("containerPort") is not None and p.get("protocol", "TCP") == "TCP":
            return int(p["containerPort"])
    return None


def probe_for(port: int | str | None, kind: str) -> dict[str, Any]:
    if port is None:
        return {"exec": {"command": ["/bin/sh", "-c", "<a command that fails when the process is stuck>"]},
                "periodSeconds": 10, "failureThreshold": 3}
    if kind == "liveness":
        return {"tcpSocket": {"port": port}, "initialDelaySeconds": 10, "periodSeconds": 10, "failureThreshold": 6}
    return {"httpGet": {"path": "/ready", "port": port}, "periodSeconds": 5, "failureThreshold": 3}


@rule("probes_missing", title="No liveness or readiness probe", severity="medium",
      kinds=("Deployment", "StatefulSet", "DaemonSet", "Pod"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    for c in containers(obj):
        name = str(c.get("name") or "")
        port = first_port(c)
        missing = []
        if not c.get("livenessProbe"):
            missing.append("liveness")
        if not c.get("readinessProbe") and port is not None:
            missing.append("readiness")
        if not missing:
            continue
        probes = {f"{m}Probe": probe_for(port, m) for m in missing}
        if missing == ["liveness"]:
            why = "Without a liveness probe a hung process keeps its pod Running and is never restarted."
        elif missing == ["readiness"]:
            why = (f"Without a readiness probe the Service sends traffic to port {port} as soon as the "
                   "container starts, before it can answer.")
        else:
            why = (f"Without liveness and readiness probes a hung process is never restarted and traffic "
                   f"reaches port {port} before the container can answer.")
        yield Hit(
            why=why,
            fix=to_yaml(obj, template_patch(obj, {"containers": [{"name": name, **probes}]})),
            observed={"container": name, "missing": missing, "port": port},
        )
