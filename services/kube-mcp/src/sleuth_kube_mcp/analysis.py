"""The two composite tools: ``analyze_logs`` (a workload's pods read together, lines grouped into
patterns) and ``subgraph`` (the topology around one object). Both read through ``KubeReader``'s
client as the caller (``Caller``), and stay inside the namespace they were given."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Mapping
from typing import Any

from sleuth_common.k8s import LabelSelector, SelectorError, owner_refs, parse_time, strip_pod_template_hash
from sleuth_kube_mcp import shaping
from sleuth_kube_mcp.kube import Caller, KubeApiError, KubeUnavailable
from sleuth_kube_mcp.reads import BadRequest, KubeReader
from sleuth_kube_mcp.shaping._logpatterns import PatternTable

__all__ = ["analyze_logs", "subgraph"]

CORRELATION_NOTE = (
    "Timing is correlation, not cause: a pattern that starts near the reference time is a lead to "
    "check, not proof."
)
_WORKLOAD_PATHS = {
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments/{name}",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets/{name}",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets/{name}",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs/{name}",
}


def _selector(value: Any, plain_map: bool = False) -> LabelSelector | None:
    """The selector an object carries; None (selects nothing) when it has none or an invalid one.
    ``plain_map``: a Service's ``map[string]string``, which the API server drops when empty."""
    if value is None or (plain_map and not value):
        return None
    try:
        return LabelSelector.from_map(value) if plain_map else LabelSelector.from_dict(value)
    except SelectorError:
        return None


def _owned_by(pod: Mapping[str, Any], workload: str) -> bool:
    """Is ``workload`` an owner of ``pod``, or the Deployment behind its ReplicaSet owner?"""
    return any(r.name == workload or strip_pod_template_hash(r.name) == workload for r in owner_refs(pod))


def _pod_health(pod: Mapping[str, Any]) -> tuple[int, int, str]:
    """Sort key: unhealthy pods first, then by restarts (most first), then by name."""
    status = pod.get("status") or {}
    cs = status.get("containerStatuses") or []
    ready = bool(cs) and all(c.get("ready") for c in cs) and status.get("phase") == "Running"
    restarts = sum(int(c.get("restartCount") or 0) for c in cs)
    return (1 if ready else 0, -restarts, str((pod.get("metadata") or {}).get("name")))


async def _workload_pods(
    reader: KubeReader, namespace: str, workload: str, kind: str, label_selector: str, caller: Caller | None
) -> tuple[list[dict[str, Any]], bool]:
    """The workload's pods, unhealthy first, and whether more pods than were read exist."""
    selector = label_selector
    if not selector and kind in _WORKLOAD_PATHS and workload:
        obj = await reader.client.get_json(
            _WORKLOAD_PATHS[kind].format(ns=namespace, name=workload), None, caller
        )
        selector = shaping.selector_string((obj.get("spec") or {}).get("selector")) or ""

    def mine(p: dict[str, Any]) -> dict[str, Any] | None:
        if workload and not selector and not (_owned_by(p, workload) or str((p.get("metadata") or {}).get("name")) == workload):
            return None
        return p

    # Unhealthy first needs them all: up to max_items pods are read (then the rest are said to be unread).
    listing = await reader.client.list_items(
        f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": selector}, caller,
        limit=reader.max_items, shape=mine, max_scan=reader.max_scan,
    )
    return sorted(listing.items, key=_pod_health), listing.more


