"""Recency: a restart, probe failure or warning whose last sign is well before the latest data, on
a pod that has run and been ready since, is history ("recovered at T"), never a current cause.
And a "last run" of days is an uptime, not a slow start-up."""

from __future__ import annotations

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._recency import parse_time, recovered, reference_time
from sleuth_agent.rca._records import ContainerView, EventView, PodView
from sleuth_agent.rca.engine.failing import _failing
from sleuth_agent.rca.followups import slow_start_kill

POD = "ledger-7f6e5d4c3b-zz9kq"
PROBE = {"httpGet": {"path": "/live", "port": 7000}, "periodSeconds": 10, "failureThreshold": 3}


def _pod(finished: str = "2031-04-09T06:10:00Z", started: str = "2031-04-09T06:10:04Z", ready: bool = True) -> PodView:
    return PodView.parse({
        "metadata": {"namespace": "ledgers", "name": POD, "ownerReferences": [{"kind": "ReplicaSet", "name": "ledger-7f6e5d4c3b"}]},
        "spec": {"containers": [{"name": "ledger", "livenessProbe": PROBE}]},
        "status": {"phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2031-04-01T00:00:00Z"}],
                   "containerStatuses": [{
                       "name": "ledger", "ready": ready, "restartCount": 1,
                       "state": {"running": {"startedAt": started}},
                       "lastState": {"terminated": {"reason": "Error", "exitCode": 143,
                                                    "startedAt": "2031-04-01T00:00:00Z", "finishedAt": finished}}}]},
    })


def _events(last: str = "2031-04-09T06:09:58Z", latest: str = "2031-04-09T07:00:00Z") -> list[EventView]:
    def ev(kind: str, reason: str, msg: str, ts: str, name: str = POD, count: int = 3) -> EventView:
        return EventView.parse({"namespace": "ledgers", "type": kind, "reason": reason, "message": msg, "count": count,
                                "lastTimestamp": ts, "involvedObject": {"kind": "Pod", "name": name}})
    return [
        ev("Warning", "Unhealthy", "Liveness probe failed: context deadline exceeded", last),
        ev("Normal", "Killing", "Container ledger failed liveness probe, will be restarted", last, count=1),
        ev("Normal", "ScalingReplicaSet", "Scaled down replica set ledger-7f6e5d4c3b to 2", latest, name="ledger", count=1),
    ]


def _obs(pod: PodView, events: list[EventView]) -> WorkloadObservation:
    return WorkloadObservation("ledgers", "Deployment", "ledger", pods=[pod], events=events, named=True)


def test_parse_time_and_reference_is_the_latest_timestamp_in_the_data() -> None:
    assert parse_time("2031-04-09T06:10:00Z") == parse_time("2031-04-09T08:10:00+02:00")
    assert parse_time("") is None and parse_time("yesterday") is None
    assert reference_time([_pod()], _events()) == parse_time("2031-04-09T07:00:00Z")


def test_an_old_restart_on_a_pod_ready_since_is_history_not_a_failure() -> None:
    pod, events = _pod(), _events()
    now = reference_time([pod], events)
    note = recovered(pod, events, now)
    assert note is not None and "06:10:00" in note and "recovered" in note
    obs = _obs(pod, events)
    assert not _failing(obs, now)
    assert obs.derived["history"] and POD in obs.derived["history"][0]


def test_a_recent_restart_or_warning_is_current() -> None:
    pod = _pod(finished="2031-04-09T06:55:00Z", started="2031-04-09T06:55:03Z")
    events = _events(last="2031-04-09T06:54:58Z")
    now = reference_time([pod], events)
    assert recovered(pod, events, now) is None
    assert _failing(_obs(pod, events), now)  # restarted, and the kubelet said why 3 times
    # an old restart but a warning still firing 2 minutes ago: current
    old = _pod()
    assert recovered(old, _events(last="2031-04-09T06:58:00Z"), now) is None


def test_without_timestamps_or_a_clock_nothing_is_called_history() -> None:
    pod = _pod(finished="")
    assert recovered(pod, _events(), parse_time("2031-04-09T07:00:00Z")) is None
    assert recovered(_pod(), _events(), None) is None
    undated = [EventView.parse({"type": "Warning", "reason": "Unhealthy", "message": "x", "involvedObject": {"name": POD}})]
    assert recovered(_pod(), undated, parse_time("2031-04-09T07:00:00Z")) is None
    assert recovered(_pod(ready=False), _events(), parse_time("2031-04-09T07:00:00Z")) is None


def test_a_last_run_of_days_is_an_uptime_not_a_slow_start() -> None:
    c = ContainerView.parse(
        {"name": "ledger", "restartCount": 1, "state": {"running": {}},
         "lastState": {"terminated": {"reason": "Error", "exitCode": 143,
                                      "startedAt": "2031-04-04T06:00:00Z", "finishedAt": "2031-04-09T06:10:00Z"}}},
        {"name": "ledger", "livenessProbe": PROBE},
    )
    log = "2031-04-09T06:09:00Z level=error msg=\"POST /pay 502\"\n2031-04-09T06:09:59Z received SIGTERM, draining"
    assert slow_start_kill(c, log) is None
