"""``python -m sleuth_alerts --config FILE`` / ``sleuth-alerts``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from sleuth_alerts.app import create_app
from sleuth_alerts.settings import Settings
from sleuth_common.config import load_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sleuth-alerts", description="Sleuth Alertmanager receiver and batcher"
    )
    parser.add_argument("--config", help="YAML config file (the stack's shared file)")
    args = parser.parse_args(argv)
    settings = load_settings(Settings, args.config)
    logging.basicConfig(
        level=settings.logging.level.upper(),
        format='{"ts":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","msg":"%(message)s"}'
        if settings.logging.json_format
        else "%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        asyncio.run(create_app(settings).run())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
