"""``make bench`` — the scenario corpus: per-scenario pass/fail, then top-1 family and resource
accuracy, confident wrong answers, abstentions, leaks, p50/p95 wall time and tool calls, for the
main corpus and, on its own line, for the hand-written holdout set (``scenarios/holdout-*``) that
measures how the investigator generalises.

Each scenario runs offline (simcluster + kube-mcp in-process, scope from SubjectAccessReviews);
wall time is the investigation alone. The floor for the time figures is the bare round trip of
one tool call (``list_pods``) through the same scoped client, measured in the same run.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

from sleuth.benches import emit
from sleuth.scenarios import (
    OFFLINE_ADMIN_GROUPS,
    first_contact_sets,
    holdout_set,
    load_scenarios,
    offline_cluster,
    run_corpus,
    split_holdout,
    summarize,
    summary_line,
    table,
)

REPO = Path(__file__).resolve().parents[3]


async def _tool_call_floor(snapshot: Path, n: int = 20) -> float:
    from sleuth_common.identity import Identity
    from sleuth_common.mcp import ClusterTools
    from sleuth_common.scope import Scope

    with offline_cluster(snapshot) as oc:
        admin = Identity("bench", OFFLINE_ADMIN_GROUPS)
        async with ClusterTools(oc.cluster, Scope.of(cluster_wide=True), user="bench", identity=admin,
                                signer=oc.signer()) as tools:
            samples = []
            for _ in range(n):
                t0 = time.perf_counter()
                await tools.call("list_pods", {"namespace": "kube-system"})
                samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def run() -> None:
    root = REPO / "scenarios"
    outcomes = run_corpus(root)
    fresh = first_contact_sets(root)
    # First-contact sets are reported as figures only: their rows would make them tuning material.
    print(table([o for o in outcomes if holdout_set(o.scenario) not in fresh]), flush=True)
    main, holdout = split_holdout(outcomes)
    s = summarize(main)
    h = summarize(holdout)
    print(summary_line("main", s), flush=True)
    sets: dict[str, list] = {}
    for o in holdout:
        sets.setdefault(holdout_set(o.scenario), []).append(o)
    # Sets that shaped the code measure regressions; untouched sets measure generalisation.
    for name in sorted(sets, key=lambda n: (n in fresh, n)):
        label = f"{name}{'*' if name in fresh else ''}"
        print(summary_line(label, summarize(sets[name])), flush=True)
    if holdout:
        print(summary_line("holdout", h), flush=True)
        if fresh:
            print("  * first contact: a set nobody has tuned the investigator to (scenarios/FIRST_CONTACT)", flush=True)
    scenarios = load_scenarios(root)
    floor = asyncio.run(_tool_call_floor(scenarios[0].path)) if scenarios else 1.0
    n = s["scenarios"]
    emit("scenarios_correct", s["correct"] * 100, "%", "all scenarios", 100.0, ">= 90%", scenarios=n)
    emit("scenarios_family_top1", s["family_top1"] * 100, "%", "all scenarios", 100.0, ">= 90%")
    emit("scenarios_resource_top1", s["resource_top1"] * 100, "%", "all scenarios", 100.0, ">= 90%")
    emit("scenarios_wrong", s["wrong"] * 100, "%", "all scenarios", 100.0, "<= 3%")
    emit("scenarios_abstained", s["abstained"] * 100, "%", "all scenarios", 100.0, "(abstain rather than guess)")
    if holdout:
        # Scenarios written without reading the investigator: how it does on clusters it has never seen.
        hn = h["scenarios"]
        emit("holdout_correct", h["correct"] * 100, "%", "all holdout scenarios", 100.0, "(report)", scenarios=hn)
        emit("holdout_family_top1", h["family_top1"] * 100, "%", "all holdout scenarios", 100.0, "(report)")
        emit("holdout_wrong", h["wrong"] * 100, "%", "all holdout scenarios", 100.0, "<= 3%")
        emit("holdout_abstained", h["abstained"] * 100, "%", "all holdout scenarios", 100.0, "(report)")
    for name in sorted(fresh & set(sets)):
        f = summarize(sets[name])
        emit(f"{name}_first_contact_correct", f["correct"] * 100, "%", "all scenarios of the set", 100.0, ">= 85%", scenarios=f["scenarios"])
        emit(f"{name}_first_contact_confident_wrong", f["confident_wrong"] * 100, "%", "all scenarios of the set", 100.0, "<= 5%")
    s["leaks"] += h["leaks"]
    s["must_pass_failed"] = s["must_pass_failed"] + h["must_pass_failed"]
    emit("scenarios_leaks", float(s["leaks"]), "count", "none", 1.0, "== 0")
    emit("scenario_wall_p50", s["p50_ms"], "ms", "one scoped list_pods round trip", floor, "< 1000 ms")
    emit("scenario_wall_p95", s["p95_ms"], "ms", "one scoped list_pods round trip", floor, "(report)")
    emit("scenario_tool_calls_p50", s["tool_calls_p50"], "calls", "one call", 1.0, "(report)")
    print(f"must_pass failures: {', '.join(s['must_pass_failed']) or 'none'}", flush=True)
