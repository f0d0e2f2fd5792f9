"""Bearer token → identity, via authz-cache, with short in-process caches.

Both caches are keyed by the SHA-256 of the token, never the token: successful authentications
for ``ttl`` seconds, refused tokens for ``negative_ttl`` seconds (so repeating a bad token costs
no TokenReview). Concurrent look-ups of one token share one request to authz-cache. A token that
would cost a TokenReview is first checked against the look-ups in progress from the client's
address (at most ``lookups_per_address`` at once) and that address's refused sign-ins
(``LoginThrottle``); identities already remembered are not.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from sleuth_common.messages import AuthenticateReply
from sleuth_common.messages.audit import Entry
from sleuth_gateway.bus import Bus, BusError
from sleuth_gateway.errors import DependencyUnavailable, RateLimited, Unauthorized
from sleuth_gateway.gate import ConcurrencyGate
from sleuth_gateway.ratelimit import LoginThrottle, client_key

__all__ = ["Authenticator", "Identity", "bearer_token", "is_refused"]

_MAX_ENTRIES = 10_000
_V = TypeVar("_V")


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


def _matches(pattern: str, value: str) -> bool:
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    return value == pattern


def is_refused(identity: Identity, entries: Iterable[str]) -> bool:
    """Whether ``identity`` matches one of ``entries`` (``gateway.refused_identities``):
    ``group:NAME`` one of its groups, ``user:NAME`` or a bare ``NAME`` its user name; a trailing
    ``*`` matches any rest."""
    for entry in entries:
        if entry.startswith("group:"):
            if any(_matches(entry[6:], g) for g in identity.groups):
                return True
        elif _matches(entry.removeprefix("user:"), identity.user):
            return True
    return False


def _prune(cache: dict[str, tuple[float, _V]], now: float) -> None:
    """Make room in a bounded cache: drop what lapsed, or everything if nothing did."""
    if len(cache) >= _MAX_ENTRIES:
        for key in [k for k, v in cache.items() if v[0] <= now]:
            del cache[key]
        if len(cache) >= _MAX_ENTRIES:
            cache.clear()


class Authenticator:
    def __init__(
        self,
        bus: Bus,
        ttl: float,
        *,
        negative_ttl: float = 0.0,
        throttle: LoginThrottle | None = None,
        lookups_per_address: int = 0,
        clock: Callable[[], float] = time.monotonic,
        on_sign_in: Callable[[Identity, Entry], None] | None = None,
    ) -> None:
        """``on_sign_in``: told of every identity looked up (not of one served from the cache)."""
        self._bus = bus
        self._ttl = ttl
        self._negative_ttl = negative_ttl
        self._throttle = throttle
        self._clock = clock
        self._cache: dict[str, tuple[float, Identity]] = {}
        self._refused: dict[str, tuple[float, str]] = {}
        self._pending: dict[str, asyncio.Task[Identity]] = {}
        self._lookups = ConcurrencyGate(lookups_per_address)
        self._on_sign_in = on_sign_in

    @staticmethod
    def _key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    async def authenticate(self, token: str, address: str = "", *, entry: Entry = "") -> Identity:
        """The identity of ``token``; ``address`` is the client's (for the sign-in throttle);
        ``entry`` the entry point it came through (for the audit trail)."""
        key = self._key(token)
        now = self._clock()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        refused = self._refused.get(key)
        if refused is not None and refused[0] > now:
            raise Unauthorized(refused[1])
        task = self._pending.get(key)
        if task is None:
            client = client_key(address)
            if not self._lookups.enter(client):
                raise RateLimited(
                    "too many sign-ins in progress from your address: try again in 1 s", 1.0, reason="sign_in_busy"
                )
            task = asyncio.create_task(self._lookup(key, token, address, entry), name="gateway-authenticate")
            self._pending[key] = task
            task.add_done_callback(lambda t: self._done(key, client, t))
        # The same token asked for again while it is looked up waits for that answer, at no cost.
        # Shielded: one caller going away does not cancel the look-up the others wait for.
        return await asyncio.shield(task)

    def _done(self, key: str, client: str, task: asyncio.Task[Identity]) -> None:
        self._pending.pop(key, None)
        self._lookups.leave(client)
        if not task.cancelled():
            task.exception()  # retrieved here too, in case every waiter went away

    async def _lookup(self, key: str, token: str, address: str, entry: Entry = "") -> Identity:
        if self._throttle is not None:
            wait = await self._throttle.wait(address)
            if wait > 0:
                raise RateLimited(
                    f"too many failed sign-ins from your address: try again in {max(1, round(wait))} s",
                    wait,
                    reason="sign_in_throttle",
                )
        reply = await self._ask(token)
        now = self._clock()
        if not reply.authenticated or not reply.user:
            detail = f": {reply.error}" if reply.error else ""
            message = f"the token was not accepted{detail}"
            if self._negative_ttl > 0:
                _prune(self._refused, now)
                self._refused[key] = (now + self._negative_ttl, message)
            if self._throttle is not None:
                await self._throttle.failed(address)
            raise Unauthorized(message)
        identity = Identity(user=reply.user, groups=tuple(reply.groups))
        if self._on_sign_in is not None:
            self._on_sign_in(identity, entry)
        if self._ttl > 0:
            _prune(self._cache, now)
            self._cache[key] = (now + self._ttl, identity)
        return identity

    async def assertion(self, token: str) -> str:
        """A fresh signed assertion of ``token``'s identity for one job (authz-cache signs one per
        reply; the agent accepts each for one job only, so a cached one is never reused)."""
        reply = await self._ask(token)
        if not reply.authenticated or not reply.user:
            raise Unauthorized("the token was not accepted")
        return reply.assertion

    async def _ask(self, token: str) -> AuthenticateReply:
        """authz-cache's answer for ``token``; 503 when it (or every cluster) cannot answer."""
        try:
            reply = await self._bus.authenticate(token)
        except BusError as exc:
            raise DependencyUnavailable(f"authorization is unavailable ({exc}); try again shortly") from exc
        if reply.unavailable:
            raise DependencyUnavailable(f"authorization is unavailable ({reply.error}); try again shortly")
        return reply

    def forget_user(self, user: str) -> None:
        """Drop cached authentications of ``user`` (after ``refresh``)."""
        self._cache = {k: v for k, v in self._cache.items() if v[1].user != user}
