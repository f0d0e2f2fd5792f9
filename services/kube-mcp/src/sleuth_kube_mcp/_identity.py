"""Who a call acts for (DESIGN §2, "the cluster decides").

Every request to ``/mcp`` must carry a valid signed identity assertion (header
``Sleuth-Identity``, minted by the agent for audience ``kube-mcp/<cluster>``), or — with
``accept_caller_token`` — the caller's own Kubernetes bearer token. Anything else is refused with
401 before the MCP layer sees it. Each tool call then reads as that identity: kube-mcp's own
credentials with ``Impersonate-User`` / ``Impersonate-Group``, or the caller's token, so the API
server authorizes every read with the asker's RBAC.

``require_identity: false`` restores the old behaviour (everyone reads with kube-mcp's own
rights); it is meant for a kube-mcp that only Sleuth's agent can reach and is logged loudly.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sleuth_common.httpserver import request_id_of
from sleuth_common.identity import ASSERTION_HEADER, IdentityError, IdentityVerifier
from sleuth_kube_mcp.kube import Caller

__all__ = ["IdentityGate", "Unauthenticated"]

log = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class Unauthenticated(Exception):
    """No valid identity on a request; the message is safe to show the caller."""


def _header(headers: Mapping[str, str], name: str) -> str:
    return headers.get(name) or headers.get(name.lower()) or ""


def _bearer(headers: Mapping[str, str]) -> str:
    scheme, _, token = _header(headers, "Authorization").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class IdentityGate:
    """Turns request headers into the :class:`Caller` a read is made as."""

    def __init__(
        self,
        verifier: IdentityVerifier | None,
        *,
        require: bool = True,
        accept_caller_token: bool = False,
        refused_groups: frozenset[str] = frozenset({"system:masters"}),
    ) -> None:
        self.refused_groups = refused_groups
        if require and verifier is None and not accept_caller_token:
            raise ValueError("require_identity needs a verification key or accept_caller_token")
        self.verifier = verifier
        self.require = require
        self.accept_caller_token = accept_caller_token

    def caller_for(self, headers: Mapping[str, str]) -> Caller:
        """The identity of one request; raises :class:`Unauthenticated`."""
        assertion = _header(headers, ASSERTION_HEADER)
        if assertion and self.verifier is not None:
            try:
                who = self.verifier.verify(assertion)
            except IdentityError as e:
                raise Unauthenticated(str(e)) from e
            if refused := sorted(self.refused_groups & set(who.groups)):
                # Members of these groups bypass RBAC: even a valid assertion (a leaked signing
                # key) must not turn kube-mcp's impersonation right into theirs.
                raise Unauthenticated(f"kube-mcp does not act as a member of {', '.join(refused)}")
            return Caller(user=who.user, groups=who.groups, job=who.job)
        if self.accept_caller_token and (token := _bearer(headers)):
            return Caller(token=token)
        if self.require:
            raise Unauthenticated(
                f"no identity: send a signed {ASSERTION_HEADER} assertion"
                + (" or your own bearer token" if self.accept_caller_token else "")
            )
        return Caller()

    def middleware(self, app: App, path: str = "/mcp") -> App:
        """ASGI middleware refusing requests to ``path`` that carry no valid identity (401)."""

        async def gate(scope: Scope, receive: Receive, send: Send) -> None:
            if scope.get("type") != "http" or not str(scope.get("path", "")).startswith(path):
                await app(scope, receive, send)
                return
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
            try:
                self.caller_for(headers)
            except Unauthenticated as e:
                log.info("refused an MCP request: %s", e)
                body = json.dumps({"error": f"unauthenticated: {e}", "request_id": request_id_of(scope)}).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Sleuth-Identity"),
                    (b"content-length", str(len(body)).encode()),
                ]})
                await send({"type": "http.response.body", "body": body})
                return
            await app(scope, receive, send)

        return gate
