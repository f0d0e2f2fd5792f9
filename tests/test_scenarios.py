"""The scenario corpus in CI: every scenario under scenarios/ runs offline (simcluster + kube-mcp
in-process, the asker's scope from SubjectAccessReviews, the real scope filter) through the
deterministic investigator. Fails on any leak (a must_not_mention string anywhere in the result)
and on any scenario marked must_pass that does not pass. The accuracy figures are make bench's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sleuth.scenarios import Outcome, load_scenarios, run_one

ROOT = Path(__file__).resolve().parents[1] / "scenarios"
SCENARIOS = load_scenarios(ROOT)


def test_corpus_is_big_and_covers_every_family() -> None:
    families = {str(s.expect.get("family")) for s in SCENARIOS}
    design = {
        "oom_killed", "crash_loop_app_error", "missing_config", "image_pull", "unschedulable_resources",
        "unschedulable_constraints", "pvc_pending", "volume_mount_failed", "probe_failure", "quota_exceeded",
        "node_not_ready", "evicted", "dns_failure", "network_policy_blocked", "service_no_endpoints",
        "rollout_stuck", "job_failed", "rbac_denied", "dependency_unreachable", "disk_full", "cpu_throttled",
        "healthy", "insufficient_evidence",
    }
    assert len(SCENARIOS) >= 40
    assert design <= families, design - families
    assert sum(1 for s in SCENARIOS if s.source.startswith("holmesgpt:")) >= 15
    assert any(s.alert for s in SCENARIOS)


@pytest.mark.connected
@pytest.mark.timeout(60)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
async def test_scenario(scenario) -> None:
    # run_one starts simcluster and kube-mcp in threads; keep them off this test's event loop.
    outcome: Outcome = await asyncio.to_thread(lambda: asyncio.run(run_one(scenario)))
    assert not outcome.leaks, f"{scenario.id} leaked {outcome.leaks}"
    if scenario.must_pass:
        r = outcome.result
        assert outcome.passed, (
            f"{scenario.id}: expected {scenario.expect.get('status')}/{scenario.expect.get('family')} "
            f"{scenario.expect.get('resource')}, got {r.status if r else outcome.error}/"
            f"{r.root_cause.family if r and r.root_cause else ''} {r.root_cause.resource if r and r.root_cause else ''}; "
            f"missing mentions {outcome.mentions_missing}"
        )
