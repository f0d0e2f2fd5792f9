"""``python -m sleuth_agent --config FILE`` / ``sleuth-agent``."""

from __future__ import annotations

import argparse
import asyncio
import sys

from sleuth_agent.app import create_app
from sleuth_agent.settings import Settings
from sleuth_common.config import load_settings
from sleuth_common.logs import configure_logging


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sleuth-agent", description="Sleuth investigation worker")
    parser.add_argument("--config", help="YAML config file (the stack's shared file)")
    args = parser.parse_args(argv)
    settings = load_settings(Settings, args.config)
    configure_logging(settings.logging)
    try:
        asyncio.run(create_app(settings).run())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
