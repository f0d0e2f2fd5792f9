"""``/healthz`` (200 while connected to NATS, else 503) and ``/metrics`` on ``authz_cache.metrics_port``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn
from faststream.nats import NatsBroker
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["HealthServer", "health_app"]


def health_app(broker: NatsBroker, registry: CollectorRegistry) -> Starlette:
    async def healthz(_: Request) -> Response:
        connected = await broker.ping(timeout=0.5)
        return JSONResponse({"nats": "connected" if connected else "disconnected"},
                            status_code=200 if connected else 503)

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/healthz", healthz), Route("/metrics", metrics)])


class HealthServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the process (``__main__``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def make_server(broker: NatsBroker, registry: CollectorRegistry, host: str, port: int) -> HealthServer:
    config = uvicorn.Config(health_app(broker, registry), host=host, port=port, log_level="warning",
                            access_log=False, lifespan="off")
    return HealthServer(config)
