"""The ``sleuth`` command. Subcommands live in ``sleuth.commands`` (one module each)."""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

import sleuth.commands

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sleuth", description="Sleuth: a ChatOps SRE assistant for Kubernetes.")
    sub = p.add_subparsers(dest="command", required=True)
    for mod in sorted(m.name for m in pkgutil.iter_modules(sleuth.commands.__path__)):
        importlib.import_module(f"sleuth.commands.{mod}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
