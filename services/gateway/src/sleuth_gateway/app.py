"""``create_app(settings)``: the gateway's ASGI app (API, MCP endpoint, web chat, health, metrics)."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Route

from sleuth_gateway import asking, channel_api, feedback, handlers, openapi, web
from sleuth_gateway.errors import ApiError
from sleuth_gateway.mattermost import MATTERMOST_PREFIX, MattermostAdapter
from sleuth_gateway.mcp_server import McpEndpoint
from sleuth_gateway.middleware import CorsMiddleware, HostCheckMiddleware, RequestContextMiddleware
from sleuth_gateway.runtime import Gateway
from sleuth_gateway.settings import Settings

__all__ = ["create_app"]

log = logging.getLogger(__name__)


def _mattermost(gateway: Gateway) -> MattermostAdapter | None:
    """The Mattermost bot when ``gateway.mattermost.url`` is set; without a token the gateway
    runs without it and ``/readyz`` says why."""
    cfg = gateway.settings.gateway.mattermost
    if not cfg.url:
        return None
    token = cfg.bot_token()
    if token is None:
        why = f"degraded: no bot token (set {cfg.token_env} or gateway.mattermost.token_file)"
        log.error("the Mattermost bot cannot start: %s", why.removeprefix("degraded: "))
        gateway.status["mattermost"] = lambda: why
        return None
    adapter = MattermostAdapter(gateway, cfg, token.get_secret_value())
    gateway.chat_targets[MATTERMOST_PREFIX] = adapter.deliver
    gateway.deliverers["mattermost"] = adapter.resume_answer
    gateway.status["mattermost"] = lambda: adapter.state
    return adapter


def create_app(settings: Settings | None = None) -> Starlette:
    """Build the app; nothing connects until the ASGI lifespan starts."""
    settings = settings or Settings()
    gateway = Gateway(settings)
    gateway.deliverers["conversation"] = functools.partial(asking.deliver_resumed, gateway)
    mcp = McpEndpoint(gateway)
    mattermost = _mattermost(gateway)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await gateway.start()
            stack.push_async_callback(gateway.stop)
            await stack.enter_async_context(mcp.running())
            if mattermost is not None:
                await mattermost.start()
                stack.push_async_callback(mattermost.stop)
            gateway.resume_pending()  # answers of questions that ran when a gateway went away
            yield

    routes = [
        Route("/", web.index, methods=["GET"]),
        Route("/static/{name}", web.static, methods=["GET"]),
        Route("/openapi.json", openapi.document, methods=["GET"]),
        Route("/v1/whoami", handlers.whoami, methods=["GET"]),
        Route("/v1/query", handlers.query, methods=["POST"]),
        Route("/v1/conversation", handlers.conversation, methods=["GET"]),
        Route("/v1/conversation", handlers.clear_conversation, methods=["DELETE"]),
        Route("/v1/feedback", feedback.feedback, methods=["POST"]),
        Route("/v1/channels", channel_api.list_channels, methods=["GET"]),
        Route("/v1/channels/{channel}/messages", channel_api.channel_messages, methods=["GET"]),
        Route("/v1/channels/{channel}/messages", channel_api.post_channel_message, methods=["POST"]),
        # Streamable HTTP MCP for people's own AI clients; GET and DELETE get a clear 405 there.
        Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
        Route("/healthz", handlers.healthz, methods=["GET"]),
        Route("/readyz", handlers.readyz, methods=["GET"]),
        Route("/metrics", handlers.metrics, methods=["GET"]),
    ]
    middleware = [
        Middleware(RequestContextMiddleware, metrics=gateway.metrics),
        Middleware(
            HostCheckMiddleware,
            names=settings.gateway.host_names(),
            metrics=gateway.metrics,
            exempt=("/healthz", "/readyz", "/metrics"),
        ),
        Middleware(CorsMiddleware, origins=settings.gateway.cors_allowed_origins, metrics=gateway.metrics),
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={ApiError: handlers.api_error, HTTPException: handlers.http_error},
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    app.state.mattermost = mattermost
    return app
