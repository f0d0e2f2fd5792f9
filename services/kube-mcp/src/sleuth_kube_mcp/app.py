"""Wiring: settings → Kubernetes access → reader → MCP server → Starlette app."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server import MCPServer
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sleuth_common.health import OK, Readiness, alive
from sleuth_common.httpserver import RequestIds, request_id_of
from sleuth_common.identity import IdentityError, verifier_from_settings
from sleuth_kube_mcp._identity import IdentityGate
from sleuth_kube_mcp._metrics import Metrics
from sleuth_kube_mcp.kube import ClusterAccess, KubeClient, KubeConfigError, load_access
from sleuth_kube_mcp.reads import KubeReader
from sleuth_kube_mcp.settings import Settings
from sleuth_kube_mcp.tools import register_tools

__all__ = ["create_app", "create_mcp_server"]

log = logging.getLogger(__name__)

_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


def _instructions(cluster: str) -> str:
    where = f"the Kubernetes cluster {cluster!r}" if cluster else "one Kubernetes cluster"
    return (
        f"Read-only tools over {where}. Start with list_pods and list_events in the namespace in "
        "question, follow owners with list_workloads, read crashed containers with pod_logs "
        "previous=true, and check configuration with get_pod / get_resource. Every result is JSON; "
        "errors carry the API's message and the kubectl command that reproduces the read."
    )


def identity_gate(settings: Settings) -> IdentityGate:
    """Who may call, from ``kube_mcp`` and the shared ``identity`` section. Raises
    :class:`KubeConfigError` when identity is required and nothing could verify it."""
    k = settings.kube_mcp
    audience = k.identity_audience or f"kube-mcp/{k.cluster_name}"
    try:
        verifier = verifier_from_settings(settings.identity, audience)
    except IdentityError as e:
        raise KubeConfigError(str(e)) from e
    if k.require_identity and verifier is None and not k.accept_caller_token:
        raise KubeConfigError(
            "kube_mcp.require_identity is on but no verification key is configured: set "
            "identity.verify_key_files to the agent's public key (or accept_caller_token: true); "
            "require_identity: false lets anyone who reaches this port read with kube-mcp's rights"
        )
    if not k.require_identity:
        log.warning("kube-mcp: require_identity is off; anyone who reaches %s:%s reads with its own rights",
                    k.host, k.port)
    return IdentityGate(verifier, require=k.require_identity, accept_caller_token=k.accept_caller_token,
                        refused_groups=frozenset(k.refused_groups))


def create_mcp_server(settings: Settings, access: ClusterAccess | None = None) -> tuple[MCPServer, Metrics]:
    """The MCP server with the tools and the /healthz, /readyz and /metrics routes (no transport yet)."""
    k = settings.kube_mcp
    access = access or load_access(k.kubeconfig, k.context, k.service_account_dir)
    gate = identity_gate(settings)
    metrics = Metrics()
    client = KubeClient(access, timeout=k.request_timeout, on_response=metrics.count_response, page_size=k.page_size)
    reader = KubeReader(client, max_log_bytes=k.max_log_bytes, max_items=k.max_items, max_scan=k.max_scan)

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            await client.aclose()

    level = settings.logging.level.upper()
    # MCPServer calls logging.basicConfig; a placeholder handler makes that a no-op, so the
    # process (the CLI, or `sleuth investigate` running this in-process) keeps its own logging.
    guard = logging.NullHandler()
    logging.getLogger().addHandler(guard)
    try:
        server: MCPServer[Any] = MCPServer(
            name="sleuth-kube-mcp",
            title="Sleuth Kubernetes (read-only)",
            instructions=_instructions(k.cluster_name),
            version="0.1.0",
            lifespan=lifespan,
            log_level=level if level in _LEVELS else "INFO",  # type: ignore[arg-type]
        )
    finally:
        logging.getLogger().removeHandler(guard)
    register_tools(server, reader, metrics, gate)
    server.identity_gate = gate  # type: ignore[attr-defined]  # read by create_app

    # Only the caller's own token is read with: kube-mcp needs no credentials of its own.
    callers_only = gate.accept_caller_token and gate.require and gate.verifier is None

    @server.custom_route("/healthz", methods=["GET"], include_in_schema=False)
    async def healthz(_request: Request) -> Response:
        return JSONResponse(alive())

    @server.custom_route("/readyz", methods=["GET"], include_in_schema=False)
    async def readyz(_request: Request) -> Response:
        # Nothing about where or how it reads the API (that is for the log, not for anyone who
        # can reach the port).
        problem = "" if callers_only else access.credentials_problem()
        readiness = Readiness({"kubernetes": problem or OK}, {"cluster": k.cluster_name})
        return JSONResponse(readiness.body(), status_code=readiness.status_code)

    @server.custom_route("/metrics", methods=["GET"], include_in_schema=False)
    async def metrics_route(_request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    log.info("kube-mcp reads %s via %s", access.server, access.source)
    return server, metrics


def create_app(settings: Settings, access: ClusterAccess | None = None) -> Starlette:
    """The ASGI app: streamable HTTP MCP at ``/mcp`` (stateless, JSON responses), ``/healthz``
    (alive), ``/readyz`` (its Kubernetes credentials are loaded), ``/metrics``. Reads kubeconfig /
    service-account files, connects to nothing until a call.
    Raises :class:`sleuth_kube_mcp.kube.KubeConfigError` when no cluster access is configured."""
    server, metrics = create_mcp_server(settings, access)
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        host=settings.kube_mcp.host,
    )
    app.state.mcp_server = server
    app.state.metrics = metrics
    app.add_middleware(_GateMiddleware, gate=server.identity_gate)  # type: ignore[attr-defined]
    app.add_middleware(_McpMethods)
    app.add_middleware(RequestIds)  # outermost: the id and the security headers on every response
    app.add_exception_handler(HTTPException, _http_error)  # 404, 405 ... as {error, request_id}
    return app


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail, "request_id": request_id_of(request.scope)},
                        status_code=exc.status_code, headers=dict(exc.headers or {}))


class _McpMethods:
    """``/mcp`` takes JSON POSTs only. The server is stateless and answers in JSON, so it never sends
    anything on a GET event stream (which would otherwise stay open, holding a connection, until
    the client leaves) and has no session to DELETE: 405. A body that is not declared JSON is 415
    (the SDK would answer it in plain text). Both as ``{error, request_id}``."""

    def __init__(self, app: Any, path: str = "/mcp") -> None:
        self.app, self.path = app, path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        if scope.get("method") != "POST":
            response = JSONResponse({"error": f"{self.path} takes POST (JSON-RPC); this server streams nothing",
                                     "request_id": request_id_of(scope)}, status_code=405, headers={"Allow": "POST"})
            await response(scope, receive, send)
            return
        ctype = next((v for k, v in scope.get("headers", []) if k == b"content-type"), b"")
        if ctype.split(b";")[0].strip().lower() != b"application/json":
            response = JSONResponse({"error": "send the JSON-RPC message with Content-Type: application/json",
                                     "request_id": request_id_of(scope)}, status_code=415)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class _GateMiddleware:
    """Starlette middleware form of :meth:`IdentityGate.middleware` (401 before the MCP layer)."""

    def __init__(self, app: Any, gate: IdentityGate) -> None:
        self._inner = gate.middleware(app)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._inner(scope, receive, send)
