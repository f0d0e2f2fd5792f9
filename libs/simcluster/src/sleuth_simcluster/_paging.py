"""List paging as kube-apiserver does it: ``limit`` and ``continue`` (``k8s.io/apiserver`` storage).

A page holds at most ``limit`` objects in storage order (namespace, then name). When more follow,
the list's metadata carries ``continue`` — an opaque token, base64 of the same JSON the API server
uses (``{"v": "meta.k8s.io/v1", "rv": <list resourceVersion>, "start": "<namespace>/<name>\\0"}``) —
and ``remainingItemCount`` (left out when a label or field selector filtered the list, as the API
server does: it cannot count those without reading them). A token that does not decode is a
400 BadRequest; a token from another resourceVersion than the store's is 410 Gone with reason
``Expired``, the API server's answer once etcd has compacted the revision a token was taken at
(simcluster is read-only, so only a token from elsewhere, or a forged one, gets there).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
from collections.abc import Callable
from typing import Any

from ._status import ApiError, bad_request

Obj = dict[str, Any]

__all__ = ["EXPIRED_MESSAGE", "Page", "limit_of", "page"]

_VERSION = "meta.k8s.io/v1"
EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of "
    "the results. Continuing with the provided token results in an inconsistent list - objects that were "
    "created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


class Page:
    """One page: its objects, and what the list's metadata adds (``continue``, ``remainingItemCount``)."""

    __slots__ = ("meta", "objects")

    def __init__(self, objects: list[Obj], meta: Obj) -> None:
        self.objects, self.meta = objects, meta


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def _encode(rv: int, key: tuple[str, str]) -> str:
    start = f"{key[0]}/{key[1]}" if key[0] else key[1]
    raw = json.dumps({"v": _VERSION, "rv": rv, "start": start + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(token: str, rv: int, namespaced: bool) -> tuple[str, str]:
    """The key a token continues after; 400 if it does not decode, 410 if it is from another revision."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        doc = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise bad_request(f"continue key is not valid: {type(exc).__name__}") from exc
    if not isinstance(doc, dict) or doc.get("v") != _VERSION:
        raise bad_request(f"continue key is not valid: server does not recognize this encoded key version "
                          f"{doc.get('v') if isinstance(doc, dict) else doc!r}")
    start = doc.get("start")
    if not isinstance(start, str) or not start.endswith("\x00") or not isinstance(doc.get("rv"), int):
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if doc["rv"] != rv:
        raise ApiError(410, "Expired", EXPIRED_MESSAGE, {})
    start = start[:-1]
    if namespaced:
        ns, sep, name = start.partition("/")
        if not sep:
            raise bad_request("continue key is not valid: start key is not in this list")
        return ns, name
    return "", start


def limit_of(value: str | None) -> int:
    """``limit`` as the API server reads it: absent, empty or ≤ 0 is no limit; not a number is 400."""
    if not value:
        return 0
    try:
        return max(0, int(value))
    except ValueError as exc:
        raise bad_request(f"limit: Invalid value: {value!r}: must be an integer") from exc


def page(objects: list[Obj], *, limit: int, token: str, rv: int, namespaced: bool,
         keep: Callable[[Obj], bool] | None = None) -> Page:
    """The page of ``objects`` (sorted by namespace then name) after ``token``, filtered by ``keep``."""
    start = 0
    if token:
        after = _decode(token, rv, namespaced)
        start = bisect.bisect_right(objects, after, key=_key)
    if not limit:
        rest = objects[start:]
        return Page(rest if keep is None else [o for o in rest if keep(o)], {})
    if keep is None:
        out = objects[start:start + limit]
        remaining = len(objects) - start - len(out)
        if remaining <= 0:
            return Page(out, {})
        return Page(out, {"continue": _encode(rv, _key(out[-1])), "remainingItemCount": remaining})
    out = []
    for i in range(start, len(objects)):
        if keep(objects[i]):
            if len(out) == limit:  # one more exists: there is a next page
                return Page(out, {"continue": _encode(rv, _key(out[-1]))})
            out.append(objects[i])
    return Page(out, {})
