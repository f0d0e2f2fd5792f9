"""User impersonation as kube-apiserver's ``WithImpersonation`` filter does it.

Headers: ``Impersonate-User``, ``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and
``Impersonate-Extra-<key>`` (repeatable; the key is lower-cased and percent-decoded). Groups, a uid
or extras without a user are refused with upstream's internal error ("requested [...] without
impersonating a user", HTTP 500 in plain text, exactly what kube-apiserver answers).

Each requested piece is authorized for the *authenticated* requester with the verb ``impersonate``:
``users`` (core group, name = the user), or ``serviceaccounts`` in their namespace for
``system:serviceaccount:<ns>:<name>``; ``groups`` per group; ``uids`` and ``userextras/<key>`` in
``authentication.k8s.io``. The first refusal is a 403 worded like the API server's. Then the request
runs as the impersonated identity: the user, the given groups (a service account without groups gets
``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``), plus ``system:authenticated`` unless
``system:authenticated`` or ``system:unauthenticated`` was given (``system:anonymous`` gets
``system:unauthenticated`` instead).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import unquote

from starlette.datastructures import Headers

from ._loader import User
from ._rbac import AUTHENTICATED, UNAUTHENTICATED, Attributes, Authorizer
from ._status import ApiError, forbidden

USER_HEADER = "impersonate-user"
GROUP_HEADER = "impersonate-group"
UID_HEADER = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
ANONYMOUS = "system:anonymous"
_SA_PREFIX = "system:serviceaccount:"
_AUTHN = "authentication.k8s.io"
_AUTHN_V1 = f"{_AUTHN}/v1"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class InternalError(ApiError):
    """``responsewriters.InternalError``: a plain-text 500, not a ``Status``."""

    def __init__(self, request_uri: str, err: str) -> None:
        super().__init__(500, "InternalError", f"Internal Server Error: {json.dumps(request_uri)}: {err}")


@dataclass(frozen=True)
class _Ask:
    """One thing to impersonate (upstream uses a ``v1.ObjectReference``)."""

    kind: str  # User | ServiceAccount | Group | UserExtra | UID
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""  # the extra's key

    def __str__(self) -> str:  # Go's %v of an ObjectReference
        return "{" + " ".join((self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path)) + "}"

    def attributes(self, requester: User, groups: tuple[str, ...]) -> Attributes:
        """``impersonate`` on what this piece names, asked by ``requester``."""
        api_group, resource = _RESOURCES[self.kind]
        return Attributes(requester.name, groups, "impersonate", namespace=self.namespace, api_group=api_group,
                          resource=resource, subresource=self.field_path, name=self.name)


_RESOURCES = {"ServiceAccount": ("", "serviceaccounts"), "User": ("", "users"), "Group": ("", "groups"),
              "UserExtra": (_AUTHN, "userextras"), "UID": (_AUTHN, "uids")}


def split_service_account(username: str) -> tuple[str, str] | None:
    """``serviceaccount.SplitUsername``: (namespace, name) of ``system:serviceaccount:<ns>:<name>``."""
    if not username.startswith(_SA_PREFIX):
        return None
    parts = username[len(_SA_PREFIX):].split(":")
    if len(parts) != 2:
        return None
    ns, name = parts
    if len(ns) > 63 or not _DNS_LABEL.match(ns) or len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return None
    return ns, name


def requested(headers: Headers, request_uri: str) -> list[_Ask]:
    """``buildImpersonationRequests``: what the headers ask for, in the order upstream checks it."""
    asks: list[_Ask] = []
    user = headers.get(USER_HEADER, "")
    if user:
        sa = split_service_account(user)
        asks.append(_Ask("ServiceAccount", sa[1], sa[0]) if sa else _Ask("User", user))
    groups = [_Ask("Group", g) for g in headers.getlist(GROUP_HEADER)]
    asks += groups
    extras: list[_Ask] = []
    for key in dict.fromkeys(k.lower() for k in headers if k.lower().startswith(EXTRA_PREFIX)):
        extra_key = unquote(key[len(EXTRA_PREFIX):])
        extras += [_Ask("UserExtra", v, api_version=_AUTHN_V1, field_path=extra_key) for v in headers.getlist(key)]
    asks += extras
    uid = headers.get(UID_HEADER, "")
    if uid:
        asks.append(_Ask("UID", uid, api_version=_AUTHN_V1))
    if (groups or extras or uid) and not user:
        raise InternalError(request_uri, f"requested [{' '.join(str(a) for a in asks)}] without impersonating a user")
    return asks


def impersonate(headers: Headers, request_uri: str, requester: User, requester_groups: tuple[str, ...],
                authorizer: Authorizer) -> User | None:
    """The identity the request runs as, or None when it impersonates nobody.

    Raises :class:`InternalError` for groups/uid/extras without a user, and a 403 ``ApiError`` for
    the first piece ``requester`` may not impersonate.
    """
    asks = requested(headers, request_uri)
    if not asks:
        return None
    groups_given = bool(headers.getlist(GROUP_HEADER))
    username, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for ask in asks:
        attrs = ask.attributes(requester, requester_groups)
        if not authorizer.authorize(attrs).allowed:
            raise forbidden(attrs)
        if ask.kind == "ServiceAccount":
            username = f"{_SA_PREFIX}{ask.namespace}:{ask.name}"
            if not groups_given:
                groups = ["system:serviceaccounts", f"system:serviceaccounts:{ask.namespace}"]
        elif ask.kind == "User":
            username = ask.name
        elif ask.kind == "Group":
            groups.append(ask.name)
        elif ask.kind == "UserExtra":
            extra.setdefault(ask.field_path, []).append(ask.name)
        else:
            uid = ask.name
    if username != ANONYMOUS:
        if AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
    elif UNAUTHENTICATED not in groups:
        groups.append(UNAUTHENTICATED)
    return User(username, tuple(groups), token="", uid=uid,
                extra=tuple((k, tuple(v)) for k, v in extra.items()))


def has_impersonation(headers: Headers) -> bool:
    return any(k.lower() in (USER_HEADER, GROUP_HEADER, UID_HEADER) or k.lower().startswith(EXTRA_PREFIX)
               for k in headers)
