"""Images pulled by ``:latest`` or without any tag: what runs changes with every pull, two pods
of one workload can run different code, and a rollback goes nowhere."""

from __future__ import annotations

from collections.abc import Iterator

from sleuth_agent.report._model import Inventory, K8sObject, containers
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report.rules._helpers import image_parts


@rule("image_tag_mutable", title=":latest or untagged image", severity="medium",
      kinds=("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    for c in containers(obj, init=True):
        image = c.get("image")
        if not isinstance(image, str) or not image:
            continue
        repo, tag, digest = image_parts(image)
        if digest or (tag and tag != "latest"):
            continue
        name = str(c.get("name") or "")
        what = "the :latest tag" if tag else "no tag (so :latest)"
        yield Hit(
            why=f"Image {image} uses {what}, so what runs changes with every pull and a rollback "
                "cannot bring back the previous code.",
            fix=f"kubectl set image {obj.resource}{obj.ns_flag} {name}={repo}:<version>   "
                "# a fixed version tag, or @sha256:<digest> of what runs now",
            observed={"container": name, "image": image},
        )
