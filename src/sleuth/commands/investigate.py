"""``sleuth investigate``: the deterministic investigator offline, against a snapshot (DESIGN §3).

simcluster and kube-mcp start in-process on loopback; the scope of ``--as USER`` comes from
SubjectAccessReviews against simcluster (without ``--as``: the whole cluster); the investigation is
the same ``sleuth_agent.investigate()`` the agent service runs, through the same scope filter.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

__all__ = ["register"]


def _cmd_investigate(args: argparse.Namespace) -> int:
    from sleuth.scenarios import investigate_offline, offline_cluster

    snapshot = Path(args.snapshot)
    if not snapshot.is_dir():
        print(f"sleuth investigate: {snapshot} is not a directory (a snapshot, or a "
              "`kubectl cluster-info dump --output-directory`)", file=sys.stderr)
        return 2
    alert = None
    if args.alert:
        try:
            alert = json.loads(Path(args.alert).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"sleuth investigate: cannot read the alert {args.alert}: {e}", file=sys.stderr)
            return 2
    with offline_cluster(snapshot) as oc:
        if args.as_user and args.as_user not in oc.users:
            print(f"sleuth investigate: no user {args.as_user!r} in the snapshot {snapshot} "
                  f"(users: {', '.join(sorted(oc.users))})", file=sys.stderr)
            return 2
        result = asyncio.run(investigate_offline(oc, args.as_user, args.question or "", alert))
    if args.format == "markdown":
        print(result.answer_markdown)
    else:
        print(json.dumps(result.public_json(), indent=2, ensure_ascii=False))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "investigate",
        help="investigate a snapshot offline (simcluster + kube-mcp in-process, no LLM)",
        description="Run the deterministic investigator against a snapshot directory, as a snapshot user.",
    )
    p.add_argument("--snapshot", required=True,
                   help="snapshot directory (snapshot.yaml, cluster/, logs/), or the output directory of "
                        "`kubectl cluster-info dump` (snapshot.yaml optional)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--question", help="the question, as a person would ask it in chat")
    what.add_argument("--alert", help="an Alertmanager webhook payload (JSON file)")
    p.add_argument("--as", dest="as_user", default=None,
                   help="snapshot user whose access applies (default: the whole cluster)")
    p.add_argument("--format", choices=("json", "markdown"), default="json", help="output format")
    p.set_defaults(func=_cmd_investigate)
