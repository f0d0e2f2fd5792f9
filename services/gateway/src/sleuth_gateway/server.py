"""How the gateway's HTTP server runs: uvicorn with its limits taken from ``gateway`` settings
(``sleuth_common.httpserver``: a deadline for each request head against slow-header clients, a
bounded head, idle keep-alive timeouts, a connection cap). The body has its own deadline in the
app (``gateway.body_timeout``).
"""

from __future__ import annotations

from typing import Any

import uvicorn

from sleuth_common.httpserver import HeadTimeoutH11Protocol, uvicorn_limits
from sleuth_gateway.settings import GatewaySettings

__all__ = ["HeadTimeoutH11Protocol", "server_config"]


def server_config(app: Any, settings: GatewaySettings, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration the gateway runs with (the module's entry point and the tests)."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        **uvicorn_limits(
            header_timeout=settings.header_timeout,
            keep_alive_timeout=settings.keep_alive_timeout,
            max_header_bytes=settings.max_header_bytes,
            max_connections=settings.max_connections,
        ),
        # Only named proxies may set the client address (X-Forwarded-For): it keys the sign-in
        # throttle. uvicorn trusts 127.0.0.1 by default, which on loopback is anyone.
        "proxy_headers": bool(settings.trusted_proxies),
        "forwarded_allow_ips": list(settings.trusted_proxies) or None,
        "log_config": None,
        "access_log": False,
        "timeout_graceful_shutdown": 5,
    }
    options.update(overrides)
    return uvicorn.Config(app, **options)