async def analyze_logs(
    reader: KubeReader,
    namespace: str,
    workload: str = "",
    kind: str = "",
    label_selector: str = "",
    reference_time: str = "",
    max_pods: int = 20,
    tail_lines: int = 200,
    max_total_bytes: int = 4 * 2**20,
    concurrency: int = 5,
    per_pod_timeout: float = 10.0,
    caller: Caller | None = None,
) -> dict[str, Any]:
    if not (workload or label_selector):
        raise BadRequest("pass workload (a Deployment, StatefulSet, Job... name) or label_selector")
    reference = parse_time(reference_time) if reference_time else None
    if reference_time and reference is None:
        raise BadRequest(f"reference_time {reference_time!r} is not an RFC 3339 time")
    pods, unread = await _workload_pods(reader, namespace, workload, kind, label_selector, caller)
    skipped: list[dict[str, str]] = []
    for p in pods[max_pods:]:
        skipped.append(
            {"pod": str((p.get("metadata") or {}).get("name")), "reason": f"more than {max_pods} pods"}
        )
    chosen = pods[:max_pods]
    table = PatternTable()
    sem = asyncio.Semaphore(max(1, concurrency))
    budget = {"bytes": 0}
    windows_full: list[str] = []
    read: list[str] = []

    async def one_log(pod: str, container: str, previous: bool) -> None:
        if budget["bytes"] >= max_total_bytes:
            skipped.append(
                {"pod": pod, "reason": f"the {max_total_bytes}-byte budget was spent", "container": container}
            )
            return
        text, _truncated = await reader.client.get_text(
            f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
            {
                "container": container,
                "previous": "true" if previous else None,
                "tailLines": tail_lines,
                "timestamps": "true",
            },
            caller,
            max_bytes=reader.max_log_bytes,
        )
        budget["bytes"] += len(text)
        lines = text.splitlines()
        if len(lines) >= tail_lines:
            windows_full.append(f"{pod}/{container}{' (previous)' if previous else ''}")
        for line in lines:
            table.add(pod, line, previous)

    async def one_pod(pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        name = str(meta.get("name"))
        status = pod.get("status") or {}
        statuses = {
            c.get("name"): c
            for c in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
        }
        specs = [
            *((pod.get("spec") or {}).get("initContainers") or []),
            *((pod.get("spec") or {}).get("containers") or []),
        ]
        async with sem:
            try:
                async with asyncio.timeout(per_pod_timeout):
                    jobs = []
                    for c in specs:
                        cname = str(c.get("name"))
                        st = statuses.get(cname) or {}
                        state = st.get("state") or {}
                        if "running" in state or "terminated" in state:
                            jobs.append(one_log(name, cname, False))
                        if int(st.get("restartCount") or 0) > 0 or (st.get("lastState") or {}).get(
                            "terminated"
                        ):
                            jobs.append(one_log(name, cname, True))
                    if not jobs:
                        skipped.append(
                            {
                                "pod": name,
                                "reason": f"no container has started ({status.get('phase', 'unknown')})",
                            }
                        )
                        return
                    results = await asyncio.gather(*jobs, return_exceptions=True)
                    errors = [r for r in results if isinstance(r, BaseException)]
                    for e in errors:
                        if not isinstance(e, KubeApiError | KubeUnavailable):
                            raise e
                    if errors and len(errors) == len(results):
                        skipped.append({"pod": name, "reason": f"logs unreadable: {errors[0]}"[:200]})
                    else:
                        read.append(name)
            except TimeoutError:
                skipped.append({"pod": name, "reason": f"no answer within {per_pod_timeout:g}s"})

    await asyncio.gather(*(one_pod(p) for p in chosen))
    out: dict[str, Any] = {
        "namespace": namespace,
        "workload": workload or None,
        "label_selector": label_selector or None,
        "pods_found": len(pods),
        "pods_read": sorted(read),
        "pods_skipped": skipped,
        "lines_per_container": tail_lines,
        "patterns": table.rows(reference),
        "note": CORRELATION_NOTE,
    }
    if reference is not None:
        out["reference_time"] = reference_time
    if unread:
        out["pods_unread"] = (f"the workload has more than the {len(pods)} pods read (the first by name); "
                              "the unhealthy ones among the others were not considered")
    if windows_full:
        out["windows_full"] = sorted(windows_full)
        out["windows_full_note"] = (
            "these logs filled the line window, so a pattern may have started before its first_seen"
        )
    return shaping.compact(out)


# -- subgraph ---------------------------------------------------------------------------------

_SUBGRAPH_LISTS = {
    "pods": "/api/v1/namespaces/{ns}/pods",
    "services": "/api/v1/namespaces/{ns}/services",
    "endpoints": "/api/v1/namespaces/{ns}/endpoints",
    "pvcs": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "configmaps": "/api/v1/namespaces/{ns}/configmaps",
    "secrets": "/api/v1/namespaces/{ns}/secrets",
    "deployments": "/apis/apps/v1/namespaces/{ns}/deployments",
    "replicasets": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "statefulsets": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "daemonsets": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "jobs": "/apis/batch/v1/namespaces/{ns}/jobs",
    "cronjobs": "/apis/batch/v1/namespaces/{ns}/cronjobs",
    "ingresses": "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
    "networkpolicies": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
    "hpas": "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
    "pdbs": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
}
_KIND_OF = {
    "pods": "Pod",
    "services": "Service",
    "pvcs": "PersistentVolumeClaim",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "deployments": "Deployment",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
    "daemonsets": "DaemonSet",
    "jobs": "Job",
    "cronjobs": "CronJob",
    "ingresses": "Ingress",
    "networkpolicies": "NetworkPolicy",
    "hpas": "HorizontalPodAutoscaler",
    "pdbs": "PodDisruptionBudget",
}


class _Graph:
    def __init__(self, namespace: str) -> None:
        self.ns = namespace
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: list[tuple[str, str, str]] = []

    def node_id(self, kind: str, name: str, cluster_scoped: bool = False) -> str:
        return f"{kind}/{name}" if cluster_scoped else f"{kind}/{self.ns}/{name}"

    def add(self, kind: str, name: str, *, cluster_scoped: bool = False, **info: Any) -> str:
        nid = self.node_id(kind, name, cluster_scoped)
        node = self.nodes.setdefault(nid, {"id": nid, "kind": kind, "name": name})
        if cluster_scoped:
            node["cluster_scoped"] = True
        else:
            node["namespace"] = self.ns
        node.update({k: v for k, v in info.items() if v is not None})
        return nid

    def link(self, a: str, b: str, rel: str) -> None:
        if (a, b, rel) not in self.edges:
            self.edges.append((a, b, rel))


def _status_of(kind: str, obj: Mapping[str, Any]) -> str | None:
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return shaping.pod_status_text(obj)
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        return f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)} ready"
    if kind == "DaemonSet":
        return f"{status.get('numberReady', 0)}/{status.get('desiredNumberScheduled', 0)} ready"
    if kind == "Job":
        return f"succeeded {status.get('succeeded', 0)}, failed {status.get('failed', 0)}"
    if kind == "PersistentVolumeClaim":
        return str(status.get("phase") or "")
    return None


