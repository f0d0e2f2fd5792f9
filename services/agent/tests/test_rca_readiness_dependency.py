"""A readiness check that answers 5xx while the logs keep failing to connect to a dependency is
the dependency's outage seen through the probe: dependency_unreachable ranks above probe_failure.
A 503 with no connect errors stays a probe failure."""

from __future__ import annotations

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import EventView, PodView
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca.engine.rank import rank_matches

POD = "basket-5d4c3b2a19-k2m4n"
CONNECT = "\n".join(
    f"2031-06-01T10:0{i}:00.000Z WARN ConnectionWatchdog : Cannot reconnect to [sessions.cache.internal:6380]: "
    f"connection timed out after 5000 ms: sessions.cache.internal/10.9.8.7:6380"
    for i in range(5)
)


def _obs(log: str) -> WorkloadObservation:
    pod = PodView.parse({
        "metadata": {"namespace": "shop", "name": POD, "ownerReferences": [{"kind": "ReplicaSet", "name": "basket-5d4c3b2a19"}]},
        "spec": {"containers": [{"name": "basket", "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "basket", "ready": False, "restartCount": 0, "state": {"running": {"startedAt": "2031-06-01T09:00:00Z"}}}]},
    })
    ev = EventView.parse({"namespace": "shop", "type": "Warning", "reason": "Unhealthy", "count": 40,
                          "message": "Readiness probe failed: HTTP probe failed with statuscode: 503",
                          "involvedObject": {"kind": "Pod", "name": POD}})
    obs = WorkloadObservation("shop", "Deployment", "basket", pods=[pod], events=[ev], named=True)
    obs.logs[(POD, "basket", False)] = log
    return obs


def test_readiness_503_with_repeated_connect_timeouts_is_dependency_unreachable() -> None:
    primary, others = rank_matches(match_all(_obs(CONNECT).facts()))
    assert primary is not None and primary.signature.family == "dependency_unreachable"
    assert primary.confidence == "high"
    assert "probe_failure" in [m.signature.family for m in others]


def test_readiness_503_without_dependency_errors_stays_a_probe_failure() -> None:
    quiet = "2031-06-01T10:00:00.000Z INFO started on :8080\n2031-06-01T10:01:00.000Z INFO GET /ready 503 warming up"
    primary, _ = rank_matches(match_all(_obs(quiet).facts()))
    assert primary is not None and primary.signature.family == "probe_failure"
