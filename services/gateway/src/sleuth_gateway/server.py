"""How the gateway's HTTP server runs: uvicorn with its limits taken from ``gateway`` settings,
and an HTTP/1.1 protocol that gives each request head a deadline.

uvicorn closes idle keep-alive connections, but a client that connects and then sends its request
head slowly (one byte a second: "slowloris") is held forever. ``HeadTimeoutH11Protocol`` arms a
timer when a connection opens and whenever a new request head starts; a head not complete when it
fires is answered 408 and the connection closed (a connection that sent nothing is just closed).
The body has its own deadline in the app (``gateway.body_timeout``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from sleuth_gateway.settings import GatewaySettings

__all__ = ["HeadTimeoutH11Protocol", "server_config"]

_TIMEOUT_BODY = b'{"error": "the request head did not arrive in time"}'
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: application/json\r\n"
    b"cache-control: no-store\r\n"
    b"x-content-type-options: nosniff\r\n"
    b"connection: close\r\n"
    b"content-length: " + str(len(_TIMEOUT_BODY)).encode() + b"\r\n\r\n" + _TIMEOUT_BODY
)


class HeadTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline of ``head_timeout`` seconds for each request head."""

    head_timeout: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            # A head begun (after a keep-alive pause the first byte cancelled uvicorn's idle timer).
            if self._head_timer is None:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_timeout, self._on_head_timeout)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _on_head_timeout(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        started = bool(self.conn.trailing_data[0])
        if started:
            self.logger.info("closed a connection whose request head took over %gs", self.head_timeout)
            self.transport.write(_TIMEOUT_RESPONSE)
        self.transport.close()


def server_config(app: Any, settings: GatewaySettings, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration the gateway runs with (the module's entry point and the tests)."""
    protocol = type("GatewayH11Protocol", (HeadTimeoutH11Protocol,), {"head_timeout": settings.header_timeout})
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "http": protocol,
        "ws": "none",  # no WebSocket routes: no upgrade path around the limits above
        "h11_max_incomplete_event_size": settings.max_header_bytes,
        "timeout_keep_alive": settings.keep_alive_timeout,
        "limit_concurrency": settings.max_connections or None,
        # Only named proxies may set the client address (X-Forwarded-For): it keys the sign-in
        # throttle. uvicorn trusts 127.0.0.1 by default, which on loopback is anyone.
        "proxy_headers": bool(settings.trusted_proxies),
        "forwarded_allow_ips": list(settings.trusted_proxies) or None,
        "server_header": False,
        "log_config": None,
        "access_log": False,
        "timeout_graceful_shutdown": 5,
    }
    options.update(overrides)
    return uvicorn.Config(app, **options)
