"""``sleuth asyncapi``: the AsyncAPI document of every service, generated from code.

    sleuth asyncapi [--out DIR]
        writes DIR/<service>.json (default docs/asyncapi) for agent, alerts, authz-cache, gateway,
        reporter and scheduler: the subscribers of each service's real FastStream routers, and
        what it does with nats-py directly (JetStream consumers, publishers, requests) declared
        from the same subjects and message models (see ``sleuth.asyncapi``).
    sleuth asyncapi --check [--out DIR]
        writes nothing; exits 1 naming each document that differs from what the code makes (run
        ``sleuth asyncapi`` and commit the result).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]

DEFAULT_DIR = Path(__file__).resolve().parents[3] / "docs" / "asyncapi"


def _cmd(args: argparse.Namespace) -> int:
    from sleuth.asyncapi import documents

    out = Path(args.out)
    stale = []
    for name, text in documents().items():
        path = out / f"{name}.json"
        current = path.read_text() if path.is_file() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path))
            continue
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    if stale:
        print("out of date (run `sleuth asyncapi`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("asyncapi", help="write (or --check) the AsyncAPI document of every service",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(DEFAULT_DIR), help="the folder of the documents (docs/asyncapi)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a document is out of date")
    p.set_defaults(func=_cmd)
