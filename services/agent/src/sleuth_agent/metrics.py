"""Prometheus metrics of one agent process and its /healthz, /readyz and /metrics HTTP server."""

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
from sleuth_common.llm import LlmObserver
from sleuth_common.mcp import ToolErrorKind, ToolResult, error_kind

__all__ = ["HealthServer", "Metrics", "MetricsObserver", "ToolMetrics", "health_app"]


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
        self.tool_errors = Counter(
            "sleuth_tool_errors",
            "Scoped tool calls that failed, by cluster and reason (timeout, unreachable, auth, not_found, "
            "bad_args, server_error: sleuth_common.mcp.ToolErrorKind)",
            ["cluster", "reason"],
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "sleuth_tool_call_seconds",
            "Seconds per scoped tool call as the agent sees it (checks, server and result filter), by "
            "cluster, server and tool (\"unlisted\" for a name the server does not list)",
            ["cluster", "server", "tool"],
            registry=self.registry,
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.tool_truncated = Counter(
            "sleuth_tool_results_truncated",
            "Tool results whose text was cut to fit the per-result cap, by cluster and server",
            ["cluster", "server"],
            registry=self.registry,
        )
        self.mcp_connects = Counter(
            "sleuth_mcp_connects",
            "Connections to MCP servers (one per server per job), by cluster, server and outcome (ok, "
            "or a ToolErrorKind: timeout, unreachable, auth)",
            ["cluster", "server", "outcome"],
            registry=self.registry,
        )
        self.crashes = handler_crashes(self.registry, "agent", "job")
        self.instructions_applied = Counter(
            "sleuth_agent_instructions_applied",
            "Answers shaped by standing instructions: suppress (one marked the finding as expected), "
            "llm (given to the AI model)",
            ["how"],
            registry=self.registry,
        )
        self.runbook_hits = Counter(
            "sleuth_agent_runbook_hits",
            "Answers that linked a runbook, by the root cause's family",
            ["family"],
            registry=self.registry,
        )
        self.seen_before_hits = Counter(
            "sleuth_agent_seen_before_hits",
            "Answers with a \"seen before\" section (earlier incidents in the asker's scope), by the root cause's family",
            ["family"],
            registry=self.registry,
        )
        self.feedback = Counter(
            "sleuth_agent_feedback",
            "Feedback taken on answers, by verdict (up, down, none: a fix text only) and the answer's family",
            ["verdict", "family"],
            registry=self.registry,
        )
        self.feedback_refused = Counter(
            "sleuth_agent_feedback_refused",
            "Feedback not taken, by reason (unknown: no such answer for that person; unavailable: Redis)",
            ["reason"],
            registry=self.registry,
        )
        self.incidents_recorded = Counter(
            "sleuth_agent_incidents_recorded",
            "Diagnosed investigations remembered as incidents, by family and whether Redis stored them",
            ["family", "stored"],
            registry=self.registry,
        )
        self.authz_unavailable = Counter(
            "sleuth_agent_authz_unavailable",
            "Jobs answered \"authorization is unavailable\": authz-cache did not answer the scope request",
            registry=self.registry,
        )
        self.redeliveries = Counter(
            "sleuth_agent_redeliveries", "Jobs received more than once", registry=self.registry
        )
        self.rejected = Counter(
            "sleuth_agent_rejected_jobs", "Malformed job payloads terminated", registry=self.registry
        )
        # -- the LLM loop --
        self.llm_requests = Counter(
            "sleuth_llm_requests",
            "HTTP attempts to the model endpoint, by outcome (ok, rate_limited, server_error, network, "
            "timeout, incomplete, bad_tool_arguments, rejected)",
            ["outcome"],
            registry=self.registry,
        )
        self.llm_request_seconds = Histogram(
            "sleuth_llm_request_seconds",
            "Seconds per model request attempt (the whole streamed answer)",
            registry=self.registry,
            buckets=(0.25, 0.5, 1, 2, 5, 10, 20, 40, 60, 120),
        )
        self.llm_failover = Counter(
            "sleuth_llm_failover_changes",
            "Circuit changes of the primary endpoint (open = using the backup)",
            ["state"],
            registry=self.registry,
        )
        self.llm_circuit_open = Gauge(
            "sleuth_llm_circuit_open",
            "1 while the primary endpoint's circuit is open or half-open (answers come from the backup), else 0",
            registry=self.registry,
        )
        self.llm_continuations = Counter(
            "sleuth_llm_continuations", "Answers cut at the output limit and continued", registry=self.registry
        )
        self.llm_nudges = Counter(
            "sleuth_llm_nudges", "Replies that announced work without doing it, sent back", registry=self.registry
        )
        self.llm_trims = Counter(
            "sleuth_llm_context_trims", "Tool outputs dropped to fit the context budget", registry=self.registry
        )
        self.llm_tools_offered = Counter(
            "sleuth_llm_tools_offered", "Tools offered to the model, summed over jobs", registry=self.registry
        )
        self.llm_tools_dropped = Counter(
            "sleuth_llm_tools_dropped", "Tools left out by max_tools, summed over jobs", registry=self.registry
        )
        self.llm_turns = Counter(
            "sleuth_llm_turns",
            "LLM investigations by outcome (answered, max_iterations, demanded; or why the "
            "deterministic answer stood: unavailable, timeout, budget, harness)",
            ["outcome"],
            registry=self.registry,
        )
        self.llm_tokens = Counter(
            "sleuth_llm_tokens", "Model tokens used, by kind (input, output)", ["kind"], registry=self.registry
        )


class MetricsObserver(LlmObserver):
    """The LLM clients' hooks, counted in ``Metrics``."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def attempt(self, provider: str, outcome: str, seconds: float) -> None:
        self.metrics.llm_requests.labels(outcome).inc()
        self.metrics.llm_request_seconds.observe(seconds)

    def breaker(self, name: str, state: str) -> None:
        self.metrics.llm_failover.labels(state).inc()
        self.metrics.llm_circuit_open.set(0 if state == "closed" else 1)


class ToolMetrics:
    """A ``sleuth_common.mcp.ToolObserver``: each scoped call and connection, counted in ``Metrics``.
    Labels are configured names (clusters, servers) and listed tool names only."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def called(self, result: ToolResult, *, listed: bool) -> None:
        m = self.metrics
        m.tool_seconds.labels(result.cluster, result.server, result.tool if listed else "unlisted").observe(
            result.duration_ms / 1000
        )
        kind = error_kind(result)
        if kind is not None:
            m.tool_errors.labels(result.cluster, kind).inc()
        if result.cut:
            m.tool_truncated.labels(result.cluster, result.server).inc()

    def connected(self, cluster: str, server: str, error: ToolErrorKind | None) -> None:
        self.metrics.mcp_connects.labels(cluster, server, error or "ok").inc()


def health_app(metrics: Metrics, readiness: Callable[[], Awaitable[Readiness]]) -> Starlette:
    """``/healthz`` answers 200 while the process runs; ``/readyz`` 200 when NATS and Redis
    answer and jobs are pulled (503 naming what is missing); ``/metrics`` for Prometheus."""

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
