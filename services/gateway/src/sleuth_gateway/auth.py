"""Bearer token → identity, via authz-cache, with a short in-process cache.

The cache is keyed by the SHA-256 of the token, never the token, and remembers only
successful authentications (a refused token is asked about again next time).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from sleuth_gateway.bus import Bus, BusError
from sleuth_gateway.errors import DependencyUnavailable, Unauthorized

__all__ = ["Authenticator", "Identity", "bearer_token"]

_MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...] = ()


def bearer_token(header: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; 401 when absent or malformed."""
    if not header:
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("malformed Authorization header: expected 'Bearer <token>'")
    return token


class Authenticator:
    def __init__(self, bus: Bus, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._bus = bus
        self._ttl = ttl
        self._clock = clock
        self._cache: dict[str, tuple[float, Identity]] = {}

    @staticmethod
    def _key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    async def authenticate(self, token: str) -> Identity:
        key = self._key(token)
        now = self._clock()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            reply = await self._bus.authenticate(token)
        except BusError as exc:
            raise DependencyUnavailable(f"authorization is unavailable ({exc}); try again shortly") from exc
        if reply.unavailable:
            raise DependencyUnavailable(f"authorization is unavailable ({reply.error}); try again shortly")
        if not reply.authenticated or not reply.user:
            detail = f": {reply.error}" if reply.error else ""
            raise Unauthorized(f"the token was not accepted{detail}")
        identity = Identity(user=reply.user, groups=tuple(reply.groups))
        if self._ttl > 0:
            if len(self._cache) >= _MAX_ENTRIES:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                if len(self._cache) >= _MAX_ENTRIES:
                    self._cache.clear()
            self._cache[key] = (now + self._ttl, identity)
        return identity

    def forget_user(self, user: str) -> None:
        """Drop cached authentications of ``user`` (after ``refresh``)."""
        self._cache = {k: v for k, v in self._cache.items() if v[1].user != user}
