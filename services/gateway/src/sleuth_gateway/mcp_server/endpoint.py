"""The HTTP edge of ``/mcp``: the kill switch, the caller's own token, the API's body limits, then
the MCP SDK (stateless streamable HTTP, Server-Sent Events).

Checked in this order, each answered like the API (``{"error", "request_id"}``) before the MCP
layer sees anything: ``gateway.mcp.enabled`` (403), the method (405: stateless, there is no
stream to open with GET and no session to end with DELETE), the bearer token exactly as for
``/v1/query`` (401 with ``WWW-Authenticate: Bearer``; Sleuth's own identities 403; requests in
progress per user and sign-in limits 429), the content type (415 unless ``application/json``),
the body (``max_body_bytes`` 413, ``body_timeout`` 408, ``max_json_depth``, malformed JSON and
anything not a JSON-RPC 2.0 message 400). The Host allow-list applies as to every path
(``HostCheckMiddleware``). Protocol messages (``initialize``, ``tools/list`` …) take a token from
the caller's read bucket here; a tool call is admitted by its tool, whose refusals are tool
errors the caller's model can read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from sleuth_gateway.body import parse_json_object, read_body
from sleuth_gateway.errors import BadRequest, Forbidden, UnsupportedMediaType
from sleuth_gateway.handlers import _identify, _take_read
from sleuth_gateway.mcp_server.tools import CALLER_KEY, Caller, build_server
from sleuth_gateway.runtime import Gateway

__all__ = ["DISABLED_MESSAGE", "McpEndpoint"]

DISABLED_MESSAGE = (
    "the MCP endpoint is turned off on this gateway (gateway.mcp.enabled: false); "
    "ask over POST /v1/query or in the web chat instead"
)
_EXAMPLE = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'


class McpEndpoint:
    """The ASGI endpoint of ``/mcp`` (mount it with a ``Route`` for GET, POST and DELETE, and run
    ``running()`` in the app's lifespan)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gw = gateway
        cfg = gateway.settings.gateway
        self._manager: StreamableHTTPSessionManager | None = None
        if cfg.mcp.enabled:
            server = build_server(gateway)
            # Builds the session manager; the Starlette app it returns is not used (the
            # gateway's own app carries the route, its middleware and its error handlers).
            server.streamable_http_app(
                stateless_http=True,
                json_response=False,
                max_request_body_size=cfg.max_body_bytes,
                # The gateway's Host allow-list already guards /mcp, with the operator's names.
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )
            self._manager = server.session_manager

    @property
    def enabled(self) -> bool:
        return self._manager is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK's task group for the app's lifetime (nothing when the endpoint is off)."""
        if self._manager is None:
            yield
            return
        async with self._manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if self._manager is None:
            raise Forbidden(DISABLED_MESSAGE)
        if request.method != "POST":
            raise HTTPException(405, "use POST: this MCP endpoint is stateless", headers={"Allow": "POST"})
        cfg = self._gw.settings.gateway
        identity = await _identify(request, bucket="none")
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise UnsupportedMediaType(f"the body must be application/json: a JSON-RPC message like {_EXAMPLE}")
        raw = await read_body(request, cfg.max_body_bytes, cfg.body_timeout)
        message = parse_json_object(raw, cfg.max_json_depth, _EXAMPLE)
        try:
            jsonrpc_message_adapter.validate_python(message, by_name=False)
        except ValidationError:
            # The SDK would answer its multi-line validation report; the caller gets one line.
            raise BadRequest(f"not a JSON-RPC 2.0 message; send one like {_EXAMPLE}") from None
        if message.get("method") != "tools/call":
            await _take_read(self._gw, identity)
        # For the tools: who calls, for this request only (a job gets a fresh signed identity).
        rid = str(request.state.request_id)
        chosen = rid if request.headers.get("x-request-id") == rid else ""
        scope["state"][CALLER_KEY] = Caller(identity, request.state.token, rid, chosen)
        await self._manager.handle_request(scope, _replay(raw, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body read above given back first (then disconnects as they come)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
