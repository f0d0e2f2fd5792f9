"""A small read-only async Kubernetes API client over httpx. GET only, by design."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from sleuth_kube_mcp.kube._config import ClusterAccess

__all__ = ["Caller", "KubeApiError", "KubeClient", "KubeUnavailable", "Listing", "UnsafePath"]

log = logging.getLogger(__name__)


class KubeApiError(Exception):
    """The API server answered with an error Status (403, 404, ...)."""

    def __init__(self, code: int, reason: str, message: str, path: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.path = path


class KubeUnavailable(Exception):
    """The API server could not be reached or did not answer in time."""


class UnsafePath(ValueError):
    """A path segment is not a plain Kubernetes name (``..``, ``/``, ``%``, spaces ...)."""


@dataclass(frozen=True)
class Caller:
    """Whose rights one read uses (DESIGN §2, "the cluster decides").

    - ``token``: the caller's own bearer token (``accept_caller_token``);
    - ``user`` (+ ``groups``): kube-mcp's credentials impersonating that identity
      (``Impersonate-User`` / ``Impersonate-Group``): the API server authorizes the read with the
      asker's RBAC, and its audit log records both;
    - neither: kube-mcp's own identity (only when ``require_identity`` is off).
    """

    token: str | None = None
    user: str = ""
    groups: tuple[str, ...] = ()
    job: str = ""

    @property
    def impersonates(self) -> bool:
        return bool(self.user) and not self.token


# One path segment: what a Kubernetes name, namespace, resource or group can be. Anything else
# (``..``, ``%2F``, spaces, ``?``, ``#``) never reaches the API server, whichever tool built it.
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@~+-]{0,252}$")


def check_path(path: str) -> str:
    """``path`` when every segment is a plain name; raises :class:`UnsafePath` otherwise."""
    if not path.startswith("/"):
        raise UnsafePath("the API path must be absolute")
    for seg in path[1:].split("/"):
        if not _SEGMENT.match(seg) or ".." in seg:
            shown = seg if len(seg) <= 80 else seg[:80] + "…"
            raise UnsafePath(f"{shown!r} is not a valid Kubernetes name")
    return path


def _status_error(resp: httpx.Response, body: bytes, path: str) -> KubeApiError:
    reason, message = resp.reason_phrase or "Error", ""
    try:
        status = json.loads(body)
        if isinstance(status, dict):
            reason = str(status.get("reason") or reason)
            message = str(status.get("message") or "")
    except ValueError:
        message = body.decode("utf-8", "replace").strip()[:500]
    return KubeApiError(resp.status_code, reason, message or f"the server returned {resp.status_code}", path)


@dataclass
class Listing:
    """What :meth:`KubeClient.list_items` read: at most ``limit`` records, in the API server's order
    (namespace, then name), each already passed through ``shape``.

    - ``more``: the server holds objects after these (a ``continue`` token was left unread);
    - ``remaining``: how many, when the server counted them (``remainingItemCount``: absent when a
      label or field selector filtered the list, as kube-apiserver does), else None;
    - ``restarted``: a continue token expired (410) mid-way and the list was read again from its start;
    - ``scanned``: objects read (those ``shape`` dropped included).
    """

    items: list[Any]
    more: bool = False
    remaining: int | None = None
    restarted: bool = False
    scanned: int = 0

    @property
    def total(self) -> int | None:
        """How many objects the list holds (those read plus those counted), None when unknown."""
        if not self.more:
            return len(self.items)
        return None if self.remaining is None else len(self.items) + self.remaining


class KubeClient:
    """GETs JSON and text from one cluster, each request made as a :class:`Caller`. Every path is
    checked segment by segment (:func:`check_path`) before it is sent.

    The httpx client is made on first use (inside the running event loop) and closed by
    :meth:`aclose`.
    """

    def __init__(
        self,
        access: ClusterAccess,
        timeout: float = 10.0,
        on_response: Callable[[int], None] | None = None,
        page_size: int = 500,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.access = access
        self.timeout = timeout
        self.page_size = max(1, page_size)
        self._transport = transport  # None: httpx's own (a test may interpose on the real server)
        self._http: httpx.AsyncClient | None = None
        self._on_response = on_response

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                base_url=self.access.server,
                verify=self.access.ssl_context,
                timeout=self.timeout,
                headers={"Accept": "application/json", "User-Agent": "sleuth-kube-mcp"},
                follow_redirects=False,
                transport=self._transport,
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _headers(self, caller: Caller | None) -> list[tuple[str, str]]:
        if caller is not None and caller.token:
            return [("Authorization", f"Bearer {caller.token}")]
        bearer = self.access.default_token()
        headers = [("Authorization", f"Bearer {bearer}")] if bearer else []
        if caller is not None and caller.user:
            headers.append(("Impersonate-User", caller.user))
            headers += [("Impersonate-Group", g) for g in caller.groups]
        return headers

    def _count(self, code: int) -> None:
        if self._on_response is not None:
            self._on_response(code)

    async def get_json(
        self, path: str, params: Mapping[str, Any] | None = None, caller: Caller | None = None
    ) -> dict[str, Any]:
        body = await self._get(path, params, caller, max_bytes=None)
        try:
            data = json.loads(body[0])
        except ValueError as e:
            raise KubeUnavailable(f"GET {path}: the API server returned something that is not JSON") from e
        if not isinstance(data, dict):
            raise KubeUnavailable(f"GET {path}: unexpected response")
        return data

    async def list_items(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        caller: Caller | None = None,
        *,
        limit: int,
        shape: Callable[[dict[str, Any]], Any] | None = None,
        max_scan: int = 0,
    ) -> Listing:
        """The first ``limit`` objects of a list, read page by page (``limit``/``continue``, pages of
        at most ``page_size``) and no further: memory and time follow ``limit``, not the size of the
        cluster. ``shape(obj)`` turns each raw object into what is kept (``None``: dropped, e.g. a
        record a client-side filter refuses) as each page arrives, so raw pages are not held;
        ``max_scan`` (> 0) stops after that many objects read even when fewer were kept.

        A continue token that expired (410 Gone: the list changed past the server's compaction
        window between two pages) restarts the list once from its start, discarding what was read;
        a second expiry is a :class:`KubeApiError` 410 saying so. An API server that ignores
        ``limit`` (answers everything at once) is trimmed to ``limit`` here, the rest counted.
        """
        if limit <= 0:
            raise ValueError("limit must be positive")
        items: list[Any] = []
        token, scanned, restarted = "", 0, False
        while True:
            want = limit - len(items)
            if max_scan > 0:
                want = min(want, max_scan - scanned)
            query = {**(params or {}), "limit": min(self.page_size, max(1, want)), "continue": token}
            try:
                data = await self.get_json(path, query, caller)
            except KubeApiError as e:
                if e.code != 410 or not token:
                    raise
                if restarted:
                    raise KubeApiError(
                        410, "Expired",
                        "the list changed faster than it could be read page by page (its continue token "
                        "expired twice); try again or narrow it with a selector", path,
                    ) from e
                log.info("continue token expired reading %s: reading the list again from its start", path)
                items, token, scanned, restarted = [], "", 0, True
                continue
            page = data.get("items") or []
            meta = data.get("metadata") or {}
            token = str(meta.get("continue") or "")
            counted = meta.get("remainingItemCount")
            remaining = counted if isinstance(counted, int) and not isinstance(counted, bool) else None
            for i, obj in enumerate(page):
                if len(items) >= limit or (max_scan > 0 and scanned >= max_scan):
                    # More than asked for in this page (a server that ignores limit): count the rest.
                    left = len(page) - i
                    return Listing(items, True, None if token and remaining is None else left + (remaining or 0),
                                   restarted, scanned)
                scanned += 1
                kept = shape(obj) if shape is not None else obj
                if kept is not None:
                    items.append(kept)
            if not token:
                return Listing(items, False, 0, restarted, scanned)
            if len(items) >= limit or (max_scan > 0 and scanned >= max_scan):
                return Listing(items, True, remaining, restarted, scanned)

    async def get_text(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        caller: Caller | None = None,
        max_bytes: int | None = None,
    ) -> tuple[str, bool]:
        """Text body (logs) and whether it was cut to ``max_bytes`` (the newest bytes are kept)."""
        body, truncated = await self._get(path, params, caller, max_bytes=max_bytes)
        return body.decode("utf-8", "replace"), truncated

    async def _get(
        self, path: str, params: Mapping[str, Any] | None, caller: Caller | None, max_bytes: int | None
    ) -> tuple[bytes, bool]:
        check_path(path)
        clean = {k: v for k, v in (params or {}).items() if v not in (None, "")}
        try:
            async with self._client().stream("GET", path, params=clean, headers=self._headers(caller)) as resp:
                buf = bytearray()
                truncated = False
                async for chunk in resp.aiter_bytes():
                    buf += chunk
                    if max_bytes is not None and len(buf) > 2 * max_bytes:
                        del buf[: len(buf) - max_bytes]
                        truncated = True
                if max_bytes is not None and len(buf) > max_bytes:
                    del buf[: len(buf) - max_bytes]
                    truncated = True
        except httpx.TimeoutException as e:
            self._count(0)
            raise KubeUnavailable(
                f"GET {path}: the Kubernetes API did not answer within {self.timeout:g}s"
            ) from e
        except httpx.HTTPError as e:
            self._count(0)
            raise KubeUnavailable(
                f"GET {path}: cannot reach the Kubernetes API at {self.access.server}: {e}"
            ) from e
        self._count(resp.status_code)
        if resp.status_code >= 400:
            raise _status_error(resp, bytes(buf), path)
        if resp.status_code >= 300:
            raise KubeUnavailable(f"GET {path}: unexpected redirect ({resp.status_code})")
        return bytes(buf), truncated
