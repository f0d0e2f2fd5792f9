"""``python -m sleuth_gateway --config FILE`` / ``sleuth-gateway``: serve the gateway with uvicorn."""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn

from sleuth_common.config import load_settings
from sleuth_common.logs import configure_logging
from sleuth_common.tracing import setup_tracing, traced_asgi
from sleuth_gateway.app import create_app
from sleuth_gateway.server import server_config
from sleuth_gateway.settings import Settings

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="sleuth-gateway", description=__doc__)
    parser.add_argument(
        "--config", help="YAML config file of the stack (the gateway: section and shared groups)"
    )
    parser.add_argument("--host", help="override gateway.host")
    parser.add_argument("--port", type=int, help="override gateway.port")
    args = parser.parse_args(argv)
    settings = load_settings(Settings, args.config)
    if args.host or args.port:
        update = {k: v for k, v in (("host", args.host), ("port", args.port)) if v}
        settings = settings.model_copy(update={"gateway": settings.gateway.model_copy(update=update)})
    configure_logging(settings.logging)
    setup_tracing("sleuth-gateway")
    log.info("starting gateway", extra={"url": settings.gateway.url()})
    server = uvicorn.Server(server_config(traced_asgi(create_app(settings)), settings.gateway))
    server.run()
    if not server.started:
        sys.exit(3)  # as uvicorn.run: the app did not start


if __name__ == "__main__":
    main()
