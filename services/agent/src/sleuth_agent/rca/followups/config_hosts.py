"""Where a host name comes from: when a workload fails to resolve or reach a host, read the
ConfigMaps its pods take configuration from (envFrom, env key references, volumes; a bounded
number) and find the key whose value names that host. Then the ConfigMap is where the fix
belongs, and the key is named. Secrets are never read: their values are not the investigator's
to see."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from sleuth_agent.rca._observe import WorkloadObservation, clip
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca.followups._context import FollowUpContext

__all__ = ["run"]

_MAX_CONFIGMAPS = 4


def _configmaps(pod: PodView) -> list[str]:
    names: list[str] = []
    for c in pod.all_containers:
        names += [name for kind, name, _p in c.env_from if kind == "configmap"]
        names += [obj for _v, kind, obj, _k in c.env_refs if kind == "configmap"]
    names += [src for _n, t, src in pod.volumes if t == "config_map"]
    return [n for n in dict.fromkeys(names) if n and n != "kube-root-ca.crt"][:_MAX_CONFIGMAPS]


async def run(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView | None) -> None:
    host = obs.variables.get("dns_host") or ""
    if pod is None or not host or not ctx.tools.has_tool("get_resource"):
        return
    names = _configmaps(pod)
    if not names:
        return
    reads = await asyncio.gather(
        *(ctx.read("get_resource", {"kind": "ConfigMap", "name": n, "namespace": obs.namespace}) for n in names)
    )
    short = host.split(".")[0]
    for name, r in zip(names, reads, strict=True):
        data = r.data.get("data") if r.ok and isinstance(r.data, Mapping) else None
        if not isinstance(data, Mapping):
            continue
        for key, value in data.items():
            text = str(value)
            if host in text or (short != host and f"{short}." in text and host.split(".", 1)[1] in text):
                obs.variables.update({"config_source": f"ConfigMap/{obs.namespace}/{name}", "config_key": str(key)})
                obs.derive("dns_config", f"The host comes from key {key} of ConfigMap {name}: {clip(text, 160)}")
                obs.cites.append((r, f"ConfigMap {name}: key {key} names {host}", [f"{key}: {clip(text, 160)}"]))
                return
