"""`sleuth-simcluster --snapshot DIR --state-dir DIR [--host 127.0.0.1] [--port 6443]`."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from ._loader import SnapshotError
from .server import SimCluster, SimClusterError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sleuth-simcluster",
                                description="Serve a snapshot directory as a read-only Kubernetes API over HTTPS.")
    p.add_argument("--snapshot", required=True, help="snapshot directory (DESIGN §4) or cluster-info dump")
    p.add_argument("--state-dir", required=True, help="where the CA, certificates and kubeconfigs are written")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=6443, help="port to listen on; 0 picks a free one (default 6443)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sim = SimCluster(args.snapshot, args.state_dir, host=args.host, port=args.port)
    try:
        sim.start()
    except (SnapshotError, SimClusterError) as exc:
        print(f"sleuth-simcluster: {exc}", file=sys.stderr)
        return 2
    try:
        ready = {"url": sim.url, "ca_file": str(sim.ca_file),
                 "kubeconfigs": {user: str(path) for user, path in sim.kubeconfigs().items()}}
        print(json.dumps(ready), flush=True)
        while not stop.wait(1.0):
            pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
