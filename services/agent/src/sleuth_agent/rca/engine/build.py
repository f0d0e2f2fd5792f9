"""Build the causal graph from what one cluster run read: the namespace lists (pods, workloads,
Services, events) and every follow-up result in the evidence log (NetworkPolicies, ConfigMaps,
quotas, objects read with ``get_resource``). Only tool results the scope filter let through are
here, so the graph never holds an object the asker cannot read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._records import PodView, items_of
from sleuth_agent.rca.engine.graph import Graph, Ref, Rel, selector_of
from sleuth_common.mcp import ToolResult

__all__ = ["build_graph"]

_VOLUME_KINDS = {"pvc": "PersistentVolumeClaim", "config_map": "ConfigMap", "secret": "Secret"}
_LIST_KINDS = {
    "networkpolicies": "NetworkPolicy",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "pdb": "PodDisruptionBudget",
    "hpa": "HorizontalPodAutoscaler",
    "horizontalpodautoscalers": "HorizontalPodAutoscaler",
    "ingresses": "Ingress",
    "limitranges": "LimitRange",
    "resourcequotas": "ResourceQuota",
    "rolebindings": "RoleBinding",
    "roles": "Role",
}


def _add_pod(g: Graph, pod: PodView) -> Ref:
    ref = g.add(Ref.of("Pod", pod.namespace, pod.name), labels=dict(pod.labels), healthy=pod.healthy, exists=True)
    if pod.owner_kind and pod.owner_name:
        g.link(Ref.of(pod.owner_kind, pod.namespace, pod.owner_name), Rel.OWNS, ref)
    if pod.node:
        g.link(ref, Rel.RUNS_ON, Ref.of("Node", "", pod.node))
    for _vol, vtype, source in pod.volumes:
        kind = _VOLUME_KINDS.get(vtype)
        if kind and source:
            g.link(ref, Rel.MOUNTS, Ref.of(kind, pod.namespace, source))
    for c in pod.all_containers:
        for src_kind, name, _prefix in c.env_from:
            kind = "Secret" if src_kind.lower().startswith("secret") else "ConfigMap"
            if name:
                g.link(ref, Rel.REFS, Ref.of(kind, pod.namespace, name))
    return ref


def _selects(g: Graph, src: Ref, selector: Any, pods: Iterable[Ref]) -> None:
    sel = selector_of(selector)
    if sel is None:
        return
    for p in pods:
        if sel.matches(g.attrs(p).get("labels") or {}):
            g.link(src, Rel.SELECTS, p)


def _list_results(results: Iterable[ToolResult]) -> Iterable[tuple[str, str, list[dict[str, Any]]]]:
    for r in results:
        if not r.ok or r.tool not in ("list_resources", "list_quotas", "list_pvcs"):
            continue
        ns = str((r.args or {}).get("namespace") or "")
        if r.tool == "list_resources":
            kind = _LIST_KINDS.get(str((r.args or {}).get("kind") or "").lower())
            if kind:
                yield kind, ns, items_of(r.data, "items")
        elif r.tool == "list_pvcs":
            yield "PersistentVolumeClaim", ns, items_of(r.data, "pvcs", "items")
        else:
            data = r.data if isinstance(r.data, Mapping) else {}
            yield "ResourceQuota", ns, [x for x in data.get("resource_quotas") or [] if isinstance(x, dict)]
            if isinstance(data.get("limit_ranges"), list):
                yield "LimitRange", ns, [x for x in data["limit_ranges"] if isinstance(x, dict)]


def build_graph(got: Collected, results: Iterable[ToolResult] = ()) -> Graph:
    g = Graph()
    pods_by_ns: dict[str, list[Ref]] = {}
    for ns, pods in got.pods.items():
        pods_by_ns[ns] = [_add_pod(g, p) for p in pods]
    for ns, workloads in got.workloads.items():
        for w in workloads:
            if not w.name or not w.kind:
                continue
            ref = g.add(Ref.of(w.kind, ns, w.name), exists=True, conditions=w.conditions, replicas=w.replicas, ready=w.ready)
            if w.owner_kind and w.owner_name:
                g.link(Ref.of(w.owner_kind, ns, w.owner_name), Rel.OWNS, ref)
    for ns, services in got.services.items():
        for svc in services:
            name = str(svc.get("name") or "")
            if not name:
                continue
            eps = svc.get("endpoints") if isinstance(svc.get("endpoints"), Mapping) else {}
            ref = g.add(
                Ref.of("Service", ns, name),
                exists=True,
                cluster_ip=str(svc.get("cluster_ip") or ""),
                ports=svc.get("ports") or [],
                ready_endpoints=len((eps or {}).get("ready") or []) if eps else None,
                selector=svc.get("selector"),
            )
            _selects(g, ref, svc.get("selector"), pods_by_ns.get(ns, []))
    add_results(g, [*got.results.values(), *results], pods_by_ns)
    return g


def add_results(g: Graph, results: Iterable[ToolResult], pods_by_ns: Mapping[str, list[Ref]] | None = None) -> None:
    """Fold follow-up results (NetworkPolicies, quotas, ConfigMaps...) into ``g``."""
    if pods_by_ns is None:
        pods_by_ns = {}
        for ref in g.find("Pod"):
            pods_by_ns.setdefault(ref.namespace, []).append(ref)
    for kind, ns, items in _list_results(results):
        _add_items(g, kind, ns, items, pods_by_ns.get(ns, []))
    for r in results:
        if r.ok and r.tool == "list_nodes":
            for node in items_of(r.data, "nodes", "items"):
                name = str(node.get("name") or (node.get("metadata") or {}).get("name") or "")
                if name:
                    g.add(Ref.of("Node", "", name), exists=True, record=node)
        if r.ok and r.tool == "get_resource" and isinstance(r.data, Mapping):
            obj = r.data.get("object", r.data)
            if isinstance(obj, Mapping):
                kind = str(obj.get("kind") or (r.args or {}).get("kind") or "")
                meta = obj.get("metadata") or {}
                name = str(meta.get("name") or (r.args or {}).get("name") or "")
                if kind and name:
                    g.add(Ref.of(kind, str(meta.get("namespace") or (r.args or {}).get("namespace") or ""), name), exists=True, object=obj)
        elif r.status == "error" and r.tool == "get_resource" and ("NotFound" in r.error or '"code":404' in r.error):
            a = r.args or {}
            g.add(Ref.of(str(a.get("kind") or ""), str(a.get("namespace") or ""), str(a.get("name") or "")), exists=False)


def _add_items(g: Graph, kind: str, ns: str, items: list[dict[str, Any]], pods: list[Ref]) -> None:
    for item in items:
        name = str(item.get("name") or (item.get("metadata") or {}).get("name") or "")
        if not name:
            continue
        ref = g.add(Ref.of(kind, ns, name), exists=True, record=item)
        if kind == "NetworkPolicy":
            _selects(g, ref, item.get("pod_selector"), pods)
        elif kind == "PodDisruptionBudget":
            _selects(g, ref, item.get("selector"), pods)
        elif kind in ("ResourceQuota", "LimitRange"):
            g.link(ref, Rel.LIMITS, Ref.of("Namespace", "", ns))
        elif kind == "HorizontalPodAutoscaler" and "/" in str(item.get("target") or ""):
            tkind, _, tname = str(item["target"]).partition("/")
            g.link(ref, Rel.TARGETS, Ref.of(tkind, ns, tname))
        elif kind == "Ingress":
            for route in item.get("routes") or []:
                if isinstance(route, Mapping) and route.get("service"):
                    g.link(ref, Rel.ROUTES_TO, Ref.of("Service", ns, str(route["service"])))
