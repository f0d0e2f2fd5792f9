"""Run the app on loopback in a background thread (``sleuth investigate``, tests)."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import uvicorn

from sleuth_common.httpserver import uvicorn_limits
from sleuth_kube_mcp.app import create_app
from sleuth_kube_mcp.kube import ClusterAccess
from sleuth_kube_mcp.settings import Settings

__all__ = ["ServerHandle", "serve_in_thread"]


@dataclass
class ServerHandle:
    """A running kube-mcp. ``url`` is the MCP endpoint (``http://127.0.0.1:PORT/mcp``)."""

    url: str
    base_url: str
    port: int
    _server: uvicorn.Server
    _thread: threading.Thread

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def serve_in_thread(
    settings: Settings, access: ClusterAccess | None = None, start_timeout: float = 15.0
) -> ServerHandle:
    """Start kube-mcp on ``settings.kube_mcp.host``:``port`` (port 0 = a free port) in a daemon
    thread and return once it accepts connections."""
    app = create_app(settings, access)
    host = settings.kube_mcp.host
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, settings.kube_mcp.port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=2,
        **uvicorn_limits(header_timeout=settings.kube_mcp.header_timeout),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"kube-mcp:{port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive():
            sock.close()
            raise RuntimeError("kube-mcp failed to start (see the log)")
        if time.monotonic() > deadline:
            server.should_exit = True
            thread.join(5)
            raise TimeoutError(f"kube-mcp did not start within {start_timeout:g}s")
        time.sleep(0.02)
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    return ServerHandle(url=f"{base}/mcp", base_url=base, port=port, _server=server, _thread=thread)
