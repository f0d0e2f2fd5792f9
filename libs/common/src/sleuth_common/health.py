"""Liveness, readiness and the wait for NATS and Redis: what every service's ``/healthz`` and
``/readyz`` answer, and how a service that starts before NATS or Redis waits for them.

- ``/healthz`` (liveness) answers :func:`alive` while the process's event loop runs, whatever
  NATS and Redis do: restarting the process would not bring them back.
- ``/readyz`` (readiness) answers a :class:`Readiness`: 200 when every dependency is ``"ok"``,
  else 503 with each one's state (``{"ready": false, "nats": "disconnected", "redis": "ok"}``).
  It names states only, never addresses or error text: those are for the log.
- A service never gives up on NATS or Redis at start-up. :func:`until_up` repeats a step
  (connect and make the streams, consumers and subscriptions) until it succeeds, and
  :class:`RetryLog` says once per retry interval what is missing: ``nats at nats://nats:4222
  unreachable (Connection refused); retrying every 2s``. :class:`Dependencies` holds one
  service's NATS and Redis as its start-up and its ``/readyz`` see them.
- :func:`run_until_signalled` runs a service between start and SIGTERM/SIGINT; a signal while
  it still waits ends the wait at once.

nats-py retries an unreachable server by itself, the first connection included
(``max_reconnect_attempts=-1``, every ``reconnect_time_wait`` = ``nats.retry_interval``); each
failed attempt reaches :meth:`RetryLog.nats_error_cb`. What escapes a step instead (a login
FastStream refuses to retry, a JetStream request that timed out) reaches :func:`until_up`, which
runs the whole step again after the interval.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import os
import signal
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from redis.asyncio import Redis
from redis.exceptions import AuthenticationError as RedisAuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from sleuth_common.config import NatsSettings, RedisSettings

__all__ = [
    "OK",
    "RETRYABLE",
    "Dependencies",
    "Readiness",
    "RetryLog",
    "alive",
    "cancel_and_wait",
    "describe",
    "nats_state",
    "redis_state",
    "run_until_signalled",
    "safe_url",
    "unreachable",
    "until_up",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
ErrorCallback = Callable[[Exception], Awaitable[None]]

OK = "ok"
RETRYABLE: tuple[type[BaseException], ...] = (OSError, TimeoutError, NatsError, RedisError)
"""Failures that pass: a server not (yet) reachable, a timeout, a refused login (a secret or an
ACL may be fixed while the service waits). Anything else, a configuration error, is raised."""


def alive() -> dict[str, str]:
    """The body of ``/healthz``."""
    return {"status": "alive"}


# -- readiness ------------------------------------------------------------------------------------

def nats_state(nc: NatsClient | None, *, set_up: bool = True) -> str:
    """``"ok"``; ``"disconnected"`` (never connected, or reconnecting); ``"starting"`` (connected,
    the service's streams and subscriptions not made yet)."""
    if nc is None or not nc.is_connected:
        return "disconnected"
    return OK if set_up else "starting"


async def redis_state(redis: Redis, within: float) -> str:
    """``"ok"`` when Redis answers PING within ``within`` seconds, else ``"unreachable"``."""
    try:
        await asyncio.wait_for(redis.ping(), within)
    except (RedisError, OSError, TimeoutError):
        return "unreachable"
    return OK


@dataclass(frozen=True)
class Readiness:
    """What ``/readyz`` answers: each dependency's state (``"ok"`` or what it is instead) and
    facts shown beside them (``info``) that do not decide readiness."""

    states: dict[str, str]
    info: dict[str, object] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return all(state == OK for state in self.states.values())

    @property
    def status_code(self) -> int:
        return 200 if self.ready else 503

    def body(self) -> dict[str, object]:
        return {"ready": self.ready, **self.states, **self.info}


# -- waiting --------------------------------------------------------------------------------------

def safe_url(url: str) -> str:
    """``url`` (or comma-separated URLs) without user name and password, for a log line."""
    shown = []
    for part in (p.strip() for p in url.split(",")):
        split = urlsplit(part)
        if "@" in split.netloc:
            part = urlunsplit(split._replace(netloc=split.netloc.rpartition("@")[2]))
        shown.append(part)
    return ",".join(shown)


def _unwrapped(exc: BaseException) -> BaseException:
    """The socket error redis-py wraps in a message naming host and port, else ``exc``."""
    cause = exc.__cause__ or exc.__context__
    return cause if isinstance(exc, RedisError) and isinstance(cause, OSError) else exc


_NETWORK_ERRNOS = frozenset({
    errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.EPIPE, errno.ETIMEDOUT,
    errno.EHOSTUNREACH, errno.EHOSTDOWN, errno.ENETUNREACH, errno.ENETDOWN,
})


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the server could not be reached, rather than that it refused this
    client (a login, a certificate) or that something local is missing (a credentials file)."""
    exc = _unwrapped(exc)
    if isinstance(exc, RedisAuthenticationError):
        return False
    if isinstance(exc, TimeoutError | ConnectionError | socket.gaierror | RedisConnectionError | RedisTimeoutError):
        return True
    return isinstance(exc, OSError) and exc.errno in _NETWORK_ERRNOS


def describe(exc: BaseException) -> str:
    """A short reason for a log line: ``Connection refused``, ``timed out``,
    ``Authorization Violation``."""
    exc = _unwrapped(exc)
    if isinstance(exc, TimeoutError):  # also asyncio's and nats-py's
        return "timed out"
    if isinstance(exc, ssl.SSLError | socket.gaierror):
        return exc.strerror or str(exc)
    if isinstance(exc, OSError) and exc.errno and exc.errno > 0:
        return os.strerror(exc.errno)  # asyncio says "Connect call failed (...)" for ECONNREFUSED
    text = str(exc).strip().removeprefix("nats: ").strip("'")
    return text or type(exc).__name__


class RetryLog:
    """Says that a dependency cannot be used: one WARNING line per retry interval while it
    fails, whoever retries (nats-py or :func:`until_up`), and one INFO line once it answers.
    Addresses are shown without credentials."""

    def __init__(self, what: str, url: str, interval: float, logger: logging.Logger | None = None) -> None:
        self.what = what
        self.where = safe_url(url)
        self.interval = interval
        self.up = False
        """True once a step it watched succeeded."""
        self.failures = 0
        self._log = logger or log
        self._last = -math.inf

    def failed(self, exc: BaseException) -> None:
        self.failures += 1
        now = time.monotonic()
        if now - self._last < self.interval / 2:
            return  # the same attempt seen twice (nats-py's callback, then until_up)
        self._last = now
        how = "unreachable" if unreachable(exc) else "not usable"
        self._log.warning("%s at %s %s (%s); retrying every %gs",
                          self.what, self.where, how, describe(exc), self.interval)

    def succeeded(self) -> None:
        if not self.up and self.failures:
            self._log.info("%s at %s is up", self.what, self.where)
        self.up = True

    def nats_error_cb(self, then: ErrorCallback | None = None) -> ErrorCallback:
        """An ``error_cb`` for nats-py: a failed connection attempt (before the first
        connection, or while reconnecting) goes to :meth:`failed`; other errors once connected
        (a permission refused, a slow consumer) go to ``then``."""

        async def on_error(exc: Exception) -> None:
            if not self.up or unreachable(exc):
                self.failed(exc)
            elif then is not None:
                await then(exc)

        return on_error


async def until_up(attempt: Callable[[], Awaitable[T]], retry: RetryLog) -> T:
    """``await attempt()`` until it succeeds. A :data:`RETRYABLE` failure is logged by
    ``retry`` and tried again after ``retry.interval`` seconds; any other is raised. Cancel the
    caller to stop waiting (SIGTERM)."""
    while True:
        try:
            result = await attempt()
        except RETRYABLE as exc:
            retry.failed(exc)
        else:
            retry.succeeded()
            return result
        await asyncio.sleep(retry.interval)


class Dependencies:
    """One service's NATS connection and Redis client, as its start-up waits for them and its
    ``/readyz`` reports them. The service sets :attr:`nc` once connected and :attr:`set_up`
    once its streams, consumers and subscriptions exist."""

    def __init__(self, nats: NatsSettings, redis: RedisSettings, client: Redis) -> None:
        self.nats_retry = RetryLog("nats", nats.url, nats.retry_interval)
        self.redis_retry = RetryLog("redis", redis.url, redis.retry_interval)
        self.client = client
        self.redis_timeout = redis.timeout
        self.nc: NatsClient | None = None
        self.set_up = False
        self._watch: asyncio.Task[bool] | None = None

    def watch_redis(self) -> None:
        """Ping Redis in the background until it answers, logging while it does not (the
        clients reconnect by themselves; this is for the operator and :meth:`redis_up`)."""
        if self._watch is None:
            self._watch = asyncio.create_task(until_up(self.client.ping, self.redis_retry), name="redis-watch")

    async def redis_up(self) -> None:
        """Wait until Redis answered once."""
        self.watch_redis()
        assert self._watch is not None
        await asyncio.shield(self._watch)

    async def readiness(self, **info: object) -> Readiness:
        return Readiness(
            {"nats": nats_state(self.nc, set_up=self.set_up),
             "redis": await redis_state(self.client, self.redis_timeout)},
            info,
        )

    async def aclose(self) -> None:
        """Stop watching Redis (idempotent)."""
        watch, self._watch = self._watch, None
        if watch is not None:
            await cancel_and_wait(watch)


async def cancel_and_wait(task: asyncio.Task[Any], *, every: float = 0.2) -> None:
    """Cancel ``task`` and wait until it ended, cancelling again while it goes on. On Python
    3.11 a cancel that lands just as a connection attempt fails inside ``asyncio.wait_for`` is
    lost, and nats-py's own retry loop (which catches the failure) would go on for ever."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=every)
    if not task.cancelled():
        task.exception()  # retrieved: what it failed with does not matter once it is stopped


# -- the process ----------------------------------------------------------------------------------

async def run_until_signalled(
    start: Callable[[], Coroutine[Any, Any, None]], stop: Callable[[], Awaitable[None]]
) -> None:
    """Run ``start`` (which may wait long for NATS), then wait for SIGTERM or SIGINT. A signal
    during ``start`` cancels it at once. ``stop`` always runs; a failure of ``start`` is raised
    after it."""
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()
    signals = (signal.SIGTERM, signal.SIGINT)
    for sig in signals:
        loop.add_signal_handler(sig, signalled.set)
    starting = asyncio.create_task(start(), name="start")
    waiting = asyncio.create_task(signalled.wait(), name="wait-for-signal")
    try:
        await asyncio.wait({starting, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            starting.result()  # a start-up failure ends the process
            await waiting
    finally:
        for task in (waiting, starting):
            await cancel_and_wait(task)
        for sig in signals:
            loop.remove_signal_handler(sig)
        await stop()
