"""``/healthz`` (200 while the process runs), ``/readyz`` (200 when NATS and Redis answer, else
503 naming what does not) and ``/metrics`` on ``authz_cache.metrics_port``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sleuth_common.health import Dependencies, alive

__all__ = ["HealthServer", "health_app", "make_server"]


def health_app(deps: Dependencies, registry: CollectorRegistry) -> Starlette:
    async def healthz(_: Request) -> Response:
        return JSONResponse(alive())

    async def readyz(_: Request) -> Response:
        readiness = await deps.readiness()
        return JSONResponse(readiness.body(), status_code=readiness.status_code)

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/healthz", healthz), Route("/readyz", readyz), Route("/metrics", metrics)])


class HealthServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the process (``__main__``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def make_server(deps: Dependencies, registry: CollectorRegistry, host: str, port: int) -> HealthServer:
    config = uvicorn.Config(health_app(deps, registry), host=host, port=port, log_level="warning",
                            access_log=False, lifespan="off")
    return HealthServer(config)
