"""``sleuth incidents export``: the answers people marked wrong, as scenario skeletons.

    sleuth incidents export [--since 30d] --out DIR [--config FILE]

Writes one directory per incident of the last ``--since`` (``12h``, ``30d``, ``2w``) with negative
feedback (👎, or a "fixed by" text): ``scenario.yaml`` (the question, what the answer said, the fix as a
TODO), ``snapshot.yaml`` and ``capture.sh`` (the cited evidence's kubectl commands filling
``cluster/``). See ``sleuth.incident_export``.

It reads the incidents as the agent keeps them in Redis (``<prefix>:agent:incidents:*``), so it logs in
as the agent's Redis user: ``--config FILE`` (the ``prefix`` and ``redis`` groups of the agent's YAML)
and the environment (``SLEUTH_REDIS__URL``, ``SLEUTH_REDIS__USERNAME``, ``SLEUTH_REDIS_PASSWORD``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["register"]


def _cmd_export(args: argparse.Namespace) -> int:
    from redis.exceptions import RedisError

    from sleuth.commands.audit import parse_since
    from sleuth.incident_export import negative_incidents, write_skeletons
    from sleuth_common.config import ServiceSettings, load_settings
    from sleuth_common.connect import ConnectConfigError, redis_client
    from sleuth_common.messages import Incident

    try:
        now = datetime.now(UTC)
        since = (now - parse_since(args.since, now)).total_seconds()
        settings = load_settings(ServiceSettings, args.config or None)
    except (ValueError, OSError) as exc:
        print(f"sleuth incidents: {exc}", file=sys.stderr)
        return 2
    if since <= 0:
        print("sleuth incidents: --since must reach into the past", file=sys.stderr)
        return 2
    out = Path(args.out)

    async def read() -> list[Incident]:
        redis = redis_client(settings.redis)
        try:
            return await negative_incidents(redis, settings.prefix, since, now=now.timestamp())
        finally:
            await redis.aclose()

    try:
        found = asyncio.run(read())
    except (ConnectConfigError, RedisError, OSError) as exc:
        print(f"sleuth incidents: cannot read the incidents from Redis: {exc}", file=sys.stderr)
        return 1
    try:
        written = write_skeletons(found, out)
    except OSError as exc:
        print(f"sleuth incidents: cannot write to {out}: {exc}", file=sys.stderr)
        return 1
    for e in written:
        print(f"{e.path}  {e.incident.family} on {e.incident.resource} (asked by {e.incident.user or '?'})")
    print(f"{len(written)} incident(s) with negative feedback written to {out}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("incidents", help="incidents Sleuth remembers: export the misses as scenarios",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_subparsers(dest="incidents_command", required=True)
    e = what.add_parser("export", help="write incidents with negative feedback as scenario skeletons",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("--since", default="30d", help="how far back (12h, 30d, 2w) or an ISO time")
    e.add_argument("--out", required=True, help="directory the skeletons are written into")
    e.add_argument("--config", default="", help="the agent's YAML config (prefix, redis); else the environment")
    e.set_defaults(func=_cmd_export)
