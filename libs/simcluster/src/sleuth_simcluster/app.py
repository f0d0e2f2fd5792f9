"""The Starlette app: authenticate, resolve the request like kube-apiserver, authorize, answer."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sleuth_common.k8s import LabelSelector

from . import _discovery as disc
from ._audit import AuditLog, AuditRecord
from ._convert import present
from ._impersonation import GROUP_HEADER, USER_HEADER, InternalError, has_impersonation, impersonate
from ._loader import Snapshot, User
from ._logs import pod_log
from ._paging import limit_of, page
from ._printers import format_selector
from ._rbac import Attributes, Authorizer
from ._registry import REVIEW_KINDS, Resource, lookup
from ._reviews import identity_groups, parse_body, review
from ._selectors import SelectorError, fields_match, parse_field_selector
from ._status import (
    ApiError,
    bad_request,
    forbidden,
    method_not_allowed,
    not_found,
    unauthorized,
    unknown_path,
)
from ._table import table, wants_table

log = logging.getLogger(__name__)

Obj = dict[str, Any]
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_PUBLIC = {"/healthz", "/readyz", "/livez", "/version", "/version/"}
_HEALTH = {"/healthz", "/readyz", "/livez"}
LIST_RESOURCE_VERSION = 1
"""The store's one revision (it is read-only): every list is at it, and a continue token must be too."""


def _json(obj: Any, code: int = 200, media_type: str = "application/json") -> Response:
    return Response(json.dumps(obj, separators=(",", ":")), status_code=code, media_type=media_type)


@dataclass(frozen=True)
class RequestInfo:
    """What a resource path names (kube-apiserver's `RequestInfo`)."""

    resource: Resource
    namespace: str
    name: str
    subresource: str


def _resolve(group: str, version: str, parts: list[str]) -> RequestInfo | None:
    namespace = ""
    if len(parts) >= 2 and parts[0] == "namespaces":
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in ("status", "finalize"):
            parts = parts[2:]
    if not parts or len(parts) > 3:
        return None
    res = lookup(group, version, parts[0])
    if res is None or (namespace and not res.namespaced and res.plural != "namespaces"):
        return None
    if res.namespaced and not namespace and len(parts) > 1:
        return None  # a namespaced object needs its namespace in the path
    name = parts[1] if len(parts) > 1 else ""
    sub = parts[2] if len(parts) > 2 else ""
    if sub and sub not in res.subresources:
        return None
    return RequestInfo(res, namespace, name, sub)


@dataclass
class _Seen:
    """What one request turned out to be, as far as it got (for its audit record)."""

    user: User | None = None
    acting_as: str = ""
    acting_groups: tuple[str, ...] = field(default_factory=tuple)
    attrs: Attributes | None = None


def _request_uri(request: Request) -> str:
    raw = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string") or b""
    return (raw + (b"?" + query if query else b"")).decode("latin-1")


