"""Prometheus metrics of one scheduler process (``/metrics``), and its ``/healthz`` and ``/readyz``."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator

import uvicorn
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sleuth_common.bus import handler_crashes
from sleuth_common.health import Readiness, alive

__all__ = ["OUTCOMES", "HealthServer", "Metrics", "health_app"]

OUTCOMES = ("published", "duplicate", "publish_failed", "skipped", "diagnosed", "healthy",
            "insufficient_evidence", "denied", "error", "no_answer", "report_started", "report_refused",
            "report_no_answer")
"""``sleuth_scheduler_runs_total`` outcomes: a run's job put on JOBS (``published``; ``duplicate``
when the stream already had it), not stored (``publish_failed``: retried), an occurrence passed
over after an outage longer than ``grace`` or coalesced into a newer one (``skipped``), and how
each run ended (the result's status, or ``no_answer`` by the deadline); a report schedule's run
ends when the reporter answers (``report_started``, ``report_refused``, ``report_no_answer``)."""


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.active = Gauge("sleuth_scheduler_schedules_active",
                            "Schedules that will run (not paused, not disabled)", registry=self.registry)
        self.runs = Counter("sleuth_scheduler_runs", "Runs and passed-over occurrences, by outcome",
                            ["outcome"], registry=self.registry)
        for outcome in OUTCOMES:
            self.runs.labels(outcome)
        self.lateness = Histogram(
            "sleuth_scheduler_lateness_seconds",
            "Seconds from an occurrence's time plus its schedule's jitter to its job being published",
            registry=self.registry, buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900),
        )
        self.disabled = Counter("sleuth_scheduler_disabled",
                                "Schedules disabled after max_failures failed runs in a row", registry=self.registry)
        self.commands = Counter("sleuth_scheduler_commands", "Schedule commands answered, by op and ok",
                                ["op", "ok"], registry=self.registry)
        self.crashes = handler_crashes(self.registry, "scheduler")

    def render(self) -> bytes:
        return generate_latest(self.registry)


def health_app(metrics: Metrics, readiness: Callable[[], Awaitable[Readiness]]) -> Starlette:
    """``/healthz`` 200 while the process runs; ``/readyz`` 200 when NATS and Redis answer and the
    commands are subscribed (503 naming what is missing); ``/metrics`` for Prometheus."""

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse(alive())

    async def readyz(_request: Request) -> JSONResponse:
        state = await readiness()
        return JSONResponse(state.body(), status_code=state.status_code)

    async def metrics_endpoint(_request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/healthz", healthz), Route("/readyz", readyz),
                             Route("/metrics", metrics_endpoint)])


class HealthServer(uvicorn.Server):
    """A uvicorn server that leaves SIGTERM and SIGINT to the process (``__main__``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
