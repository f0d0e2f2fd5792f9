"""``imagePullPolicy: Always`` on an image pinned by digest: a digest never changes, so every
pod start asks the registry for nothing, and a registry outage stops pods from starting."""

from __future__ import annotations

from collections.abc import Iterator

from sleuth_agent.report._model import (
    Inventory,
    K8sObject,
    containers,
    kubectl_patch,
    pod_spec,
    template_patch,
)
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report.rules._helpers import image_parts


@rule("pull_always_on_digest", title="imagePullPolicy Always on a digest", severity="low",
      kinds=("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    for c in containers(obj, init=True):
        image = c.get("image")
        if not isinstance(image, str) or not image_parts(image)[2] or c.get("imagePullPolicy") != "Always":
            continue
        name = str(c.get("name") or "")
        field = "initContainers" if c in (pod_spec(obj).get("initContainers") or []) else "containers"
        yield Hit(
            why=f"Image {image} is pinned by digest, so pulling it on every start only adds a registry "
                "round trip, and a registry outage stops the pod from starting.",
            fix=kubectl_patch(obj, template_patch(obj, {field: [{"name": name, "imagePullPolicy": "IfNotPresent"}]})),
            observed={"container": name, "image": image, "image_pull_policy": "Always"},
        )
