"""Kubernetes backend: SubjectAccessReview, namespace list and TokenReview over each cluster's API.

One ``httpx.AsyncClient`` per cluster, made on first use, trusting the cluster's ``ca_file`` and
authenticating with the cluster's authz token (``authz_token_env`` / ``authz_token_file``, read at
every call so a rotated service-account token is picked up). That identity needs ``create`` on
``subjectaccessreviews`` and ``tokenreviews`` and ``list`` on ``namespaces`` — and ``list`` on
``pods``, ``services`` and ``endpoints`` to answer ``sleuth.authz.resolve`` and ``sleuth.authz.inventory``,
and ``list`` on ``rbac.authorization.k8s.io/rolebindings`` to resolve scopes quickly on big clusters
(:mod:`sleuth_authz_cache.bindings`; without it every namespace is reviewed).

TODO(mcp-authz): a second backend speaking the HTTP API of snapp-incubator/mcp-authz (DESIGN §1),
for sites that run it, comes in its own issue; it implements :class:`~sleuth_authz_cache.backend.AuthzBackend`.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Sequence
from typing import Any

import httpx

from sleuth_authz_cache.backend import Access, BackendError, Forbidden, TokenIdentity
from sleuth_common.config import ClusterSettings

log = logging.getLogger(__name__)

__all__ = ["KubernetesBackend"]

_SAR_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
_TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
_NAMESPACES_PATH = "/api/v1/namespaces"
_ROLEBINDINGS_PATH = "/apis/rbac.authorization.k8s.io/v1/rolebindings"
_PAGE = 500


class KubernetesBackend:
    """:class:`~sleuth_authz_cache.backend.AuthzBackend` over the Kubernetes API."""

    def __init__(self, clusters: Sequence[ClusterSettings], *, timeout: float = 5.0) -> None:
        self._clusters = {c.name: c for c in clusters}
        self._timeout = timeout
        self._clients: dict[str, httpx.AsyncClient] = {}

    # -- AuthzBackend -------------------------------------------------------------------------

    async def review(self, cluster: str, user: str, groups: tuple[str, ...], namespace: str | None) -> bool:
        return await self.access(cluster, user, groups, Access("get", "pods", "", namespace))

    async def access(self, cluster: str, user: str, groups: tuple[str, ...], access: Access) -> bool:
        attrs: dict[str, str] = {"verb": access.verb, "resource": access.resource}
        if access.group:
            attrs["group"] = access.group
        if access.namespace is not None:
            attrs["namespace"] = access.namespace
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": list(groups), "resourceAttributes": attrs},
        }
        doc = await self._call(cluster, "POST", _SAR_PATH, json=body, what="create subjectaccessreviews")
        return bool(_status(doc).get("allowed", False))

    async def namespaces(self, cluster: str) -> list[str]:
        names: list[str] = []
        params: dict[str, Any] = {"limit": _PAGE}
        while True:
            doc = await self._call(cluster, "GET", _NAMESPACES_PATH, params=params, what="list namespaces")
            for item in doc.get("items") or []:
                name = (item.get("metadata") or {}).get("name") if isinstance(item, dict) else None
                if isinstance(name, str) and name:
                    names.append(name)
            cont = (doc.get("metadata") or {}).get("continue")
            if not cont:
                return names
            params = {"limit": _PAGE, "continue": cont}

    async def list_objects(self, cluster: str, resource: str) -> list[dict[str, Any]]:
        """Every object of a core ``resource`` (pods, services, endpoints) across namespaces,
        as the authz identity may list them (for ``sleuth.authz.resolve``)."""
        return await self._list(cluster, f"/api/v1/{resource}", f"list {resource}")

    async def role_bindings(self, cluster: str) -> list[dict[str, Any]]:
        return await self._list(cluster, _ROLEBINDINGS_PATH, "list rolebindings")

    async def _list(self, cluster: str, path: str, what: str) -> list[dict[str, Any]]:
        """Every item of a list, page by page (``limit``/``continue``)."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": _PAGE}
        while True:
            doc = await self._call(cluster, "GET", path, params=params, what=what)
            items.extend(i for i in doc.get("items") or [] if isinstance(i, dict))
            cont = (doc.get("metadata") or {}).get("continue")
            if not cont:
                return items
            params = {"limit": _PAGE, "continue": cont}

    async def token_review(self, cluster: str, token: str) -> TokenIdentity:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        doc = await self._call(cluster, "POST", _TOKEN_REVIEW_PATH, json=body, what="create tokenreviews")
        status = _status(doc)
        if not status.get("authenticated"):
            return TokenIdentity(False)
        user = status.get("user") or {}
        name = user.get("username") or ""
        groups = tuple(g for g in (user.get("groups") or []) if isinstance(g, str))
        if not name:
            return TokenIdentity(False)
        return TokenIdentity(True, name, groups)

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            await client.aclose()

    # -- plumbing -----------------------------------------------------------------------------

    def _client(self, cluster: ClusterSettings) -> httpx.AsyncClient:
        client = self._clients.get(cluster.name)
        if client is None:
            if not cluster.api_server:
                raise BackendError("no api_server configured")
            try:
                ctx = ssl.create_default_context(cafile=cluster.ca_file or None)
            except (OSError, ssl.SSLError) as e:
                raise BackendError(f"cannot load ca_file {cluster.ca_file}: {e}") from e
            client = httpx.AsyncClient(base_url=cluster.api_server, verify=ctx, timeout=self._timeout)
            self._clients[cluster.name] = client
        return client

    async def _call(self, name: str, method: str, path: str, *, what: str, **kw: Any) -> dict[str, Any]:
        cluster = self._clusters.get(name)
        if cluster is None:
            raise BackendError("cluster not configured")
        token = cluster.authz_token()
        if token is None:
            where = cluster.authz_token_env or cluster.authz_token_file or "authz_token_env/authz_token_file"
            raise BackendError(f"no authz token (set {where})")
        client = self._client(cluster)
        headers = {"Authorization": f"Bearer {token.get_secret_value()}", "Accept": "application/json"}
        try:
            resp = await client.request(method, path, headers=headers, **kw)
        except httpx.TimeoutException as e:
            raise BackendError(f"timed out after {self._timeout:g}s") from e
        except httpx.ConnectError as e:
            raise BackendError(f"cannot connect: {_short(e)}") from e
        except httpx.HTTPError as e:
            raise BackendError(f"{type(e).__name__}: {_short(e)}") from e
        if resp.status_code == 401:
            raise BackendError("authz credentials rejected (401)")
        if resp.status_code == 403:
            raise Forbidden(f"authz identity may not {what} (403)")
        if resp.status_code >= 400:
            raise BackendError(f"HTTP {resp.status_code}: {_status_message(resp)}")
        try:
            doc = resp.json()
        except ValueError as e:
            raise BackendError(f"malformed response to {what}") from e
        if not isinstance(doc, dict):
            raise BackendError(f"malformed response to {what}")
        return doc


def _status(doc: dict[str, Any]) -> dict[str, Any]:
    status = doc.get("status")
    return status if isinstance(status, dict) else {}


def _status_message(resp: httpx.Response) -> str:
    try:
        doc = resp.json()
    except ValueError:
        return resp.reason_phrase or "error"
    msg = doc.get("message") if isinstance(doc, dict) else None
    return _short(msg or resp.reason_phrase or "error")


def _short(value: object, limit: int = 160) -> str:
    text = str(value) or type(value).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
