"""``python -m sleuth_authz_cache --config FILE`` / ``sleuth-authz-cache``: serve until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from sleuth_authz_cache.app import build
from sleuth_authz_cache.health import make_server
from sleuth_authz_cache.settings import Settings
from sleuth_common.config import load_settings
from sleuth_common.health import run_until_signalled, safe_url
from sleuth_common.identity import IdentityError
from sleuth_common.logs import configure_logging
from sleuth_common.tracing import setup_tracing

log = logging.getLogger("sleuth_authz_cache")


def _configure_logging(settings: Settings) -> None:
    configure_logging(settings.logging)


async def serve(settings: Settings) -> None:
    parts = build(settings)
    if parts.service.signs_identities is False:
        log.warning("authz-cache has no identity signing key (identity.signing_key_file): the agent "
                    "will refuse every job from a person's login")
    server = None
    server_task: asyncio.Task[None] | None = None
    if settings.authz_cache.metrics_port:
        # Up before NATS: /healthz answers while authz-cache waits, /readyz says for what.
        server = make_server(parts.deps, parts.metrics.registry, settings.authz_cache.host,
                             settings.authz_cache.metrics_port)
        server_task = asyncio.create_task(server.serve())

    async def start() -> None:
        log.info("authz-cache connecting to NATS at %s", safe_url(settings.nats.url))
        await parts.start()
        log.info("authz-cache serving %s.authz.* for clusters %s", settings.prefix,
                 [c.name for c in settings.clusters])

    async def stop() -> None:
        log.info("authz-cache stopping")
        await parts.app.stop()
        if server is not None and server_task is not None:
            server.should_exit = True
            await server_task
        await parts.aclose()

    await run_until_signalled(start, stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sleuth-authz-cache", description=__doc__)
    parser.add_argument("--config", help="YAML config file (the stack's shared file)")
    args = parser.parse_args(argv)
    settings = load_settings(Settings, args.config)
    _configure_logging(settings)
    setup_tracing("sleuth-authz-cache")
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        pass
    except IdentityError as e:
        print(f"sleuth-authz-cache: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