def _pod_refs(pod: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(kind, name, relation) of what a pod spec references by name."""
    spec = pod.get("spec") or {}
    refs: list[tuple[str, str, str]] = []
    for v in spec.get("volumes") or []:
        if "configMap" in v:
            refs.append(("ConfigMap", str(v["configMap"].get("name")), "mounts"))
        if "secret" in v:
            refs.append(("Secret", str(v["secret"].get("secretName")), "mounts"))
        if "persistentVolumeClaim" in v:
            refs.append(("PersistentVolumeClaim", str(v["persistentVolumeClaim"].get("claimName")), "mounts"))
        for src in (v.get("projected") or {}).get("sources") or []:
            if "configMap" in src:
                refs.append(("ConfigMap", str(src["configMap"].get("name")), "mounts"))
            if "secret" in src:
                refs.append(("Secret", str(src["secret"].get("name")), "mounts"))
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for e in c.get("env") or []:
            vf = e.get("valueFrom") or {}
            if "configMapKeyRef" in vf:
                refs.append(("ConfigMap", str(vf["configMapKeyRef"].get("name")), "env-from"))
            if "secretKeyRef" in vf:
                refs.append(("Secret", str(vf["secretKeyRef"].get("name")), "env-from"))
        for e in c.get("envFrom") or []:
            if "configMapRef" in e:
                refs.append(("ConfigMap", str(e["configMapRef"].get("name")), "env-from"))
            if "secretRef" in e:
                refs.append(("Secret", str(e["secretRef"].get("name")), "env-from"))
    for s in spec.get("imagePullSecrets") or []:
        refs.append(("Secret", str(s.get("name")), "pulls-with"))
    return list(dict.fromkeys(refs))


async def _read_namespace(
    reader: KubeReader, namespace: str, caller: Caller | None
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Every list of ``_SUBGRAPH_LISTS`` (the first ``max_items`` of each), and the lists that hold more."""
    async def one(key: str, path: str) -> tuple[str, list[dict[str, Any]], bool]:
        try:
            listing = await reader.client.list_items(path.format(ns=namespace), None, caller, limit=reader.max_items)
        except KubeApiError:
            return key, [], False
        return key, listing.items, listing.more

    got = await asyncio.gather(*(one(k, p) for k, p in _SUBGRAPH_LISTS.items()))
    return {k: items for k, items, _more in got}, [k for k, _items, more in got if more]


def _build(namespace: str, objs: dict[str, list[dict[str, Any]]]) -> _Graph:
    g = _Graph(namespace)
    existing = _add_objects(g, objs)
    _link_owners(g, objs)
    pods = objs.get("pods", [])
    _link_pods(g, pods, existing)
    _link_claims(g, objs.get("pvcs", []))
    _link_services(g, objs, pods)
    _link_ingresses(g, objs.get("ingresses", []), existing)
    _link_hpas(g, objs.get("hpas", []))
    _link_pod_selectors(g, objs, pods)
    return g


def _name(o: Mapping[str, Any]) -> str:
    return str((o.get("metadata") or {}).get("name"))


def _add_objects(g: _Graph, objs: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, str], bool]:
    """Every object read, with its status: the (kind, name) pairs that exist."""
    existing: dict[tuple[str, str], bool] = {}
    for key, items in objs.items():
        kind = _KIND_OF.get(key)
        if kind is None:
            continue
        for o in items:
            name = _name(o)
            existing[(kind, name)] = True
            g.add(kind, name, status=_status_of(kind, o))
    return existing


