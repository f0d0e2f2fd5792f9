"""What each tool reads from the API and returns. Raises :class:`KubeApiError`,
:class:`KubeUnavailable` or :class:`BadRequest`; the MCP layer turns those into error results."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from typing import Any

from sleuth_kube_mcp import shaping
from sleuth_kube_mcp.kube import (
    Caller,
    Kind,
    KindResolver,
    KubeApiError,
    KubeClient,
    KubeUnavailable,
    Listing,
)

__all__ = ["BadRequest", "KubeReader"]

log = logging.getLogger(__name__)

MAX_TAIL_LINES = 5000
EVENT_TYPES = ("Normal", "Warning")


class BadRequest(Exception):
    """The arguments cannot be turned into a read (unknown kind, missing namespace, ...)."""


def _bounds(shown: int, listings: Sequence[Listing], cut: int = 0, what: str = "records") -> dict[str, Any]:
    """``count`` and, when the lists hold more than is shown, ``complete: false``, ``omitted`` (when
    the API server counted the rest) and a ``note`` saying so. ``cut``: records read but not shown."""
    partial = [x for x in listings if x.more]
    if not partial and not cut:
        return {"count": shown}
    counted = all(x.remaining is not None for x in partial)
    omitted = cut + sum(x.remaining or 0 for x in partial)
    out: dict[str, Any] = {"count": shown + omitted, "complete": False}
    if counted:
        out["omitted"] = omitted
        out["note"] = f"showing {shown} of {shown + omitted} {what}; narrow the query to see the others"
    else:
        out["note"] = (f"showing {shown} {what}; more exist and were not read or counted (a filtered list "
                       "is not counted by the API server): narrow the query to see them")
    return out


def _listing(namespace: str, key: str, records: list[dict[str, Any]], listing: Listing, what: str) -> dict[str, Any]:
    return {"namespace": namespace, key: records, **_bounds(len(records), [listing], what=what)}


def _storage_record(o: dict[str, Any], kind: str) -> dict[str, Any]:
    return shaping.storage_record(o, kind)


def _by_name(o: dict[str, Any]) -> str:
    return str((o.get("metadata") or {}).get("name"))


class KubeReader:
    """Read-only views of one cluster, each read made as ``caller`` (see :class:`Caller`).

    Lists are read page by page and only as far as a tool returns (``max_items`` records, in the
    API server's order: by name within a namespace), so a big cluster costs no more than a small
    one; what is left unread is counted when the API server counts it, and said either way.
    ``max_scan`` bounds the lists a tool must see more of than it returns (events, newest first).
    """

    def __init__(
        self, client: KubeClient, max_log_bytes: int = 262144, max_items: int = 500, max_scan: int = 5000
    ) -> None:
        self.client = client
        self.max_log_bytes = max_log_bytes
        self.max_items = max_items
        self.max_scan = max(max_scan, max_items)
        self.kinds = KindResolver()
        self._discovery_lock = asyncio.Lock()

    # -- pods ---------------------------------------------------------------------------------
    async def list_pods(
        self, namespace: str, label_selector: str = "", field_selector: str = "", caller: Caller | None = None
    ) -> dict[str, Any]:
        listing = await self.client.list_items(
            f"/api/v1/namespaces/{namespace}/pods",
            {"labelSelector": label_selector, "fieldSelector": field_selector},
            caller,
            limit=self.max_items,
            shape=shaping.pod_summary,
        )
        pods = sorted(listing.items, key=lambda p: str(p.get("name")))
        return _listing(namespace, "pods", pods, listing, "pods (by name)")

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

        def keep(ev: dict[str, Any]) -> dict[str, Any] | None:
            r = shaping.event_record(ev)
            io = r.get("involved_object") or {}
            if involved_object_name and io.get("name") != involved_object_name:
                return None
            if involved_object_kind and str(io.get("kind", "")).lower() != involved_object_kind.lower():
                return None
            if wanted and r.get("type") not in wanted:
                return None
            return r

        # Newest first needs them all: up to max_scan are read, the newest max_items of those shown.
        listing = await self.client.list_items(
            f"/api/v1/namespaces/{namespace}/events", {"fieldSelector": ",".join(selectors)}, caller,
            limit=self.max_scan, shape=keep, max_scan=self.max_scan,
        )
        records = shaping.sort_events(listing.items)
        shown = records[: self.max_items]
        out = {"namespace": namespace, "events": shown,
               **_bounds(len(shown), [listing], len(records) - len(shown), "events (newest first)")}
        if listing.more:
            out["note"] = (f"the newest {len(shown)} of the first {listing.scanned} events read (by name); "
                           "more exist and were not read: narrow with involved_object_name or types")
        return out

    # -- workloads ----------------------------------------------------------------------------
    async def list_workloads(
        self, namespace: str, kinds: list[str] | None = None, caller: Caller | None = None
    ) -> dict[str, Any]:
        plurals, unknown = shaping.normalize_workload_kinds(kinds)
        if unknown:
            raise BadRequest(
                f"unknown workload kind(s) {unknown}; use any of {sorted(shaping.WORKLOAD_KINDS)}"
            )

        async def one(plural: str) -> tuple[str, Listing | KubeApiError]:
            root, kind = shaping.WORKLOAD_KINDS[plural]
            try:
                return plural, await self.client.list_items(
                    f"{root}/namespaces/{namespace}/{plural}", None, caller,
                    limit=self.max_items, shape=lambda o: shaping.workload_summary(o, kind),
                )
            except KubeApiError as e:
                return plural, e

        results = await asyncio.gather(*(one(p) for p in plurals))
        records: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        listings: list[Listing] = []
        for plural, res in results:
            if isinstance(res, KubeApiError):
                errors.append(
                    {"kind": plural, "code": res.code, "reason": res.reason, "message": res.message}
                )
                continue
            listings.append(res)
            records += sorted(res.items, key=lambda r: str(r.get("name")))
        if errors and len(errors) == len(plurals):
            first = next(r for _, r in results if isinstance(r, KubeApiError))
            raise first
        shown = records[: self.max_items]
        out = {"namespace": namespace, "workloads": shown,
               **_bounds(len(shown), listings, len(records) - len(shown), "workloads (by kind, then name)")}
        if errors:
            out["errors"] = errors
        return out

    # -- services, storage, quotas ------------------------------------------------------------
    async def list_services(self, namespace: str, caller: Caller | None = None) -> dict[str, Any]:
        svcs = await self.client.list_items(
            f"/api/v1/namespaces/{namespace}/services", None, caller, limit=self.max_items
        )
        endpoints: dict[str, Any] | None
        last = ""  # with more Endpoints than were read, those named after this one are unknown
        try:
            eps = await self.client.list_items(
                f"/api/v1/namespaces/{namespace}/endpoints", None, caller, limit=self.max_items
            )
            endpoints = {_by_name(e): e for e in eps.items}
            if eps.more and eps.items:
                last = _by_name(eps.items[-1])
        except KubeApiError as e:
            log.info("endpoints unreadable in %s: %s", namespace, e.code)
            endpoints = None
        records = []
        for s in sorted(svcs.items, key=_by_name):
            name = _by_name(s)
            unknown = bool(last) and name > last and name not in (endpoints or {})
            ep = None if endpoints is None or unknown else endpoints.get(name, {})
            records.append(shaping.service_record(s, ep))
        return _listing(namespace, "services", records, svcs, "services (by name)")

    async def list_pvcs(self, namespace: str, caller: Caller | None = None) -> dict[str, Any]:
        listing = await self.client.list_items(
            f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", None, caller,
            limit=self.max_items, shape=shaping.pvc_record,
        )
        pvcs = sorted(listing.items, key=lambda r: str(r.get("name")))
        return _listing(namespace, "pvcs", pvcs, listing, "claims (by name)")

    async def list_quotas(self, namespace: str, caller: Caller | None = None) -> dict[str, Any]:
        rq, lr = await asyncio.gather(
            self.client.list_items(f"/api/v1/namespaces/{namespace}/resourcequotas", None, caller,
                                   limit=self.max_items, shape=shaping.quota_record),
            self.client.list_items(f"/api/v1/namespaces/{namespace}/limitranges", None, caller,
                                   limit=self.max_items, shape=shaping.limit_range_record),
        )
        out = {"namespace": namespace, "resource_quotas": rq.items, "limit_ranges": lr.items}
        if rq.more or lr.more:
            out |= _bounds(len(rq.items) + len(lr.items), [rq, lr], what="quotas and limit ranges")
        return out

    async def list_resources(
        self, kind: str, namespace: str, label_selector: str = "", caller: Caller | None = None
    ) -> dict[str, Any]:
        plural = shaping.LIST_ALIASES.get(kind.strip().lower(), kind.strip().lower())
        if plural not in shaping.LIST_KINDS:
            raise BadRequest(f"unknown kind {kind!r} for list_resources; use one of {sorted(shaping.LIST_KINDS)}")
        root, kind_name = shaping.LIST_KINDS[plural]
        listing = await self.client.list_items(
            f"{root}/namespaces/{namespace}/{plural}", {"labelSelector": label_selector}, caller,
            limit=self.max_items, shape=lambda o: shaping.resource_record(o, kind_name),
        )
        items = sorted(listing.items, key=lambda r: str(r.get("name")))
        out = _listing(namespace, "items", items, listing, f"{plural} (by name)")
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
        listings: list[Listing] = []
        for plural in dict.fromkeys(wanted):
            root, kind_name = shaping.STORAGE_KINDS[plural]
            try:
                listing = await self.client.list_items(
                    f"{root}/{plural}", None, caller, limit=max(1, self.max_items - len(records)),
                    shape=functools.partial(_storage_record, kind=kind_name),
                )
            except KubeApiError as e:
                errors.append({"kind": plural, "code": e.code, "reason": e.reason})
                continue
            listings.append(listing)
            records += sorted(listing.items, key=lambda r: str(r.get("name")))
        shown = records[: self.max_items]
        out: dict[str, Any] = {"cluster_scoped": True, "items": shown,
                               **_bounds(len(shown), listings, len(records) - len(shown), "objects (by kind, then name)")}
        if errors:
            out["errors"] = errors
        return out

    # -- cluster-wide -------------------------------------------------------------------------
    async def list_nodes(self, caller: Caller | None = None) -> dict[str, Any]:
        listing = await self.client.list_items(
            "/api/v1/nodes", None, caller, limit=self.max_items, shape=shaping.node_record
        )
        nodes = sorted(listing.items, key=lambda n: str(n.get("name")))
        return {"nodes": nodes, **_bounds(len(nodes), [listing], what="nodes (by name)")}

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
