"""Prometheus metrics of one reporter process, and its /healthz, /readyz and /metrics server."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sleuth_common.bus import handler_crashes
from sleuth_common.health import Readiness, alive
from sleuth_common.messages import SEVERITIES

__all__ = ["HealthServer", "Metrics", "health_app"]

REPORT_OUTCOMES = ("ok", "denied", "error", "not_finished")
EMAIL_OUTCOMES = ("sent", "failed", "gave_up", "duplicate")


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "sleuth_report_requests",
            "Report commands, by op (run, status) and outcome (started, running, refused, unknown, "
            "shown, unavailable, malformed)",
            ["op", "outcome"],
            registry=self.registry,
        )
        self.reports = Counter(
            "sleuth_reports",
            "Reports posted (or given up), by outcome (ok, denied, error, not_finished)",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in REPORT_OUTCOMES:
            self.reports.labels(outcome)
        self.findings = Counter(
            "sleuth_report_findings",
            "Findings in posted reports, by rule and severity",
            ["rule", "severity"],
            registry=self.registry,
        )
        self.emails = Counter(
            "sleuth_report_emails",
            "Report email sends, by outcome (sent; failed: one try; gave_up: no more tries; "
            "duplicate: already sent by another delivery)",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in EMAIL_OUTCOMES:
            self.emails.labels(outcome)
        self.seconds = Histogram(
            "sleuth_report_seconds",
            "Seconds from a report's request to its chat post",
            registry=self.registry,
            buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300),
        )
        self.crashes = handler_crashes(self.registry, "reporter")

    def count_findings(self, by: dict[tuple[str, str], int]) -> None:
        for (rule, severity), n in by.items():
            if severity in SEVERITIES:
                self.findings.labels(rule, severity).inc(n)


def health_app(metrics: Metrics, readiness: Callable[[], Awaitable[Readiness]]) -> Starlette:
    """``/healthz`` 200 while the process runs; ``/readyz`` 200 when NATS and Redis answer and the
    commands and the queue are served (503 naming what is missing); ``/metrics``."""

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse(alive())

    async def readyz(_request: Request) -> JSONResponse:
        state = await readiness()
        return JSONResponse(state.body(), status_code=state.status_code)

    async def metrics_endpoint(_request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/healthz", healthz), Route("/readyz", readyz),
                             Route("/metrics", metrics_endpoint)])


class HealthServer(uvicorn.Server):
    """A uvicorn server that leaves SIGTERM and SIGINT to the process (``__main__``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
