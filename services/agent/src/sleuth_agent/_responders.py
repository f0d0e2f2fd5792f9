"""One shape for the agent's request/reply commands (``diagnostics``, ``kb``, ``feedback``): a
subscriber in queue group ``agent`` (one agent answers), replying where the request says (a branch
of the gateway's inbox). A malformed request gets a permanent error reply, a crash a temporary one,
and a request before the agent made its responder "the agent is starting"."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from faststream.nats import NatsRouter
from prometheus_client import Counter

from sleuth_common.bus import TemporaryBusError, error_replies

__all__ = ["Answers", "command_router"]


class Answers(Protocol):
    def reply(self, req: Any) -> Awaitable[Any]: ...


def command_router(subject: str, queue: str, request: type, reply: type,
                   responder: Callable[[], Answers | None], *, name: str, workers: int = 4,
                   crashes: Counter | None = None) -> NatsRouter:
    """The router answering ``request`` messages on ``subject`` with ``reply`` through whatever
    ``responder()`` gives (None until the agent is connected). ``name`` names the handler (AsyncAPI)."""
    router = NatsRouter(middlewares=[error_replies(crashes, "agent")])

    async def handle(req: Any) -> Any:
        current = responder()
        if current is None:
            raise TemporaryBusError("the agent is starting")
        return await current.reply(req)

    # FastStream decodes and documents by the handler's annotations: the concrete models.
    handle.__name__ = handle.__qualname__ = name
    handle.__annotations__ = {"req": request, "return": reply}
    router.subscriber(subject, queue=queue, max_workers=workers)(handle)
    return router
