"""``sleuth.authz.inventory``: which object names live in which namespace of a cluster.

The scope filter withholds a kept line of text that names an object of a namespace outside the
caller's scope (DESIGN §2, step 3). This module builds its index from the lists authz-cache already
holds for ``sleuth.authz.resolve`` — pods and services, no further list calls:

- pod and service names;
- the workloads that own pods, from the pods' ``ownerReferences``: the owner itself (ReplicaSet,
  StatefulSet, DaemonSet, Job, or an operator's kind) and its own owner where the name gives it away
  — a ReplicaSet's Deployment (the ReplicaSet name minus its ``pod-template-hash`` suffix) and a
  Job's CronJob (the Job name minus its ``-<minutes since epoch>`` suffix). Node owners (static pods)
  are not a namespace's names and are left out.
- ConfigMap and Secret names are not listed by authz-cache, so they are not part of it.

Only *distinctive* names are kept: names shorter than ``MIN_LENGTH`` and names every cluster has
(``default``, ``kubernetes``, ``kube-dns`` …) would withhold innocent lines everywhere and tell nobody
anything. The reply is capped to fit one NATS message (``max_bytes``): names are ranked by
:func:`distinctiveness` and the least distinctive dropped first, with ``truncated`` set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from sleuth_common.messages.authz import InventoryReply

__all__ = ["GENERIC_NAMES", "MIN_LENGTH", "capped_reply", "distinctiveness", "pod_names"]

MIN_LENGTH = 4
GENERIC_NAMES = frozenset({
    "default", "kubernetes", "kube-root-ca.crt", "kube-dns", "coredns", "kube-proxy",
})
"""Names every cluster has: public knowledge, and far too common in text to withhold lines for."""

_CRONJOB_JOB = re.compile(r"^(?P<cronjob>.+)-\d{8,}$")
_HASH_SUFFIX = re.compile(r"^(?P<name>.+)-(?=[a-z0-9]*\d)[a-z0-9]{6,10}$")


def _owners(pod: dict[str, Any]) -> Iterator[str]:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    template_hash = labels.get("pod-template-hash") if isinstance(labels, dict) else None
    for ref in meta.get("ownerReferences") or []:
        if not isinstance(ref, dict):
            continue
        kind, name = ref.get("kind"), ref.get("name")
        if not isinstance(name, str) or not name or kind == "Node":
            continue
        yield name
        if kind == "ReplicaSet":
            if isinstance(template_hash, str) and template_hash and name.endswith(f"-{template_hash}"):
                yield name[: -len(template_hash) - 1]
            elif m := _HASH_SUFFIX.match(name):
                yield m["name"]
        elif kind == "Job" and (m := _CRONJOB_JOB.match(name)):
            yield m["cronjob"]


def pod_names(pod: dict[str, Any]) -> Iterator[str]:
    """The pod's own name, then the names of the workloads that own it."""
    name = (pod.get("metadata") or {}).get("name")
    if isinstance(name, str) and name:
        yield name
    yield from _owners(pod)


def distinctive(name: str) -> bool:
    return len(name) >= MIN_LENGTH and name not in GENERIC_NAMES


def distinctiveness(name: str, spread: int = 1) -> int:
    """Higher is more distinctive: longer, more ``-``/``.``-separated parts, digits; a name held by
    ``spread`` namespaces counts less for each extra one."""
    parts = len(re.split(r"[-.]", name))
    digits = 4 if any(c.isdigit() for c in name) else 0
    return len(name) + 3 * (parts - 1) + digits - 6 * (spread - 1)


def _cost(text: str) -> int:
    return len(json.dumps(text)) + 1  # the string and a separator


def capped_reply(cluster: str, inventory: dict[str, set[str]], max_bytes: int) -> InventoryReply:
    """The reply for ``inventory`` (namespace → names), at most ``max_bytes`` long as JSON."""
    spread: dict[str, int] = {}
    for names in inventory.values():
        for name in names:
            spread[name] = spread.get(name, 0) + 1
    ranked = sorted(
        ((distinctiveness(name, spread[name]), ns, name) for ns, names in inventory.items() for name in names
         if distinctive(name)),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    budget = max_bytes - len(InventoryReply(cluster=cluster, truncated=True).to_bytes())
    kept: dict[str, list[str]] = {}
    used, truncated = 0, False
    for _score, ns, name in ranked:
        cost = _cost(name) + (0 if ns in kept else _cost(ns) + 3)
        if used + cost > budget:
            truncated = True
            break
        kept.setdefault(ns, []).append(name)
        used += cost
    reply = _reply(cluster, kept, truncated)
    while len(reply.to_bytes()) > max_bytes and kept:  # the estimate above is exact for DNS names
        ns = min(kept, key=lambda n: distinctiveness(kept[n][-1]))
        kept[ns].pop()
        if not kept[ns]:
            del kept[ns]
        reply = _reply(cluster, kept, True)
    return reply


def _reply(cluster: str, kept: dict[str, list[str]], truncated: bool) -> InventoryReply:
    return InventoryReply(cluster=cluster, names={ns: tuple(sorted(kept[ns])) for ns in sorted(kept)},
                          truncated=truncated)


def add_names(inventory: dict[str, set[str]], namespace: str, names: Iterable[str]) -> None:
    inventory.setdefault(namespace, set()).update(names)
