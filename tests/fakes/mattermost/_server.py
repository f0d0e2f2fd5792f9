"""Plumbing: uvicorn serving the fake from a thread, and WebSocket connections that can be cut."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from starlette.websockets import WebSocket
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from ._model import new_id


@dataclass(eq=False)
class Conn:
    """One WebSocket: who it belongs to once authenticated, its event counter and its outbox."""

    ws: WebSocket
    loop: asyncio.AbstractEventLoop
    abort: Callable[[], None]
    connection_id: str = field(default_factory=new_id)
    user_id: str = ""
    token: str = ""
    seq: int = 0
    outbox: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)

    def send(self, message: dict[str, Any]) -> None:
        """Queue a message for the write pump, from any thread."""
        try:
            self.loop.call_soon_threadsafe(self.outbox.put_nowait, message)
        except RuntimeError:  # the server loop is gone: so is the connection
            pass

    def cut(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.abort)
        except RuntimeError:
            pass


class _AbortableProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, plus a way to cut a connection without a close frame, as a
    crashed or restarted server does (the client sees 1006)."""

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:
            scope["extensions"]["sleuth.abort"] = self.transport.abort

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            self.handshake_complete = True  # a denial ends the handshake (else uvicorn logs an error)


class _Server(uvicorn.Server):
    """uvicorn's server, stopped at once: no polling tick and no grace period (a fake has no
    response worth finishing), so teardown and ``set_down(refuse=True)`` take milliseconds."""

    _loop: asyncio.AbstractEventLoop | None = None
    _exit: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._exit = asyncio.get_running_loop(), asyncio.Event()
        if not self.should_exit:
            await self._exit.wait()

    def request_exit(self) -> None:
        """From any thread."""
        self.should_exit = True
        if self._loop is not None and self._exit is not None:
            self._loop.call_soon_threadsafe(self._exit.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()


class Listener:
    """The app served by uvicorn on its own thread, on a port kept across a stop and a start."""

    def __init__(self, app: ASGIApp, host: str) -> None:
        self.app, self.host, self.port = app, host, 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self, timeout: float) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited: no 40 ms Nagle stalls
        sock.bind((self.host, self.port))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws=_AbortableProtocol,
            ws_ping_interval=None,
        )
        server = _Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"fake-mattermost-{self.port}", daemon=True
        )
        self._server, self._thread, self._sock = server, thread, sock
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake Mattermost server did not start")
            time.sleep(0.005)

    def stop(self) -> None:
        if self._server is not None:
            self._server.request_exit()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()
        self._server = self._thread = self._sock = None
