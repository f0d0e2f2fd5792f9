"""``python -m sleuth_kube_mcp --config FILE`` / ``sleuth-kube-mcp``: serve until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn

from sleuth_common.config import load_settings
from sleuth_common.httpserver import uvicorn_limits
from sleuth_common.logs import configure_logging
from sleuth_common.tracing import setup_tracing, traced_asgi
from sleuth_kube_mcp.app import create_app
from sleuth_kube_mcp.kube import KubeConfigError
from sleuth_kube_mcp.settings import Settings

log = logging.getLogger("sleuth_kube_mcp")


def _configure_logging(settings: Settings) -> None:
    configure_logging(settings.logging)
    # httpx logs every request at INFO; the tool-call metrics already count them.
    logging.getLogger("httpx").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sleuth-kube-mcp", description="Read-only Kubernetes MCP server (streamable HTTP at /mcp)."
    )
    parser.add_argument("--config", help="YAML config file (kube_mcp: section; see README)")
    args = parser.parse_args(argv)
    settings = load_settings(Settings, args.config)
    _configure_logging(settings)
    setup_tracing("sleuth-kube-mcp")
    try:
        app = create_app(settings)
    except KubeConfigError as e:
        print(f"sleuth-kube-mcp: {e}", file=sys.stderr)
        return 2
    k = settings.kube_mcp
    log.info("serving MCP on http://%s:%d/mcp", k.host, k.port)
    uvicorn.run(
        traced_asgi(app), host=k.host, port=k.port, log_config=None, access_log=False,
        **uvicorn_limits(header_timeout=k.header_timeout),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
