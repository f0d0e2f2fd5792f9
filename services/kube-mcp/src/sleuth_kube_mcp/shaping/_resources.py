"""Events, Services with their endpoints, PVCs, quotas and limit ranges, nodes; and any object
for get_resource (managedFields dropped, Secret values redacted)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from sleuth_kube_mcp.shaping._common import compact, conditions, parse_quantity, selector_string

__all__ = [
    "REDACTED",
    "clean_object",
    "event_record",
    "limit_range_record",
    "node_record",
    "pvc_record",
    "quota_record",
    "service_record",
    "sort_events",
]

REDACTED = "<redacted>"


def _event_time(ev: Mapping[str, Any]) -> str:
    series = ev.get("series") or {}
    return str(
        ev.get("lastTimestamp")
        or series.get("lastObservedTime")
        or ev.get("eventTime")
        or ev.get("deprecatedLastTimestamp")
        or (ev.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def event_record(ev: Mapping[str, Any]) -> dict[str, Any]:
    meta = ev.get("metadata") or {}
    io = ev.get("involvedObject") or ev.get("regarding") or {}
    src = ev.get("source") or {}
    source = ", ".join(
        x for x in (src.get("component") or ev.get("reportingComponent") or "", src.get("host") or "") if x
    )
    first = ev.get("firstTimestamp") or ev.get("eventTime") or meta.get("creationTimestamp")
    return compact(
        {
            "namespace": meta.get("namespace"),
            "type": ev.get("type"),
            "reason": ev.get("reason"),
            "message": ev.get("message") or ev.get("note"),
            "count": ev.get("count") or (ev.get("series") or {}).get("count") or 1,
            "first_timestamp": first,
            "last_timestamp": _event_time(ev) or first,
            "involved_object": compact(
                {
                    "kind": io.get("kind"),
                    "name": io.get("name"),
                    "namespace": io.get("namespace") or None,
                    "field_path": io.get("fieldPath"),
                }
            ),
            "source": source or None,
        }
    )


def sort_events(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Newest first (by last_timestamp; RFC 3339 UTC strings sort as text)."""
    return sorted(records, key=lambda r: str(r.get("last_timestamp") or ""), reverse=True)


def _addresses(items: list[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for a in items or []:
        ref = a.get("targetRef") or {}
        out.append(
            compact(
                {
                    "ip": a.get("ip"),
                    "pod": ref.get("name") if ref.get("kind") == "Pod" else None,
                    "target": None
                    if ref.get("kind") in (None, "Pod")
                    else f"{ref.get('kind')}/{ref.get('name')}",
                    "node": a.get("nodeName"),
                }
            )
        )
    return out


def service_record(svc: Mapping[str, Any], endpoints: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = svc.get("metadata") or {}
    spec = svc.get("spec") or {}
    lb = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    record: dict[str, Any] = {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "type": spec.get("type", "ClusterIP"),
        "cluster_ip": spec.get("clusterIP"),
        "external_ips": list(spec.get("externalIPs") or []) or None,
        "load_balancer": [i.get("ip") or i.get("hostname") for i in lb] or None,
        "external_name": spec.get("externalName"),
        "ports": [
            compact(
                {
                    "name": p.get("name"),
                    "port": p.get("port"),
                    "target_port": p.get("targetPort"),
                    "protocol": p.get("protocol", "TCP"),
                    "node_port": p.get("nodePort"),
                }
            )
            for p in spec.get("ports") or []
        ],
        "selector": selector_string(spec.get("selector")),
    }
    if endpoints is None:
        record["endpoints"] = None
    else:
        ready: list[dict[str, Any]] = []
        not_ready: list[dict[str, Any]] = []
        ports: list[dict[str, Any]] = []
        for subset in endpoints.get("subsets") or []:
            ready += _addresses(subset.get("addresses"))
            not_ready += _addresses(subset.get("notReadyAddresses"))
            for p in subset.get("ports") or []:
                port = compact({"name": p.get("name"), "port": p.get("port"), "protocol": p.get("protocol")})
                if port not in ports:
                    ports.append(port)
        record["endpoints"] = {"ready": ready, "not_ready": not_ready, "ports": ports}
    return compact(record)


def pvc_record(pvc: Mapping[str, Any]) -> dict[str, Any]:
    meta = pvc.get("metadata") or {}
    spec = pvc.get("spec") or {}
    status = pvc.get("status") or {}
    return compact(
        {
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "phase": status.get("phase"),
            "storage_class": spec.get("storageClassName"),
            "requested": ((spec.get("resources") or {}).get("requests") or {}).get("storage"),
            "capacity": (status.get("capacity") or {}).get("storage"),
            "volume": spec.get("volumeName") or None,
            "access_modes": list(spec.get("accessModes") or []),
            "volume_mode": spec.get("volumeMode"),
            "created": meta.get("creationTimestamp"),
            "conditions": conditions(status.get("conditions")) or None,
        }
    )


def quota_record(rq: Mapping[str, Any]) -> dict[str, Any]:
    meta = rq.get("metadata") or {}
    status = rq.get("status") or {}
    hard = dict(status.get("hard") or (rq.get("spec") or {}).get("hard") or {})
    used = dict(status.get("used") or {})
    at_limit = []
    for res, limit in hard.items():
        h, u = parse_quantity(limit), parse_quantity(used.get(res, 0))
        if h is not None and u is not None and u >= h:
            at_limit.append(res)
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "hard": hard,
        "used": used,
        "at_limit": sorted(at_limit),
    }


def limit_range_record(lr: Mapping[str, Any]) -> dict[str, Any]:
    meta = lr.get("metadata") or {}
    limits = []
    for item in (lr.get("spec") or {}).get("limits") or []:
        limits.append(
            compact(
                {
                    "type": item.get("type"),
                    "default": item.get("default"),
                    "default_request": item.get("defaultRequest"),
                    "min": item.get("min"),
                    "max": item.get("max"),
                    "max_limit_request_ratio": item.get("maxLimitRequestRatio"),
                }
            )
        )
    return {"namespace": meta.get("namespace"), "name": meta.get("name"), "limits": limits}


def node_record(node: Mapping[str, Any]) -> dict[str, Any]:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    labels = meta.get("labels") or {}
    conds = status.get("conditions") or []
    ready = next((c.get("status") for c in conds if c.get("type") == "Ready"), "Unknown")
    info = status.get("nodeInfo") or {}
    return compact(
        {
            "name": meta.get("name"),
            "ready": ready,
            "unschedulable": bool(spec.get("unschedulable", False)),
            "roles": sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")),
            "taints": [
                compact({"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect")})
                for t in spec.get("taints") or []
            ],
            "conditions": conditions(conds),
            "allocatable": dict(status.get("allocatable") or {}),
            "capacity": dict(status.get("capacity") or {}),
            "addresses": {a.get("type"): a.get("address") for a in status.get("addresses") or []},
            "zone": labels.get("topology.kubernetes.io/zone"),
            "instance_type": labels.get("node.kubernetes.io/instance-type"),
            "kubelet_version": info.get("kubeletVersion"),
            "created": meta.get("creationTimestamp"),
        }
    )


def clean_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy without ``metadata.managedFields`` and the last-applied annotation (which can carry
    a Secret's values); a Secret's ``data``/``stringData`` values become ``<redacted>`` (keys kept)."""
    out = copy.deepcopy(dict(obj))
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        ann = meta.get("annotations")
        if isinstance(ann, dict):
            ann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if out.get("kind") == "Secret":
        for key in ("data", "stringData"):
            if isinstance(out.get(key), dict):
                out[key] = {k: REDACTED for k in out[key]}
    return out
