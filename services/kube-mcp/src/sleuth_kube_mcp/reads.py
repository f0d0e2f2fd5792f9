"""What each tool reads from the API and returns. Raises :class:`KubeApiError`,
:class:`KubeUnavailable` or :class:`BadRequest`; the MCP layer turns those into error results."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sleuth_kube_mcp import shaping
from sleuth_kube_mcp.kube import Caller, Kind, KindResolver, KubeApiError, KubeClient, KubeUnavailable

__all__ = ["BadRequest", "KubeReader"]

log = logging.getLogger(__name__)

MAX_TAIL_LINES = 5000
EVENT_TYPES = ("Normal", "Warning")


class BadRequest(Exception):
    """The arguments cannot be turned into a read (unknown kind, missing namespace, ...)."""


def _cap(records: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], int]:
    if limit > 0 and len(records) > limit:
        return records[:limit], len(records) - limit
    return records, 0


def _listing(namespace: str, key: str, records: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    shown, omitted = _cap(records, limit)
    out: dict[str, Any] = {"namespace": namespace, "count": len(records), key: shown}
    if omitted:
        out["omitted"] = omitted
    return out


class KubeReader:
    """Read-only views of one cluster, each read made as ``caller`` (see :class:`Caller`)."""

    def __init__(self, client: KubeClient, max_log_bytes: int = 262144, max_items: int = 500) -> None:
        self.client = client
        self.max_log_bytes = max_log_bytes
        self.max_items = max_items
        self.kinds = KindResolver()
        self._discovery_lock = asyncio.Lock()

    # -- pods ---------------------------------------------------------------------------------
    async def list_pods(
        self, namespace: str, label_selector: str = "", field_selector: str = "", caller: Caller | None = None
    ) -> dict[str, Any]:
        data = await self.client.get_json(
            f"/api/v1/namespaces/{namespace}/pods",
            {"labelSelector": label_selector, "fieldSelector": field_selector},
            caller,
        )
        pods = [shaping.pod_summary(p) for p in data.get("items") or []]
        pods.sort(key=lambda p: str(p.get("name")))
        return _listing(namespace, "pods", pods, self.max_items)

    async def get_pod(self, namespace: str, name: str, caller: Caller | None = None) -> dict[str, Any]:
        pod = await self.client.get_json(f"/api/v1/namespaces/{namespace}/pods/{name}", None, caller)
        return shaping.pod_detail(pod)

    async def pod_logs(
        self,
        namespace: str,
        name: str,
        container: str = "",
        previous: bool = False,
        tail_lines: int = 200,
        since_seconds: int | None = None,
        caller: Caller | None = None,
    ) -> dict[str, Any]:
        if tail_lines < 1:
            raise BadRequest("tail_lines must be at least 1")
        tail_lines = min(tail_lines, MAX_TAIL_LINES)
        if not container:
            pod = await self.client.get_json(f"/api/v1/namespaces/{namespace}/pods/{name}", None, caller)
            container = _default_container(pod)
        text, truncated = await self.client.get_text(
            f"/api/v1/namespaces/{namespace}/pods/{name}/log",
            {
                "container": container,
                "previous": "true" if previous else None,
                "tailLines": tail_lines,
                "sinceSeconds": since_seconds if since_seconds and since_seconds > 0 else None,
                "timestamps": "true",
            },
            caller,
            max_bytes=self.max_log_bytes,
        )
        out: dict[str, Any] = {
            "namespace": namespace,
            "pod": name,
            "container": container,
            "previous": previous,
            "tail_lines": tail_lines,
            "lines": shaping.log_lines(text, truncated),
            "truncated": truncated,
        }
        if since_seconds:
            out["since_seconds"] = since_seconds
        return out

    # -- events -------------------------------------------------------------------------------
    async def list_events(
        self,
        namespace: str,
        involved_object_name: str = "",
        involved_object_kind: str = "",
        types: list[str] | None = None,
        caller: Caller | None = None,
    ) -> dict[str, Any]:
        wanted = {t.capitalize() for t in types or []}
        if unknown := wanted - set(EVENT_TYPES):
            raise BadRequest(f"unknown event type(s) {sorted(unknown)}; use Normal and/or Warning")
        selectors = []
        if involved_object_name:
            selectors.append(f"involvedObject.name={involved_object_name}")
        if involved_object_kind:
            selectors.append(f"involvedObject.kind={involved_object_kind}")
        if len(wanted) == 1:
            selectors.append(f"type={next(iter(wanted))}")
        data = await self.client.get_json(
            f"/api/v1/namespaces/{namespace}/events", {"fieldSelector": ",".join(selectors)}, caller
        )
        records = []
        for ev in data.get("items") or []:
            r = shaping.event_record(ev)
            io = r.get("involved_object") or {}
            if involved_object_name and io.get("name") != involved_object_name:
                continue
            if involved_object_kind and str(io.get("kind", "")).lower() != involved_object_kind.lower():
                continue
            if wanted and r.get("type") not in wanted:
                continue
            records.append(r)
        return _listing(namespace, "events", shaping.sort_events(records), self.max_items)

    # -- workloads ----------------------------------------------------------------------------
    async def list_workloads(
        self, namespace: str, kinds: list[str] | None = None, caller: Caller | None = None
    ) -> dict[str, Any]:
        plurals, unknown = shaping.normalize_workload_kinds(kinds)
        if unknown:
            raise BadRequest(
                f"unknown workload kind(s) {unknown}; use any of {sorted(shaping.WORKLOAD_KINDS)}"
            )

        async def one(plural: str) -> tuple[str, dict[str, Any] | KubeApiError]:
            root, _kind = shaping.WORKLOAD_KINDS[plural]
            try:
                return plural, await self.client.get_json(
                    f"{root}/namespaces/{namespace}/{plural}", None, caller
                )
            except KubeApiError as e:
                return plural, e

        results = await asyncio.gather(*(one(p) for p in plurals))
        records: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for plural, res in results:
            if isinstance(res, KubeApiError):
                errors.append(
                    {"kind": plural, "code": res.code, "reason": res.reason, "message": res.message}
                )
                continue
            kind = shaping.WORKLOAD_KINDS[plural][1]
            items = sorted(res.get("items") or [], key=lambda o: str((o.get("metadata") or {}).get("name")))
            records += [shaping.workload_summary(o, kind) for o in items]
        if errors and len(errors) == len(plurals):
            first = next(r for _, r in results if isinstance(r, KubeApiError))
            raise first
        out = _listing(namespace, "workloads", records, self.max_items)
        if errors:
            out["errors"] = errors
        return out

    # -- services, storage, quotas ------------------------------------------------------------
    async def list_services(self, namespace: str, caller: Caller | None = None) -> dict[str, Any]:
        svcs = await self.client.get_json(f"/api/v1/namespaces/{namespace}/services", None, caller)
        endpoints: dict[str, Any] | None
        try:
            eps = await self.client.get_json(f"/api/v1/namespaces/{namespace}/endpoints", None, caller)
            endpoints = {str((e.get("metadata") or {}).get("name")): e for e in eps.get("items") or []}
        except KubeApiError as e:
            log.info("endpoints unreadable in %s: %s", namespace, e.code)
            endpoints = None
        records = []
        for s in sorted(svcs.get("items") or [], key=lambda o: str((o.get("metadata") or {}).get("name"))):
            name = str((s.get("metadata") or {}).get("name"))
            ep = None if endpoints is None else endpoints.get(name, {})
            records.append(shaping.service_record(s, ep))
        return _listing(namespace, "services", records, self.max_items)

    async def list_pvcs(self, namespace: str, caller: Caller | None = None) -> dict[str, Any]:
        data = await self.client.get_json(
            f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", None, caller
        )
        items = sorted(data.get("items") or [], key=lambda o: str((o.get("metadata") or {}).get("name")))
        return _listing(namespace, "pvcs", [shaping.pvc_record(p) for p in items], self.max_items)

    async def list_quotas(self, namespace: str, caller: Caller | None = None) -> dict[str, Any]:
        rq, lr = await asyncio.gather(
            self.client.get_json(f"/api/v1/namespaces/{namespace}/resourcequotas", None, caller),
            self.client.get_json(f"/api/v1/namespaces/{namespace}/limitranges", None, caller),
        )
        return {
            "namespace": namespace,
            "resource_quotas": [shaping.quota_record(q) for q in rq.get("items") or []],
            "limit_ranges": [shaping.limit_range_record(x) for x in lr.get("items") or []],
        }

    async def list_resources(
        self, kind: str, namespace: str, label_selector: str = "", caller: Caller | None = None
    ) -> dict[str, Any]:
        plural = shaping.LIST_ALIASES.get(kind.strip().lower(), kind.strip().lower())
        if plural not in shaping.LIST_KINDS:
            raise BadRequest(f"unknown kind {kind!r} for list_resources; use one of {sorted(shaping.LIST_KINDS)}")
        root, kind_name = shaping.LIST_KINDS[plural]
        data = await self.client.get_json(
            f"{root}/namespaces/{namespace}/{plural}", {"labelSelector": label_selector}, caller
        )
        items = sorted(data.get("items") or [], key=lambda o: str((o.get("metadata") or {}).get("name")))
        out = _listing(namespace, "items", [shaping.resource_record(o, kind_name) for o in items], self.max_items)
        out["kind"] = kind_name
        return out

    async def list_storage(self, kinds: list[str] | None = None, caller: Caller | None = None) -> dict[str, Any]:
        wanted = []
        for k in kinds or list(shaping.STORAGE_KINDS):
            plural = shaping.STORAGE_ALIASES.get(k.strip().lower(), k.strip().lower())
            if plural not in shaping.STORAGE_KINDS:
                raise BadRequest(f"unknown kind {k!r} for list_storage; use {sorted(shaping.STORAGE_KINDS)}")
            wanted.append(plural)
        records: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for plural in dict.fromkeys(wanted):
            root, kind_name = shaping.STORAGE_KINDS[plural]
            try:
                data = await self.client.get_json(f"{root}/{plural}", None, caller)
            except KubeApiError as e:
                errors.append({"kind": plural, "code": e.code, "reason": e.reason})
                continue
            items = sorted(data.get("items") or [], key=lambda o: str((o.get("metadata") or {}).get("name")))
            records += [shaping.storage_record(o, kind_name) for o in items]
        shown, omitted = _cap(records, self.max_items)
        out: dict[str, Any] = {"cluster_scoped": True, "count": len(records), "items": shown}
        if omitted:
            out["omitted"] = omitted
        if errors:
            out["errors"] = errors
        return out

    # -- cluster-wide -------------------------------------------------------------------------
    async def list_nodes(self, caller: Caller | None = None) -> dict[str, Any]:
        data = await self.client.get_json("/api/v1/nodes", None, caller)
        nodes = [shaping.node_record(n) for n in data.get("items") or []]
        nodes.sort(key=lambda n: str(n.get("name")))
        shown, omitted = _cap(nodes, self.max_items)
        out: dict[str, Any] = {"count": len(nodes), "nodes": shown}
        if omitted:
            out["omitted"] = omitted
        return out

    # -- generic get --------------------------------------------------------------------------
    async def resolve_kind(self, kind: str, caller: Caller | None = None) -> Kind:
        found = self.kinds.builtin(kind) or self.kinds.discovered(kind)
        if found is None and not self.kinds.has_discovery:
            await self._discover(caller)
            found = self.kinds.discovered(kind)
        if found is None:
            hint = (
                ""
                if self.kinds.has_discovery
                else " (API discovery did not answer, so only built-in kinds are known)"
            )
            raise BadRequest(
                f"unknown kind {kind!r}: use a Kind, plural or short name known to the cluster "
                f"(e.g. Deployment, deployments, deploy, ConfigMap, cm, pvc){hint}"
            )
        return found

    async def _discover(self, caller: Caller | None) -> None:
        async with self._discovery_lock:
            if self.kinds.has_discovery:
                return
            docs: list[tuple[str, str, dict[str, Any]]] = []
            try:
                groups = await self.client.get_json("/apis", None, caller)
                for g in groups.get("groups") or []:
                    pv = (g.get("preferredVersion") or {}).get("version") or (
                        (g.get("versions") or [{}])[0].get("version")
                    )
                    if not pv:
                        continue
                    try:
                        doc = await self.client.get_json(f"/apis/{g['name']}/{pv}", None, caller)
                    except KubeApiError:
                        continue
                    docs.append((str(g["name"]), str(pv), doc))
            except (KubeApiError, KubeUnavailable) as e:
                log.info("API discovery failed: %s", e)
                return  # not cached: a later call tries again
            self.kinds.learn(docs)

    async def get_resource(
        self, kind: str, name: str, namespace: str = "", caller: Caller | None = None
    ) -> dict[str, Any]:
        k = await self.resolve_kind(kind, caller)
        if k.namespaced and not namespace:
            raise BadRequest(f"{k.kind} is a namespaced kind: pass the namespace")
        obj = await self.client.get_json(
            k.object_path(name, namespace if k.namespaced else None), None, caller
        )
        obj.setdefault("kind", k.kind)
        obj.setdefault("apiVersion", k.api_version)
        return shaping.clean_object(obj)


def _default_container(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    names = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    annotated = (meta.get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
    if annotated and annotated in names:
        return str(annotated)
    if not names:
        raise BadRequest(f"pod {meta.get('name')} has no containers")
    return names[0]
