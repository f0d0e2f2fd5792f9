"""Table rows computed like kubectl's printers (pod STATUS/READY/RESTARTS, ages, other kinds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from sleuth_simcluster._printers import deployment_row, event_row, format_selector, job_row, pod_row
from sleuth_simcluster._table import table, wants_table
from sleuth_simcluster._timefmt import human_duration

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _pod(containers: list[dict[str, Any]], phase: str = "Running", init: list[dict[str, Any]] | None = None,
         **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": c["name"]} for c in containers]}
    status: dict[str, Any] = {"phase": phase, "containerStatuses": containers, **extra}
    if init is not None:
        spec["initContainers"] = [{"name": c["name"]} for c in init]
        status["initContainerStatuses"] = init
    return {"metadata": {"name": "p", "creationTimestamp": "2026-11-30T08:00:00Z"}, "spec": spec, "status": status}


RUNNING = {"name": "a", "ready": True, "restartCount": 0, "state": {"running": {}}}


@dataclass(frozen=True)
class Case:
    name: str
    pod: dict[str, Any] = field(hash=False)
    ready: str
    status: str
    restarts: str = "0"


CASES = [
    Case("running", _pod([RUNNING]), "1/1", "Running"),
    Case("crashloop after OOM", _pod([{
        "name": "a", "ready": False, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137, "finishedAt": "2026-11-30T08:55:00Z"}}}]),
        "0/1", "CrashLoopBackOff", "4 (5m ago)"),
    Case("just OOM killed", _pod([{"name": "a", "restartCount": 1,
                                  "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]),
         "0/1", "OOMKilled", "1"),
    Case("pending unscheduled", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
                                 "status": {"phase": "Pending"}}, "0/1", "Pending"),
    Case("image pull", _pod([{"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}}], "Pending"),
         "0/1", "ImagePullBackOff"),
    Case("completed", _pod([{"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}],
                           "Succeeded"), "0/1", "Completed"),
    Case("exit code without reason", _pod([{"name": "a", "state": {"terminated": {"exitCode": 3}}}], "Failed"),
         "0/1", "ExitCode:3"),
    Case("evicted", _pod([], "Failed", reason="Evicted"), "0/0", "Evicted"),
    Case("init container waiting", _pod([{"name": "a", "state": {"waiting": {"reason": "PodInitializing"}}}],
                                        "Pending", init=[{"name": "i", "state": {"waiting": {"reason": "ErrImagePull"}}}]),
         "0/1", "Init:ErrImagePull"),
    Case("init container running", _pod([{"name": "a", "state": {"waiting": {}}}], "Pending",
                                        init=[{"name": "i", "state": {"running": {}}}]), "0/1", "Init:0/1"),
    Case("completed container but one still running", _pod(
        [{"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}, {**RUNNING, "name": "b"}],
        conditions=[{"type": "Ready", "status": "True"}]), "1/2", "Running"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pod_row(case: Case) -> None:
    cells = pod_row(case.pod, NOW)
    assert (cells[1], cells[2], cells[3]) == (case.ready, case.status, case.restarts)


def test_terminating_pod() -> None:
    pod = _pod([RUNNING])
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T08:59:00Z"
    assert pod_row(pod, NOW)[2] == "Terminating"


@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"), (-1, "0s"), (59, "59s"), (119, "119s"), (120, "2m"), (310, "5m10s"), (600, "10m"),
    (3 * 3600, "3h"), (3 * 3600 + 600, "3h10m"), (30 * 3600, "30h"), (50 * 3600, "2d2h"), (8 * 86400, "8d"),
    (800 * 86400, "2y70d"), (10 * 365 * 86400, "10y"),
])
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_table_shape_and_objects() -> None:
    pods = [CASES[0].pod]
    t = table("pods", pods, NOW)
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in t["columnDefinitions"] if c["priority"] == 0] == \
        ["Name", "Ready", "Status", "Restarts", "Age"]
    assert [c["name"] for c in t["columnDefinitions"] if c["priority"] == 1] == \
        ["IP", "Node", "Nominated Node", "Readiness Gates"]
    assert t["rows"][0]["cells"][:5] == ["p", "1/1", "Running", "0", "60m"]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert table("pods", pods, NOW, "Object")["rows"][0]["object"] is pods[0]
    assert "object" not in table("pods", pods, NOW, "None")["rows"][0]
    other = table("limitranges", [{"metadata": {"name": "l", "creationTimestamp": "2026-11-29T09:00:00Z"}}], NOW)
    assert [c["name"] for c in other["columnDefinitions"]] == ["Name", "Age"]
    assert other["rows"][0]["cells"] == ["l", "24h"]


def test_deployment_event_job_rows() -> None:
    dep = {"metadata": {"name": "api", "creationTimestamp": "2026-11-20T09:00:00Z"},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "api"}},
                    "template": {"spec": {"containers": [{"name": "api", "image": "api:1"}]}}},
           "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert deployment_row(dep, NOW) == ["api", "2/3", 3, 2, "10d", "api", "api:1", "app=api"]
    ev = {"metadata": {"name": "e"}, "type": "Warning", "reason": "BackOff", "message": " boom ",
          "involvedObject": {"kind": "Pod", "name": "api-1"}, "count": 4,
          "firstTimestamp": "2026-11-30T08:00:00Z", "lastTimestamp": "2026-11-30T08:58:00Z",
          "source": {"component": "kubelet", "host": "n1"}}
    assert event_row(ev, NOW) == ["2m", "Warning", "BackOff", "pod/api-1", "", "kubelet, n1", "boom", "60m", 4, "e"]
    job = {"metadata": {"name": "j", "creationTimestamp": "2026-11-30T08:00:00Z"}, "spec": {"completions": 1},
           "status": {"succeeded": 0, "startTime": "2026-11-30T08:00:00Z",
                      "conditions": [{"type": "Failed", "status": "True"}]}}
    assert job_row(job, NOW)[:5] == ["j", "Failed", "0/1", "60m", "60m"]
    assert format_selector({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]},
                                                 {"key": "b", "operator": "DoesNotExist"}]}) == "a in (x,y),!b"


def test_wants_table() -> None:
    assert wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert not wants_table("application/json")
