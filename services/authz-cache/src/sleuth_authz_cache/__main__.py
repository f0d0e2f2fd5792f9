"""``python -m sleuth_authz_cache --config FILE`` / ``sleuth-authz-cache``: serve until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from sleuth_authz_cache.app import build
from sleuth_authz_cache.health import make_server
from sleuth_authz_cache.settings import Settings
from sleuth_common.config import load_settings
from sleuth_common.identity import IdentityError
from sleuth_common.logs import configure_logging

log = logging.getLogger("sleuth_authz_cache")


def _configure_logging(settings: Settings) -> None:
    configure_logging(settings.logging)


async def serve(settings: Settings) -> None:
    parts = build(settings)
    if parts.service.signs_identities is False:
        log.warning("authz-cache has no identity signing key (identity.signing_key_file): the agent "
                    "will refuse every job from a person's login")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    server = None
    server_task: asyncio.Task[None] | None = None
    if settings.authz_cache.metrics_port:
        server = make_server(parts.broker, parts.metrics.registry, settings.authz_cache.host,
                             settings.authz_cache.metrics_port)
        server_task = asyncio.create_task(server.serve())
    try:
        log.info("authz-cache connecting to NATS at %s", settings.nats.url)
        start = asyncio.create_task(parts.app.start())
        stopping = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({start, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if start in done:
            start.result()  # raise a start-up failure
            log.info("authz-cache serving %s.authz.* for clusters %s", settings.prefix,
                     [c.name for c in settings.clusters])
            await stopping
        else:
            start.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await start
        log.info("authz-cache stopping")
    finally:
        await parts.app.stop()
        if server is not None and server_task is not None:
            server.should_exit = True
            await server_task
        await parts.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sleuth-authz-cache", description=__doc__)
    parser.add_argument("--config", help="YAML config file (the stack's shared file)")
    args = parser.parse_args(argv)
    settings = load_settings(Settings, args.config)
    _configure_logging(settings)
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