def _link_owners(g: _Graph, objs: dict[str, list[dict[str, Any]]]) -> None:
    for key, items in objs.items():
        kind = _KIND_OF.get(key)
        if kind is None:
            continue
        for o in items:
            meta = o.get("metadata") or {}
            me = g.node_id(kind, str(meta.get("name")))
            for ref in meta.get("ownerReferences") or []:
                g.link(me, g.add(str(ref.get("kind")), str(ref.get("name"))), "owned-by")


def _link_pods(g: _Graph, pods: list[dict[str, Any]], existing: dict[tuple[str, str], bool]) -> None:
    """A pod → its node, and what its spec references by name (marked missing when not read)."""
    for p in pods:
        pid = g.node_id("Pod", _name(p))
        node = (p.get("spec") or {}).get("nodeName")
        if node:
            g.link(pid, g.add("Node", str(node), cluster_scoped=True), "runs-on")
        for kind, name, rel in _pod_refs(p):
            exists = existing.get((kind, name), False)
            g.link(pid, g.add(kind, name, **({} if exists else {"missing": True})), rel)


def _link_claims(g: _Graph, pvcs: list[dict[str, Any]]) -> None:
    for pvc in pvcs:
        spec = pvc.get("spec") or {}
        cid = g.node_id("PersistentVolumeClaim", _name(pvc))
        if spec.get("volumeName"):
            g.link(cid, g.add("PersistentVolume", str(spec["volumeName"]), cluster_scoped=True), "bound-to")
        if spec.get("storageClassName"):
            g.link(cid, g.add("StorageClass", str(spec["storageClassName"]), cluster_scoped=True), "class")


def _link_services(g: _Graph, objs: dict[str, list[dict[str, Any]]], pods: list[dict[str, Any]]) -> None:
    """A Service's ready endpoints, and the pods its selector selects."""
    eps = {_name(e): e for e in objs.get("endpoints", [])}
    for svc in objs.get("services", []):
        spec = svc.get("spec") or {}
        name = _name(svc)
        sid = g.node_id("Service", name)
        ready = sum(len(s.get("addresses") or []) for s in (eps.get(name) or {}).get("subsets") or [])
        g.nodes[sid]["ready_endpoints"] = ready
        service_selector = _selector(spec.get("selector"), plain_map=True)
        for p in pods:
            if service_selector is not None and service_selector.matches_object(p):
                g.link(sid, g.node_id("Pod", _name(p)), "selects")


