"""``sleuth up``: start the embedded stack (what ``make run`` calls)."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

__all__ = ["register"]

REPO_DEFAULT_SNAPSHOT = Path("scenarios/demo")


def _cmd_up(args: argparse.Namespace) -> int:
    from sleuth.embedded.stack import Stack, StackPorts, StackSpec, main_loop

    snapshot = Path(args.snapshot)
    if not snapshot.is_dir():
        print(f"sleuth up: {snapshot} is not a directory (a snapshot or a cluster-info dump)", file=sys.stderr)
        return 2
    ports = StackPorts(gateway=args.port)
    clustered = args.nats_cluster > 1
    # The replicated topology: every gateway on the next port up, two authz-caches, Valkey with AOF.
    spec = StackSpec(snapshot=snapshot, state_dir=Path(args.state_dir), ports=ports, agents=args.agents,
                     nats_cluster=args.nats_cluster, gateways=args.gateways,
                     gateway_ports=tuple(args.port + i for i in range(1, args.gateways)),
                     authz_caches=args.authz_caches or (2 if clustered else 1), valkey_aof=clustered)
    # SIGTERM behaves like Ctrl-C so `kill` stops the children too; SIGINT is handled even when
    # started in the background by a shell that ignores it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    t0 = time.monotonic()
    stack = Stack(spec)
    try:
        stack.start()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stack.stop()
        return 130
    except (RuntimeError, TimeoutError, OSError) as e:
        print(f"sleuth up: could not start the stack: {e}", file=sys.stderr)
        print(f"logs are in {stack.logs}/", file=sys.stderr)
        return 1
    print(stack.banner())
    print(f"(started in {time.monotonic() - t0:.1f}s)", flush=True)
    try:
        main_loop(stack)
    finally:
        # A second Ctrl-C (or make's SIGTERM) must not leave half the stack running.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stack.stop()
        print("stopped.", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="start the embedded stack (nats, valkey, simcluster, every service)")
    up.add_argument("--snapshot", default=str(REPO_DEFAULT_SNAPSHOT), help="snapshot directory to serve")
    up.add_argument("--state-dir", default=".sleuth", help="where data, logs and generated config live")
    up.add_argument("--port", type=int, default=8080, help="web chat / HTTP API port")
    up.add_argument("--agents", type=int, default=1, help="number of agent workers")
    up.add_argument("--gateways", type=int, default=1,
                    help="number of gateways (web chat and API on --port, --port+1, …)")
    up.add_argument("--nats-cluster", type=int, default=1, choices=(1, 3),
                    help="nats-server nodes: 3 = a cluster on loopback, streams at 3 replicas, two authz-caches "
                         "and Valkey with an append-only file")
    up.add_argument("--authz-caches", type=int, default=0, help="authz-cache replicas (default 1; 2 with a cluster)")
    up.set_defaults(func=_cmd_up)
