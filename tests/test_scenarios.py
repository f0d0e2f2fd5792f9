"""The scenario corpus in CI: every scenario under scenarios/ runs offline (simcluster + kube-mcp
in-process, the asker's scope from SubjectAccessReviews, the real scope filter) through the
deterministic investigator. Fails on any leak (a must_not_mention string anywhere in the result)
and on any scenario marked must_pass that does not pass. The accuracy figures are make bench's.

The scenarios run a few at a time, in the order their tests run: while a test waits for its own
scenario, the next ones start in worker threads (most of a scenario's wall time is simcluster and
kube-mcp starting and stopping, not the investigation). Each scenario still has its own simcluster,
kube-mcp and event loop, and its test fails on its outcome only, within its own timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from sleuth.scenarios import Outcome, Scenario, load_scenarios, run_one

ROOT = Path(__file__).resolve().parents[1] / "scenarios"
SCENARIOS = load_scenarios(ROOT)
AHEAD = 2
"""Scenarios started before their own test, beside the one a test waits for."""


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


class Runs:
    """Each scenario's ``run_one`` in a worker thread with its own event loop (run_one starts
    simcluster and kube-mcp in threads; they stay off the tests' event loops), started when its
    test asks for it or up to ``AHEAD`` tests earlier."""

    def __init__(self, order: list[Scenario]) -> None:
        self.order = order
        self.position = {id(sc): i for i, sc in enumerate(order)}
        self.pool = ThreadPoolExecutor(max_workers=AHEAD + 1, thread_name_prefix="scenario")
        self.started: dict[int, Future[Outcome]] = {}

    def _start(self, sc: Scenario) -> Future[Outcome]:
        if id(sc) not in self.started:
            self.started[id(sc)] = self.pool.submit(lambda: asyncio.run(run_one(sc)))
        return self.started[id(sc)]

    def outcome(self, sc: Scenario) -> Future[Outcome]:
        mine = self._start(sc)
        i = self.position.get(id(sc))
        if i is not None:
            for following in self.order[i + 1 : i + 1 + AHEAD]:
                self._start(following)
        return mine


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest) -> Iterator[Runs]:
    """The scenarios of the tests selected in this module, in the order they run."""
    order = [sc for item in request.session.items
             if isinstance(item, pytest.Function) and item.module is request.module
             and item.originalname == "test_scenario"
             and isinstance(sc := item.callspec.params["scenario"], Scenario)]
    r = Runs(order)
    try:
        yield r
    finally:
        r.pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.connected
@pytest.mark.timeout(60)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
async def test_scenario(scenario: Scenario, runs: Runs) -> None:
    outcome: Outcome = await asyncio.wrap_future(runs.outcome(scenario))
    assert not outcome.leaks, f"{scenario.id} leaked {outcome.leaks}"
    if scenario.must_pass:
        r = outcome.result
        assert outcome.passed, (
            f"{scenario.id}: expected {scenario.expect.get('status')}/{scenario.expect.get('family')} "
            f"{scenario.expect.get('resource')}, got {r.status if r else outcome.error}/"
            f"{r.root_cause.family if r and r.root_cause else ''} {r.root_cause.resource if r and r.root_cause else ''}; "
            f"missing mentions {outcome.mentions_missing}"
        )
