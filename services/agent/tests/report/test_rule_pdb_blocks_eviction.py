"""pdb_blocks_eviction: maxUnavailable 0, minAvailable 100%, or minAvailable ≥ the replicas it covers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from report_objects import findings, inventory, pdb, run, workload


@dataclass(frozen=True)
class Case:
    spec: dict[str, Any]
    replicas: int
    blocks: bool


CASES = [
    Case({"maxUnavailable": 0}, 3, True),
    Case({"maxUnavailable": "0%"}, 3, True),
    Case({"minAvailable": "100%"}, 3, True),
    Case({"minAvailable": 3}, 3, True),
    Case({"minAvailable": 1}, 1, True),
    Case({"minAvailable": 4}, 3, True),
    Case({"minAvailable": 2}, 3, False),
    Case({"maxUnavailable": 1}, 1, False),
    Case({"minAvailable": "50%"}, 3, False),
    Case({}, 3, False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.spec}-{c.replicas}")
def test_cases(case: Case) -> None:
    got = findings("pdb_blocks_eviction", pdb(**case.spec), workload(replicas=case.replicas))
    assert bool(got) is case.blocks


def test_finding_names_the_workload_and_the_merge_patch() -> None:
    (f,) = findings("pdb_blocks_eviction", pdb(minAvailable=2), workload(replicas=2))
    assert (f.severity, f.ref) == ("high", "PodDisruptionBudget/team-a/web")
    assert "Deployment/team-a/web" in f.why and "run 2" in f.why
    assert f.fix == ("kubectl patch pdb web -n team-a --type=merge "
                     """-p '{"spec":{"minAvailable":null,"maxUnavailable":1}}'""")
    assert f.observed["replicas"] == 2 and f.observed["selects"] == ["Deployment/team-a/web"]


def test_min_available_with_nothing_selected_is_left_alone() -> None:
    assert findings("pdb_blocks_eviction", pdb(minAvailable=1, selector={"matchLabels": {"app": "gone"}})) == []
    assert findings("pdb_blocks_eviction", pdb(minAvailable=1, selector={})) == []


def test_a_broken_selector_is_not_checked() -> None:
    bad = pdb(minAvailable=1)
    inv = inventory(bad, workload(replicas=1))
    (obj,) = inv.of("PodDisruptionBudget")
    inv.objects["PodDisruptionBudget"] = [type(obj)(obj.kind, obj.namespace, obj.name, {**obj.record, "selector": "app in (a"})]
    out = run("pdb_blocks_eviction", inv)
    assert out.findings == [] and [n.name for n in out.not_checked] == ["web"]