class ApiServer:
    """Request handling for one loaded snapshot; ``audit`` holds the last requests (see ``_audit``)."""

    def __init__(self, snapshot: Snapshot, server_address: str = "127.0.0.1:6443", audit_size: int = 10_000) -> None:
        self.snapshot = snapshot
        self.server_address = server_address
        rbac = [o for key in (("rbac.authorization.k8s.io", p) for p in
                              ("roles", "clusterroles", "rolebindings", "clusterrolebindings"))
                for o in snapshot.store.list(key)]
        self.authorizer = Authorizer.from_objects(rbac)
        self.audit = AuditLog(audit_size)

    # -- identity ---------------------------------------------------------------------------
    def _authenticate(self, request: Request) -> User | None:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.snapshot.user_by_token(token.strip())

    def _check(self, attrs: Attributes) -> None:
        if not self.authorizer.authorize(attrs).allowed:
            raise forbidden(attrs)

    # -- entry point ------------------------------------------------------------------------
    async def handle(self, request: Request) -> Response:
        path = request.url.path.rstrip("/") or "/"
        seen = _Seen()
        try:
            user = self._authenticate(request)
            if user is None:
                if path in _PUBLIC and "authorization" not in request.headers \
                        and not has_impersonation(request.headers):
                    return self._non_resource(request, path)
                raise unauthorized()
            seen.user = user
            seen.acting_as = request.headers.get(USER_HEADER, "")
            seen.acting_groups = tuple(request.headers.getlist(GROUP_HEADER))
            acting = impersonate(request.headers, _request_uri(request), user, identity_groups(user),
                                 self.authorizer)
            if acting is not None:
                seen.acting_as, seen.acting_groups = acting.name, acting.groups
            response = await self._dispatch(request, path, acting or user, seen)
        except InternalError as err:
            response = Response(err.message + "\n", err.code, media_type="text/plain; charset=utf-8",
                                headers={"X-Content-Type-Options": "nosniff"})
        except ApiError as err:
            response = _json(err.status(), err.code)
        self._record(request, path, seen, response.status_code)
        return response

    def _record(self, request: Request, path: str, seen: _Seen, code: int) -> None:
        a = seen.attrs
        record = AuditRecord(
            user=seen.user.name if seen.user else "",
            groups=identity_groups(seen.user) if seen.user else (),
            impersonated_user=seen.acting_as, impersonated_groups=seen.acting_groups,
            method=request.method, path=path, verb=a.verb if a else "", resource=a.resource if a else "",
            subresource=a.subresource if a else "", namespace=a.namespace if a else "",
            name=a.name if a else "", api_group=a.api_group if a else "", code=code,
        )
        self.audit.add(record)
        if record.impersonated_user:
            what = f"{record.verb} {record.resource}" if record.resource else f"{record.verb or request.method} {path}"
            where = f" -n {record.namespace}" if record.namespace else ""
            named = f" {record.name}" if record.name else ""
            log.info("%s as %s %s: %s%s%s -> %d", record.user, record.impersonated_user,
                     list(record.impersonated_groups), what, named, where, code)

    async def _dispatch(self, request: Request, path: str, user: User, seen: _Seen) -> Response:
        parts = [p for p in path.split("/") if p]
        groups = identity_groups(user)
        if parts[:2] == ["api", "v1"] and len(parts) > 2:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) > 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            if request.method != "GET":
                raise method_not_allowed()
            seen.attrs = Attributes(user.name, groups, "get", path=path)
            self._check(seen.attrs)
            return self._non_resource(request, path)
        info = _resolve(group, version, rest)
        if info is None:
            raise unknown_path()
        res = info.resource
        if request.method == "GET":
            watch = request.query_params.get("watch", "").lower() in ("true", "1")
            verb = "watch" if watch else ("get" if info.name else "list")
        else:
            verb = _VERBS.get(request.method, request.method.lower())
            if verb == "delete" and not info.name:
                verb = "deletecollection"
        namespace = info.name if res.plural == "namespaces" and info.name else info.namespace
        attrs = Attributes(user.name, groups, verb, namespace, res.group, res.plural, info.subresource, info.name)
        seen.attrs = attrs
        self._check(attrs)
        if res.kind in REVIEW_KINDS:
            if request.method != "POST" or info.name:
                raise method_not_allowed()
            body = parse_body(await request.body(), request.headers.get("content-type", ""))
            answer = review(res.plural, body, user, self.snapshot, self.authorizer, info.namespace)
            return _json(answer, 201)
        if request.method != "GET" or verb == "watch":
            raise method_not_allowed()
        if info.name:
            return self._get(request, info)
        return self._list(request, info)

    # -- non-resource -----------------------------------------------------------------------
    def _non_resource(self, request: Request, path: str) -> Response:
        accept = request.headers.get("accept", "")
        if path in _HEALTH:
            return Response("ok", media_type="text/plain")
        if path in ("/version", "/version/"):
            return _json(disc.version_info())
        if path in ("/api", "/apis"):
            media = disc.aggregated_media_type(accept)
            if media is not None:
                return _json(disc.aggregated(path == "/api", media), media_type=media)
            if path == "/api":
                return _json(disc.api_versions(self.server_address))
            return _json(disc.api_group_list())
        parts = path.strip("/").split("/")
        doc: Obj | None = None
        if parts[0] == "api" and len(parts) == 2:
            doc = disc.api_resource_list("", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            doc = disc.api_group(parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            doc = disc.api_resource_list(parts[1], parts[2])
        if doc is None:
            raise unknown_path()
        return _json(doc)

    # -- reads ------------------------------------------------------------------------------
    def _get(self, request: Request, info: RequestInfo) -> Response:
        res = info.resource
        obj = self.snapshot.store.get(res.storage, info.namespace if res.namespaced else "", info.name)
        if obj is None:
            raise not_found(res.plural, res.group, info.name)
        if info.subresource == "log":
            text = pod_log(self.snapshot.logs, obj, request.query_params, self.snapshot.now)
            return Response(text, media_type="text/plain")
        if info.subresource == "scale":
            return _json(_scale(obj))
        if wants_table(request.headers.get("accept", "")):
            return self._table(request, res, [obj])
        return _json(present(obj, res))

    def _list(self, request: Request, info: RequestInfo) -> Response:
        res = info.resource
        params = request.query_params
        try:
            label_sel = LabelSelector.from_string(params.get("labelSelector", ""))
            field_reqs = parse_field_selector(params.get("fieldSelector", ""), res.plural)
        except SelectorError as exc:
            raise bad_request(str(exc)) from exc
        objs = self.snapshot.store.list(res.storage, info.namespace if res.namespaced and info.namespace else None)

        def keep(o: Obj) -> bool:
            return (label_sel.is_empty or label_sel.matches_object(o)) and fields_match(field_reqs, o)

        selected = not label_sel.is_empty or bool(field_reqs)
        chunk = page(objs, limit=limit_of(params.get("limit")), token=params.get("continue", ""),
                     rv=LIST_RESOURCE_VERSION, namespaced=res.namespaced, keep=keep if selected else None)
        meta = {"resourceVersion": str(LIST_RESOURCE_VERSION), **chunk.meta}
        if wants_table(request.headers.get("accept", "")):
            return self._table(request, res, chunk.objects, meta)
        items = [present(o, res) for o in chunk.objects]
        return _json({"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta, "items": items})

    def _table(self, request: Request, res: Resource, objs: list[Obj], meta: Obj | None = None) -> Response:
        include = request.query_params.get("includeObject", "Metadata")
        presented = [present(o, res) for o in objs] if include == "Object" else None
        doc = table(res.plural, objs, self.snapshot.now, include, presented=presented)
        if meta:
            doc["metadata"] = meta
        return _json(doc)


def _scale(obj: Obj) -> Obj:
    meta = obj["metadata"]
    labels = format_selector((obj.get("spec") or {}).get("selector"), none="")
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0), "selector": labels}}


def create_app(snapshot: Snapshot, server_address: str = "127.0.0.1:6443") -> Starlette:
    """A Starlette app serving `snapshot` as a read-only Kubernetes API."""
    server = ApiServer(snapshot, server_address)
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app = Starlette(routes=[Route("/{path:path}", server.handle, methods=methods)])
    app.state.api = server
    return app


__all__ = ["ApiServer", "RequestInfo", "create_app"]
