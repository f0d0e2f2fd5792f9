"""`sleuth-simcluster --snapshot DIR --state-dir DIR [--host 127.0.0.1] [--port 6443] [--advertise NAME]`."""

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
from .server import SimCluster, SimClusterError, advertised_name


def _names(value: str) -> list[str]:
    """One ``--advertise`` value: a name, or several separated by commas."""
    try:
        return [advertised_name(n) for n in value.split(",")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sleuth-simcluster",
                                description="Serve a snapshot directory as a read-only Kubernetes API over HTTPS.")
    p.add_argument("--snapshot", required=True, help="snapshot directory (DESIGN §4) or cluster-info dump")
    p.add_argument("--state-dir", required=True,
                   help="where the CA, certificates, kubeconfigs and token files (tokens/<user>) are written")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=6443, help="port to listen on; 0 picks a free one (default 6443)")
    p.add_argument("--advertise", metavar="NAME", action="extend", type=_names, default=[],
                   help="a host name or address clients reach the server by (repeatable, or comma "
                        "separated): added to the server certificate; the first one is the kubeconfigs' "
                        "server (https://NAME:PORT). Default: the --host address")
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
    sim = SimCluster(args.snapshot, args.state_dir, host=args.host, port=args.port, advertise=args.advertise)
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
