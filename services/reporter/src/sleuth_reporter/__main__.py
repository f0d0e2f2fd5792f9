"""``python -m sleuth_reporter --config FILE`` / ``sleuth-reporter``."""

from __future__ import annotations

import argparse
import asyncio
import sys

from sleuth_common.config import load_settings
from sleuth_common.health import run_until_signalled
from sleuth_common.logs import configure_logging
from sleuth_common.tracing import setup_tracing
from sleuth_reporter.app import create_app
from sleuth_reporter.settings import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sleuth-reporter", description="Sleuth best-practice reports")
    parser.add_argument("--config", help="YAML config file (the stack's shared file)")
    args = parser.parse_args(argv)
    settings = load_settings(Settings, args.config)
    configure_logging(settings.logging)
    setup_tracing("sleuth-reporter")
    app = create_app(settings)
    try:
        # /healthz answers at once; the app waits for NATS until SIGTERM ends the wait.
        asyncio.run(run_until_signalled(app.start, app.stop))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
