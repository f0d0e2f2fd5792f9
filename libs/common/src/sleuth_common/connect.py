"""How every service connects to NATS and Redis: settings in, client options (or a client) out.

One place turns :class:`~sleuth_common.config.NatsSettings` into nats-py ``connect`` options
(``nats_connect_options``) or FastStream ``NatsBroker`` options (``nats_broker_options``), and
:class:`~sleuth_common.config.RedisSettings` into a ``redis.asyncio`` client with a bounded pool
(``redis_client``). Credentials come from the environment (``password_env``) or from files the
settings name; nothing here logs them.

Authentication is one of: a ``.creds`` file, an nkey seed file, or user + password. TLS is on
when the URL says ``tls://`` or a ``tls_*`` file is named, and combines with any of them.
"""

from __future__ import annotations

import math
import ssl
from typing import Any

from faststream.nats import NatsBroker
from faststream.nats.security import NatsCredentials, NatsNKey, NatsSecurity, NatsUserPassword
from faststream.security import BaseSecurity
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from sleuth_common.config import NatsSettings, RedisSettings
from sleuth_common.tracing import broker_middlewares

__all__ = [
    "ConnectConfigError",
    "nats_broker",
    "nats_broker_options",
    "nats_connect_options",
    "nats_servers",
    "nats_tls_context",
    "redis_client",
]


class ConnectConfigError(ValueError):
    """The settings cannot make a connection (a password variable is empty, two kinds of
    credentials are named at once). Raised at start-up, before anything connects."""


def nats_servers(settings: NatsSettings) -> list[str]:
    """The server URLs of ``settings.url`` (comma separated)."""
    return [s.strip() for s in settings.url.split(",") if s.strip()]


def nats_tls_context(settings: NatsSettings) -> ssl.SSLContext | None:
    """An SSL context for the ``tls_*`` settings, or None when TLS is not asked for."""
    wants = (
        settings.tls_ca_file or settings.tls_cert_file or settings.tls_key_file
        or any(s.startswith("tls://") for s in nats_servers(settings))
    )
    if not wants:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=settings.tls_ca_file or None)
    if settings.tls_cert_file:
        ctx.load_cert_chain(settings.tls_cert_file, settings.tls_key_file or None)
    elif settings.tls_key_file:
        raise ConnectConfigError("nats.tls_key_file is set without nats.tls_cert_file")
    if not settings.tls_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _auth_kind(settings: NatsSettings) -> str:
    named = [k for k, v in (("creds_file", settings.creds_file), ("nkey_seed_file", settings.nkey_seed_file),
                            ("user", settings.user)) if v]
    if len(named) > 1:
        raise ConnectConfigError(f"nats: choose one way to authenticate, not {' and '.join(named)}")
    return named[0] if named else ""


def _user_password(settings: NatsSettings) -> tuple[str, str]:
    password = settings.password()
    if password is None:
        raise ConnectConfigError(
            f"nats.user is {settings.user!r} but the environment variable {settings.password_env or '(none)'} "
            "holding its password is empty"
        )
    return settings.user, password.get_secret_value()


def nats_connect_options(settings: NatsSettings, *, name: str) -> dict[str, Any]:
    """Keyword arguments for ``nats.connect``: servers, connection name, timeout, inbox prefix,
    credentials and TLS. Callers add their callbacks and reconnect policy."""
    opts: dict[str, Any] = {
        "servers": nats_servers(settings),
        "name": name,
        "connect_timeout": settings.connect_timeout,
        "inbox_prefix": settings.inbox(),
    }
    kind = _auth_kind(settings)
    if kind == "creds_file":
        opts["user_credentials"] = settings.creds_file
    elif kind == "nkey_seed_file":
        opts["nkeys_seed"] = settings.nkey_seed_file
    elif kind == "user":
        opts["user"], opts["password"] = _user_password(settings)
    tls = nats_tls_context(settings)
    if tls is not None:
        opts["tls"] = tls
    return opts


def _broker_security(settings: NatsSettings) -> BaseSecurity | None:
    # FastStream takes credentials as a security object (its keyword arguments are deprecated).
    tls = nats_tls_context(settings)
    kind = _auth_kind(settings)
    if kind == "creds_file":
        return NatsCredentials.from_file(settings.creds_file, ssl_context=tls)
    if kind == "nkey_seed_file":
        return NatsNKey.from_file(settings.nkey_seed_file, ssl_context=tls)
    if kind == "user":
        user, password = _user_password(settings)
        return NatsUserPassword(user, password, ssl_context=tls)
    return NatsSecurity(ssl_context=tls) if tls is not None else None


def nats_broker_options(settings: NatsSettings, *, name: str) -> dict[str, Any]:
    """Keyword arguments for FastStream's ``NatsBroker``: the same servers, name, timeout, inbox
    prefix, credentials and TLS as :func:`nats_connect_options`."""
    opts: dict[str, Any] = {
        "servers": nats_servers(settings),
        "name": name,
        "connect_timeout": math.ceil(settings.connect_timeout),  # FastStream types it int
        "inbox_prefix": settings.inbox(),
    }
    security = _broker_security(settings)
    if security is not None:
        opts["security"] = security
    return opts


def nats_broker(settings: NatsSettings, *, name: str, **extra: Any) -> NatsBroker:
    """A FastStream ``NatsBroker`` for ``settings`` (not connected); ``extra`` adds broker
    options such as ``max_reconnect_attempts`` or ``log_level``. With tracing on, its handlers
    continue the trace each message carries."""
    middlewares = (*extra.pop("middlewares", ()), *broker_middlewares())
    if middlewares:
        extra["middlewares"] = middlewares
    return NatsBroker(**nats_broker_options(settings, name=name), **extra)


def redis_client(settings: RedisSettings, *, decode_responses: bool = False) -> Redis:
    """A ``redis.asyncio`` client (not connected) logging in as ``settings.username`` with the
    password from ``settings.password_env``, TLS when asked for, and a pool of at most
    ``max_connections`` connections: a command beyond that waits ``timeout`` seconds for one.
    A command that fails on a broken connection is retried once, at once; nothing waits longer."""
    url = settings.url
    kwargs: dict[str, Any] = {
        "max_connections": max(1, settings.max_connections),
        "timeout": settings.timeout,
        "socket_timeout": settings.timeout,
        "socket_connect_timeout": settings.timeout,
        "retry": Retry(NoBackoff(), 1),
        "decode_responses": decode_responses,
    }
    if settings.username:
        kwargs["username"] = settings.username
    password = settings.password()
    if password is not None:
        kwargs["password"] = password.get_secret_value()
    elif settings.username:
        raise ConnectConfigError(
            f"redis.username is {settings.username!r} but the environment variable "
            f"{settings.password_env or '(none)'} holding its password is empty"
        )
    if settings.tls and url.startswith("redis://"):
        url = "rediss://" + url[len("redis://"):]
    if url.startswith("rediss://"):
        kwargs["ssl_cert_reqs"] = "required"
        if settings.ca_file:
            kwargs["ssl_ca_certs"] = settings.ca_file
    pool = BlockingConnectionPool.from_url(url, **kwargs)
    return Redis.from_pool(pool)
