"""``sleuth report``: the best-practice report offline, against a snapshot (issue 14).

Like ``sleuth investigate``: simcluster and kube-mcp start in-process on loopback, the scope of
``--as USER`` comes from SubjectAccessReviews against simcluster (without ``--as``: the whole
cluster), and the report is the same ``sleuth_agent.report.report()`` the agent runs, through the
same scoped tools and filter. Rules in code, never a model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sleuth.scenarios import OfflineCluster
    from sleuth_common.messages import ReportResult

__all__ = ["register", "report_offline"]


async def report_offline(oc: OfflineCluster, user: str | None, deadline: float = 60.0) -> ReportResult:
    """The report for ``user`` (None: the whole cluster) over the offline cluster ``oc``."""
    from sleuth_agent import Settings as AgentSettings
    from sleuth_agent.report import report
    from sleuth_common.mcp import use_inventory

    settings = AgentSettings(clusters=[oc.cluster], identity=oc.identity)
    scope = await oc.scope_for(user)
    job = oc.job(user, deadline=deadline).model_copy(update={"origin": "report"})
    with use_inventory(oc.inventory):  # the filter's names index, as the agent gets it
        return await report(job, scope, settings)


def _cmd_report(args: argparse.Namespace) -> int:
    from sleuth.scenarios import offline_cluster

    snapshot = Path(args.snapshot)
    if not snapshot.is_dir():
        print(f"sleuth report: {snapshot} is not a directory (a snapshot, or a "
              "`kubectl cluster-info dump --output-directory`)", file=sys.stderr)
        return 2
    with offline_cluster(snapshot) as oc:
        if args.as_user and args.as_user not in oc.users:
            print(f"sleuth report: no user {args.as_user!r} in the snapshot {snapshot} "
                  f"(users: {', '.join(sorted(oc.users))})", file=sys.stderr)
            return 2
        result = asyncio.run(report_offline(oc, args.as_user))
    if args.json:
        print(json.dumps(result.public_json(), indent=2, ensure_ascii=False))
    else:
        print(result.answer_markdown)
    return 0 if result.status == "ok" else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="best-practice report over a snapshot offline (rules in code; simcluster + kube-mcp in-process)",
        description="Run every best-practice rule over what a snapshot user may read, and print the findings "
                    "with their fixes.",
    )
    p.add_argument("--snapshot", required=True,
                   help="snapshot directory (snapshot.yaml, cluster/, logs/), or the output directory of "
                        "`kubectl cluster-info dump` (snapshot.yaml optional)")
    p.add_argument("--as", dest="as_user", default=None,
                   help="snapshot user whose access applies (default: the whole cluster)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of Markdown")
    p.set_defaults(func=_cmd_report)
