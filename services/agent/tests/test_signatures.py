"""Signature matching on dict fixtures shaped like kube-mcp's records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from sleuth_agent.rca import load_catalog, match_facts
from sleuth_agent.rca._observe import WorkloadObservation, next_memory_limit
from sleuth_agent.rca._records import EventView, PodView


def pod(
    phase: str = "Running",
    *,
    ready: bool = False,
    restarts: int = 0,
    state: dict | None = None,
    last: dict | None = None,
    limits: dict | None = None,
    conditions: list | None = None,
) -> dict[str, Any]:
    return {
        "namespace": "team-a",
        "name": "api-7d9-x",
        "phase": phase,
        "owner": {"kind": "ReplicaSet", "name": "api-7d9f8c6b5d"},
        "conditions": conditions or [],
        "containers": [
            {
                "name": "api",
                "image": "reg/api:1",
                "ready": ready,
                "restart_count": restarts,
                "state": state or {"running": {}},
                "last_termination": last,
                "resources": {"limits": limits or {}, "requests": {}},
            }
        ],
    }


def event(reason: str, message: str, type_: str = "Warning") -> dict[str, Any]:
    return {
        "namespace": "team-a",
        "type": type_,
        "reason": reason,
        "message": message,
        "involved_object": {"kind": "Pod", "name": "api-7d9-x"},
    }


@dataclass(frozen=True)
class Case:
    name: str
    pod: dict[str, Any]
    family: str | None
    events: list[dict[str, Any]] = field(default_factory=list)
    logs: str = ""
    confidence: str | None = None


CRASH = {"waiting": {"reason": "CrashLoopBackOff"}}
CASES = [
    Case(
        "oom by reason",
        pod(
            restarts=5,
            state=CRASH,
            last={"reason": "OOMKilled", "exit_code": 137},
            limits={"memory": "256Mi"},
        ),
        "oom_killed",
        confidence="high",
    ),
    Case(
        "oom by 137 + event",
        pod(restarts=2, state=CRASH, last={"reason": "Error", "exit_code": 137}),
        "oom_killed",
        [event("OOMKilling", "Memory cgroup out of memory: Killed process 1")],
    ),
    Case("137 alone is not oom", pod(restarts=1, last={"reason": "Error", "exit_code": 137}), None),
    Case(
        "crash loop app error",
        pod(restarts=9, state=CRASH, last={"reason": "Error", "exit_code": 1}),
        "crash_loop_app_error",
        logs="2026-01-01T00:00:00Z FATAL cannot open /data",
        confidence="high",
    ),
    Case(
        "crash loop without log",
        pod(restarts=9, state=CRASH, last={"reason": "Error", "exit_code": 2}),
        "crash_loop_app_error",
        confidence="medium",
    ),
    Case(
        "image pull",
        pod(state={"waiting": {"reason": "ImagePullBackOff"}}),
        "image_pull",
        [event("Failed", 'Failed to pull image "reg/api:typo": not found')],
        confidence="high",
    ),
    Case(
        "missing configmap",
        pod(
            state={
                "waiting": {
                    "reason": "CreateContainerConfigError",
                    "message": 'configmap "api-cfg" not found',
                }
            }
        ),
        "missing_config",
        confidence="high",
    ),
    Case(
        "missing secret key",
        pod(state={"waiting": {"reason": "CreateContainerConfigError"}}),
        "missing_config",
        [event("Failed", "Error: couldn't find key password in Secret team-a/db")],
    ),
    Case(
        "unschedulable",
        pod(
            "Pending",
            state={},
            conditions=[
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient cpu.",
                }
            ],
        ),
        "unschedulable_resources",
    ),
    Case("healthy", pod(ready=True), None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_signature(case: Case) -> None:
    p = PodView.parse(case.pod)
    obs = WorkloadObservation(
        "team-a", *p.workload, pods=[p], events=[EventView.parse(e) for e in case.events]
    )
    assert obs.kind == "Deployment" and obs.name == "api"
    if case.logs:
        obs.logs[(p.name, "api", True)] = case.logs
    m = match_facts(obs.facts())
    assert (m.signature.family if m else None) == case.family
    if case.confidence:
        assert m is not None and m.confidence == case.confidence
    if case.family == "missing_config" and case.name == "missing configmap":
        assert m.variables["missing_name"] == "api-cfg"


def test_catalog_is_data_with_known_families() -> None:
    families = [s.family for s in load_catalog()]
    assert {
        "oom_killed",
        "crash_loop_app_error",
        "image_pull",
        "missing_config",
        "unschedulable_resources",
    } <= set(families)
    assert all(s.summary and s.actions for s in load_catalog())


@pytest.mark.parametrize(
    ("limit", "bigger"), [("256Mi", "512Mi"), ("512Mi", "1Gi"), ("1Gi", "2Gi"), ("100M", "200M")]
)
def test_next_memory_limit(limit: str, bigger: str) -> None:
    assert next_memory_limit(limit) == bigger
