"""Sending an assertion with every HTTP request of a client (an MCP session can outlive one
assertion, so each request gets a fresh one)."""

from __future__ import annotations

from collections.abc import Generator

import httpx2

from sleuth_common.identity._assertion import ASSERTION_HEADER, Identity, IdentitySigner

__all__ = ["AssertionAuth"]


class AssertionAuth(httpx2.Auth):
    """An ``httpx2`` auth flow that signs ``identity`` for ``audience`` on every request."""

    def __init__(self, signer: IdentitySigner, identity: Identity, audience: str) -> None:
        self.signer = signer
        self.identity = identity
        self.audience = audience

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers[ASSERTION_HEADER] = self.signer.mint(
            self.identity.user, self.identity.groups, audience=self.audience, job=self.identity.job
        )
        yield request
