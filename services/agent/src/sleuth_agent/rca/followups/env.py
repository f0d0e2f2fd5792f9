"""A log says an environment variable is missing: what the container's env and envFrom define."""

from __future__ import annotations

from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation, missing_env_names
from sleuth_agent.rca.followups._context import FollowUpContext

__all__ = ["run"]


async def run(ctx: FollowUpContext, obs: WorkloadObservation, container: Any) -> None:
    """A log says an environment variable is missing: does the container's env, or a
    ConfigMap/Secret it loads with envFrom, define it? Names and keys only, never values."""
    wanted: list[str] = []
    for (_pod, cname, _previous), text in obs.logs.items():
        if cname == container.name:
            wanted.extend(missing_env_names(text))
    wanted = list(dict.fromkeys(wanted))[:3]
    if not wanted:
        return
    name = wanted[0]
    obs.variables["env_name"] = name
    if name in container.env_names:
        obs.derive("env_present", f"Container {container.name} sets {name} in its env.")
        return
    described: list[str] = []
    unreadable: list[str] = []
    for kind, source, prefix in container.env_from:
        if prefix and not name.startswith(prefix):
            described.append(f"{kind} {source} (prefix {prefix})")
            continue
        key = name[len(prefix) :]
        api_kind = "ConfigMap" if kind == "configmap" else "Secret"
        r = await ctx.read("get_resource", {"kind": api_kind, "name": source, "namespace": obs.namespace})
        if not r.ok:
            if "NotFound" in r.error or '"code":404' in r.error or "not found" in r.error.lower():
                described.append(f"{api_kind} {source} (which does not exist)")
            else:
                unreadable.append(f"{api_kind} {source}")
            continue
        data = r.data if isinstance(r.data, dict) else {}
        keys = sorted({*(data.get("data") or {}), *(data.get("binaryData") or data.get("binary_data") or {})})
        shown = ", ".join(keys[:12]) + (", ..." if len(keys) > 12 else "")
        if key in keys:
            obs.derive("env_present", f"{api_kind} {source}, loaded by {container.name} with envFrom, has the key {key}.")
            obs.cites.append((r, f"{api_kind} {source}: has key {key}", [f"keys: {shown}"]))
            return
        described.append(f"{api_kind} {source} (keys: {shown or 'none'})")
        obs.cites.append((r, f"{api_kind} {source}: {len(keys)} key(s), no {key}", [f"keys: {shown or 'none'}"]))
    env = ", ".join(container.env_names) or "no variables"
    obs.variables["env_sources"] = ", ".join(
        [*(f"{k} {n}" for k, n, _p in container.env_from)]
    ) or "none"
    where = f"its env sets {env}"
    if described:
        where += "; its envFrom loads " + "; ".join(described)
    if unreadable:
        obs.derive(
            "env_unconfirmed",
            f"The log says environment variable {name} is missing; {where}. "
            f"{', '.join(unreadable)} could not be read with your access, so whether it defines {name} is unknown.",
        )
        return
    obs.derive("env_missing", f"Nothing defines {name} for container {container.name}: {where}.")
