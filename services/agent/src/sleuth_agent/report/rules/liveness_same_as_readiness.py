"""Liveness probes that check exactly what the readiness probe checks: a dependency outage that
should only take pods out of the Service restarts them all, over and over."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sleuth_agent.report._model import Inventory, K8sObject, containers, template_patch, to_yaml
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report._thresholds import thresholds

_HANDLERS = ("httpGet", "tcpSocket", "exec", "grpc")


def handler(probe: Mapping[str, Any]) -> tuple[str, Any] | None:
    for key in _HANDLERS:
        if probe.get(key) is not None:
            return key, probe[key]
    return None


@rule("liveness_same_as_readiness", title="Liveness probe identical to readiness", severity="medium",
      kinds=("Deployment", "StatefulSet", "DaemonSet", "Pod"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    later = int(thresholds("liveness_same_as_readiness")["liveness_failure_threshold"])
    for c in containers(obj):
        live, ready = c.get("livenessProbe"), c.get("readinessProbe")
        if not isinstance(live, Mapping) or not isinstance(ready, Mapping):
            continue
        h = handler(live)
        if h is None or h != handler(ready):
            continue
        name = str(c.get("name") or "")
        new = dict(live)
        if h[0] == "httpGet" and isinstance(h[1], Mapping):
            new["httpGet"] = {**h[1], "path": "/livez"}
        new["failureThreshold"] = max(later, int(live.get("failureThreshold", 3)))
        yield Hit(
            why="The liveness probe checks exactly what readiness checks, so a slow dependency that "
                "should only take pods out of the Service makes Kubernetes restart them all.",
            fix=to_yaml(obj, template_patch(obj, {"containers": [{"name": name, "livenessProbe": new}]}))
                + ("\n# /livez: an endpoint that answers while the process itself is alive" if h[0] == "httpGet" else ""),
            observed={"container": name, "probe": {h[0]: h[1]},
                      "identical_settings": live == ready},
        )
