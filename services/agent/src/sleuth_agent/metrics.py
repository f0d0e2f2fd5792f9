"""Prometheus metrics of one agent process and its /healthz + /metrics HTTP server."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["Metrics", "health_app"]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.jobs = Counter(
            "sleuth_agent_jobs",
            "Investigation jobs finished, by result status",
            ["status"],
            registry=self.registry,
        )
        self.job_seconds = Histogram(
            "sleuth_agent_job_seconds",
            "Seconds per investigation job",
            registry=self.registry,
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
        )
        self.tool_calls = Counter(
            "sleuth_tool_calls",
            "Scoped tool calls, by cluster, tool and outcome",
            ["cluster", "tool", "outcome"],
            registry=self.registry,
        )
        self.redeliveries = Counter(
            "sleuth_agent_redeliveries", "Jobs received more than once", registry=self.registry
        )
        self.rejected = Counter(
            "sleuth_agent_rejected_jobs", "Malformed job payloads terminated", registry=self.registry
        )


def health_app(metrics: Metrics, status: Callable[[], dict[str, object]]) -> Starlette:
    """``/healthz`` answers 200 while connected to NATS (503 otherwise); ``/metrics`` for Prometheus."""

    async def healthz(_request: Request) -> JSONResponse:
        body = status()
        return JSONResponse(body, status_code=200 if body.get("ok") else 503)

    async def metrics_endpoint(_request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/healthz", healthz), Route("/metrics", metrics_endpoint)])