def _link_ingresses(g: _Graph, ingresses: list[dict[str, Any]], existing: dict[tuple[str, str], bool]) -> None:
    """An Ingress → the Services it routes to (marked missing when not read) and its class."""
    for ing in ingresses:
        iid = g.node_id("Ingress", _name(ing))
        for rule in (ing.get("spec") or {}).get("rules") or []:
            for path in ((rule.get("http") or {}).get("paths")) or []:
                backend = ((path.get("backend") or {}).get("service") or {}).get("name")
                if backend:
                    exists = existing.get(("Service", str(backend)), False)
                    g.link(
                        iid, g.add("Service", str(backend), **({} if exists else {"missing": True})), "routes-to"
                    )
        cls = (ing.get("spec") or {}).get("ingressClassName")
        if cls:
            g.link(iid, g.add("IngressClass", str(cls), cluster_scoped=True), "class")


def _link_hpas(g: _Graph, hpas: list[dict[str, Any]]) -> None:
    for hpa in hpas:
        hid = g.node_id("HorizontalPodAutoscaler", _name(hpa))
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if ref.get("name"):
            g.link(hid, g.add(str(ref.get("kind")), str(ref.get("name"))), "scales")


def _link_pod_selectors(g: _Graph, objs: dict[str, list[dict[str, Any]]], pods: list[dict[str, Any]]) -> None:
    """PodDisruptionBudgets and NetworkPolicies → the pods their selectors select."""
    for key, rel, sel_path in (
        ("pdbs", "protects", ("spec", "selector")),
        ("networkpolicies", "applies-to", ("spec", "podSelector")),
    ):
        kind = _KIND_OF[key]
        for o in objs.get(key, []):
            oid = g.node_id(kind, _name(o))
            # {} selects every pod in the namespace (a NetworkPolicy, a policy/v1 PDB); null, none
            sel = _selector((o.get(sel_path[0]) or {}).get(sel_path[1]))
            for p in pods:
                if sel is not None and sel.matches_object(p):
                    g.link(oid, g.node_id("Pod", _name(p)), rel)


async def subgraph(
    reader: KubeReader,
    namespace: str,
    kind: str,
    name: str,
    hops: int = 2,
    budget: int = 2000,
    caller: Caller | None = None,
) -> dict[str, Any]:
    """Nodes within ``hops`` of ``kind/name`` and the edges between them, breadth first, trimmed
    so the JSON stays within ``budget`` tokens (about 4 characters each)."""
    k = await reader.resolve_kind(kind, caller)
    objs, partial = await _read_namespace(reader, namespace, caller)
    g = _build(namespace, objs)
    focus = g.node_id(k.kind, name)
    if focus not in g.nodes:
        raise KubeApiError(404, "NotFound", f'{k.kind} "{name}" not found in namespace {namespace}', focus)
    adjacent: dict[str, list[tuple[str, str, str]]] = {}
    for a, b, rel in g.edges:
        adjacent.setdefault(a, []).append((a, b, rel))
        adjacent.setdefault(b, []).append((a, b, rel))
    seen = {focus: 0}
    order = [focus]
    queue = deque([focus])
    while queue:
        cur = queue.popleft()
        if seen[cur] >= hops:
            continue
        for a, b, _rel in adjacent.get(cur, []):
            other = b if a == cur else a
            if other not in seen:
                seen[other] = seen[cur] + 1
                order.append(other)
                queue.append(other)
    limit = max(200, budget) * 4
    kept: list[str] = []
    size = 200
    trimmed = 0
    for nid in order:
        cost = len(json.dumps(g.nodes[nid])) + 40
        if size + cost > limit and nid != focus:
            trimmed += 1
            continue
        kept.append(nid)
        size += cost
    keep = set(kept)
    edges = [{"from": a, "to": b, "rel": rel} for a, b, rel in g.edges if a in keep and b in keep]
    out: dict[str, Any] = {
        "namespace": namespace,
        "focus": focus,
        "hops": hops,
        "nodes": [g.nodes[n] | {"hops": seen[n]} for n in kept],
        "edges": edges,
    }
    if trimmed:
        out["trimmed"] = f"{trimmed} more node(s) beyond the {budget}-token budget were left out"
    if partial:
        out["partial"] = (f"only the first {reader.max_items} (by name) of {', '.join(partial)} were read: "
                          "objects past them and their edges are missing")
    return out
