"""Storage: the pod's PersistentVolumeClaims, a node-local PersistentVolume, the StorageClasses."""

from __future__ import annotations

import re

from sleuth_agent.rca._observe import WorkloadObservation, next_memory_limit
from sleuth_agent.rca._records import PodView, items_of
from sleuth_agent.rca.followups._context import FollowUpContext

__all__ = ["node_local", "pvc", "storage_classes"]


def _quantity_double(q: str) -> str:
    return next_memory_limit(q) if q else "<larger>"


async def pvc(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView) -> None:
    r = await ctx.read("list_pvcs", {"namespace": obs.namespace})
    if not r.ok:
        return
    claims = {str(c.get("name")): c for c in items_of(r.data, "pvcs")}
    for vol, kind, source in pod.volumes:
        if kind != "pvc":
            continue
        claim = claims.get(source)
        if claim is None:
            obs.derive("pvc", f'PersistentVolumeClaim {source} (volume {vol}) does not exist in {obs.namespace}; the pod stays Pending')
            obs.variables.setdefault("pvc", source)
            continue
        phase = str(claim.get("phase") or "")
        size = str(claim.get("capacity") or claim.get("requested") or "")
        sc = str(claim.get("storage_class") or "")
        obs.variables.update({"pvc": source, "pvc_size": size or "?", "pvc_size_next": _quantity_double(size)})
        if phase == "Bound":
            obs.derive("volume", f"Volume {vol} is PersistentVolumeClaim {source}: {size}, StorageClass {sc or 'default'}.")
            obs.cites.append((r, f"PersistentVolumeClaim {source}: Bound, {size}", [f"{source}: {size}", f"storageClassName={sc}"]))
            stranded = pod.deleting or any(e.reason == "NodeNotReady" for e in obs.events)
            if stranded:
                await node_local(ctx, obs, pod, source, sc, str(claim.get("volume") or claim.get("volume_name") or ""))
            continue
        about = [e for e in ctx.got.events.get(obs.namespace, []) if e.object_name == source]
        why = [e.message for e in about if e.type == "Warning"]
        modes = ", ".join(str(m) for m in claim.get("access_modes") or [])
        text = (
            f"PersistentVolumeClaim {source} is {phase or 'not bound'} (StorageClass {sc or 'default'}, {size or '?'} requested"
            + (f", access mode {modes}" if modes else "")
            + ")"
        )
        if why:
            text += f": {why[0]}"
        classes = await storage_classes(ctx)
        waits = any(
            e.reason == "WaitForFirstConsumer" or "waiting for first consumer" in e.message.lower() for e in about
        ) or ctx.binding_modes.get(sc or ctx.default_class, "") == "WaitForFirstConsumer"
        failed = any(e.reason in ("ProvisioningFailed", "ExternalProvisioning") and e.type == "Warning" for e in about)
        if phase == "Pending" and waits and not why and not failed:
            # The claim is provisioned once its pod is scheduled: it waits for the pod, not the reverse.
            obs.derive(
                "pvc_wait",
                f"PersistentVolumeClaim {source} is Pending only because StorageClass {sc or 'default'} binds on "
                "first consumer (WaitForFirstConsumer): its volume is created once the pod is scheduled, so the "
                "pod's scheduling failure is the cause, not the storage.",
            )
            obs.cites.append((r, f"PersistentVolumeClaim {source}: Pending (WaitForFirstConsumer)", [f"{source}: Pending", f"storageClassName={sc}", "waiting for first consumer to be created before binding"]))
            continue
        if classes is not None:
            names = [c.split(" ")[0] for c in classes]
            obs.variables["storage_classes"] = ", ".join(classes) or "none"
            if sc and sc not in names:
                text += f". StorageClass {sc} does not exist; the cluster has: {', '.join(classes) or 'none'}"
        obs.derive("pvc", text + ".")
        obs.cites.append((r, f"PersistentVolumeClaim {source}: {phase}", [f"{source}: {phase}", f"storageClassName={sc}", *why[:1]]))


async def node_local(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView, claim: str, sc: str, volume: str) -> None:
    """Is the claim's volume tied to one node (a local or hostPath PV, node affinity on the PV,
    or a StorageClass of local volumes)? Then a replacement pod cannot run anywhere else."""
    why = ""
    if volume:
        r = await ctx.read("get_resource", {"kind": "PersistentVolume", "name": volume})
        if r.ok and isinstance(r.data, dict):
            spec = r.data.get("spec") or {}
            terms = ((spec.get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms") or []
            hosts = [
                str(v)
                for t in terms
                for e in t.get("matchExpressions") or []
                if e.get("key") == "kubernetes.io/hostname"
                for v in e.get("values") or []
            ]
            if "local" in spec or "hostPath" in spec or hosts:
                kind = "a local volume" if "local" in spec else "a hostPath volume" if "hostPath" in spec else "a volume"
                why = f"PersistentVolume {volume} is {kind}" + (f" pinned to node {', '.join(hosts)}" if hosts else "")
                obs.cites.append((r, f"PersistentVolume {volume}: node-local", [why]))
    if not why and sc:
        await storage_classes(ctx)
        prov = ctx.provisioners.get(sc, "")
        if prov == "kubernetes.io/no-provisioner" or re.search(r"local|hostpath|topolvm", prov, re.IGNORECASE):
            why = f"StorageClass {sc} (provisioner {prov}) provides node-local volumes"
        elif not prov and re.search(r"local|hostpath", sc, re.IGNORECASE):
            why = (
                f"StorageClass {sc} looks like node-local storage by its name (its provisioner and the "
                "PersistentVolume could not be read)"
            )
    if why:
        obs.derive(
            "node_local",
            f"{why}: claim {claim} holds data on that node, so a replacement pod can only start once the node "
            "is back (or the data is restored elsewhere and the claim recreated).",
        )
        obs.variables["local_pv_note"] = (
            f" Its claim {claim} is node-local ({why}): the new pod cannot start on another node until the node "
            "returns or the claim is recreated."
        )


async def storage_classes(ctx: FollowUpContext) -> list[str] | None:
    if not ctx.tools.has_tool("list_storage"):
        return None
    r = await ctx.read("list_storage", {"kinds": ["storageclasses"]})
    if not r.ok:
        return None
    out = []
    for c in items_of(r.data, "items"):
        out.append(f"{c.get('name')}{' (default)' if c.get('default') else ''}")
        ctx.binding_modes[str(c.get("name"))] = str(c.get("volume_binding_mode") or "")
        ctx.provisioners[str(c.get("name"))] = str(c.get("provisioner") or "")
        if c.get("default"):
            ctx.default_class = str(c.get("name"))
    ctx.storage_result = r
    return out
