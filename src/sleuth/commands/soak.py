"""``sleuth soak``: the chaos soak (``make soak``): see ``sleuth.soak``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]


def _cmd_soak(args: argparse.Namespace) -> int:
    from sleuth.soak import SoakPlan, soak

    snapshot = Path(args.snapshot)
    if not snapshot.is_dir():
        print(f"sleuth soak: {snapshot} is not a snapshot directory", file=sys.stderr)
        return 2
    plan = SoakPlan(minutes=args.minutes, rate=args.rate, down=args.down, pause=args.pause)
    result = soak(snapshot, Path(args.state_dir), plan, Path(args.json) if args.json else None,
                  say=lambda line: print(line, file=sys.stderr, flush=True))
    print(result.markdown())
    for failure in result.failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if result.failures else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("soak", help="chaos soak: the clustered stack under load while parts of it fail in turn")
    p.add_argument("--minutes", type=float, default=10.0, help="load time, faults included (default 10)")
    p.add_argument("--rate", type=float, default=1.0, help="questions per second, all askers together")
    p.add_argument("--down", type=float, default=5.0, help="seconds a killed process stays down")
    p.add_argument("--pause", type=float, default=10.0, help="seconds a process stays stopped (SIGSTOP)")
    p.add_argument("--snapshot", default="scenarios/demo", help="snapshot the simulated cluster serves")
    p.add_argument("--state-dir", default=".sleuth-soak", help="where the stack's data and logs live")
    p.add_argument("--json", default=".sleuth-soak/soak.json", help="where the figures are written as JSON")
    p.set_defaults(func=_cmd_soak)
