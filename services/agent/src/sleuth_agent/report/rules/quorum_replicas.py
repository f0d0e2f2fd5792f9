"""Consensus systems (etcd, ZooKeeper, Kafka, Consul …) run as a StatefulSet with an even number
of members or fewer than three: losing one member loses the quorum (or an extra member adds no
tolerance)."""

from __future__ import annotations

from collections.abc import Iterator

from sleuth_agent.report._model import Inventory, K8sObject, containers, desired_replicas
from sleuth_agent.report._registry import Hit, rule
from sleuth_agent.report._thresholds import thresholds
from sleuth_agent.report.rules._helpers import image_parts


def quorum_image(obj: K8sObject) -> str:
    """The first container image whose name is a known consensus system, or ``""``."""
    known = {str(n).lower() for n in thresholds("quorum_replicas")["images"]}
    for c in containers(obj):
        image = str(c.get("image") or "")
        repo = image_parts(image)[0].rsplit("/", 1)[-1].lower()
        if repo in known or any(repo.endswith("-" + k) for k in known):  # cp-kafka, not etcd-backup-ui
            return image
    return ""


@rule("quorum_replicas", title="Quorum system with an unsafe member count", severity="high",
      kinds=("StatefulSet",))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    image = quorum_image(obj)
    replicas = desired_replicas(obj)
    least = int(thresholds("quorum_replicas")["min_members"])
    if not image or replicas == 0 or (replicas >= least and replicas % 2 == 1):
        return
    target = max(least, replicas + 1 if replicas % 2 == 0 else replicas)
    if replicas < least:
        why = (f"{replicas} member(s) of a quorum system survive no member failure, so one lost pod "
               "stops writes for the whole cluster.")
    else:
        why = (f"{replicas} members tolerate no more failures than {replicas - 1} do, so the extra "
               "member adds load and no safety.")
    yield Hit(
        why=why,
        fix=f"kubectl scale {obj.resource}{obj.ns_flag} --replicas={target}   "
            f"# add members the way {image_parts(image)[0].rsplit('/', 1)[-1]} expects (a membership change)",
        observed={"replicas": replicas, "image": image, "suggested": target},
    )
