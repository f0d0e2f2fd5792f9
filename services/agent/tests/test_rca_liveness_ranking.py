"""A liveness probe that kills a slow-starting container is a probe failure, not an app crash:
the kubelet's Normal ``Killing … failed liveness probe`` event, exit 143 / SIGTERM in the previous
log while startup was still running, and a probe budget (initialDelaySeconds + failureThreshold x
periodSeconds) with no startupProbe. And ranking: a less confident match never beats a more
confident alternative of the same workload."""

from __future__ import annotations

import json

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import ContainerView, EventView, PodView
from sleuth_agent.rca._report import fill
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca.engine.match import _variables
from sleuth_agent.rca.engine.rank import Finding, rank_matches
from sleuth_agent.rca.followups import FollowUps, slow_start_kill

POD = "ledger-5c4b3a2d1e-q8w7e"
LIVENESS = {"httpGet": {"path": "/livez", "port": 9000}, "initialDelaySeconds": 20, "periodSeconds": 5, "failureThreshold": 4}

SLOW_LOG = "\n".join([
    "2031-03-02T10:00:00.000000000Z boot: ledger 2.1 warming caches",
    "2031-03-02T10:00:15.000000000Z cache: 40% warmed",
    "2031-03-02T10:00:30.000000000Z cache: 80% warmed",
    "2031-03-02T10:00:39.500000000Z main: caught SIGTERM, exiting before the listener came up",
])


def _container(**kw) -> ContainerView:
    raw = {"name": "ledger", "image": "r/ledger:2.1", "ready": False, "restartCount": 7,
           "state": {"waiting": {"reason": "CrashLoopBackOff"}},
           "lastState": {"terminated": {"reason": "Error", "exitCode": 143,
                                        "startedAt": "2031-03-02T09:59:59Z", "finishedAt": "2031-03-02T10:00:40Z"}}}
    spec = {"name": "ledger", "livenessProbe": LIVENESS, **kw}
    return ContainerView.parse(raw, spec)


def _obs(log: str = SLOW_LOG, event_type: str = "Normal", **spec) -> WorkloadObservation:
    pod = PodView.parse({
        "metadata": {"namespace": "books", "name": POD, "ownerReferences": [{"kind": "ReplicaSet", "name": "ledger-5c4b3a2d1e"}]},
        "spec": {"containers": [{"name": "ledger", "image": "r/ledger:2.1", "livenessProbe": LIVENESS, **spec}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "ledger", "ready": False, "restartCount": 7, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"reason": "Error", "exitCode": 143,
                                          "startedAt": "2031-03-02T09:59:59Z", "finishedAt": "2031-03-02T10:00:40Z"}}}]},
    })
    events = [
        EventView.parse({"namespace": "books", "type": event_type, "reason": "Killing",
                         "message": "Container ledger failed liveness probe, will be restarted",
                         "involvedObject": {"kind": "Pod", "name": POD}}),
        EventView.parse({"namespace": "books", "type": "Warning", "reason": "BackOff",
                         "message": f"Back-off restarting failed container ledger in pod {POD}",
                         "involvedObject": {"kind": "Pod", "name": POD}}),
    ]
    obs = WorkloadObservation("books", "Deployment", "ledger", pods=[pod], events=events, named=True)
    obs.logs[(POD, "ledger", True)] = log
    return obs


def test_slow_start_reads_probe_budget_run_time_and_the_stop_line() -> None:
    slow = slow_start_kill(_container(), SLOW_LOG)
    assert slow is not None
    assert slow.budget == 20 + 4 * 5 and slow.ran == 41 and round(slow.log_span or 0) == 40
    assert "SIGTERM" in slow.line and "initialDelaySeconds=20" in slow.text and "no startupProbe" in slow.text


def test_slow_start_needs_an_unfinished_startup_and_no_startup_probe() -> None:
    started = SLOW_LOG.replace("cache: 80% warmed", "http: listening on :9000")
    assert slow_start_kill(_container(), started) is None  # it was up: the probe fails for another reason
    assert slow_start_kill(_container(startupProbe={"tcpSocket": {"port": 9000}}), SLOW_LOG) is None
    assert slow_start_kill(_container(), "") is None


async def test_normal_killing_event_and_sigterm_make_probe_failure_the_root_cause() -> None:
    obs = _obs()
    await FollowUps(None, EvidenceLog(), Collected(), 5.0, False).run(obs)  # type: ignore[arg-type]
    matches = match_all(obs.facts())
    by_family = {m.signature.family: m for m in matches}
    assert by_family["probe_failure"].confidence == "high"
    assert by_family["crash_loop_app_error"].confidence == "low"  # the kubelet stopped it: not a crash
    best, others = rank_matches(matches)
    assert best is not None and best.signature.family == "probe_failure"
    assert "crash_loop_app_error" in {m.signature.family for m in others}
    v = _variables(obs, best)
    text = fill(best.signature.summary, v)
    assert "failureThreshold=4" in text and "periodSeconds=5" in text and "SIGTERM" in text
    actions = [fill(a["command"], v) for a in best.signature.actions]
    patch = json.loads(actions[0].split(" -p ", 1)[1].strip("'"))
    probe = patch["spec"]["template"]["spec"]["containers"][0]
    assert probe["name"] == "ledger" and probe["startupProbe"]["httpGet"] == {"path": "/livez", "port": 9000}
    assert probe["startupProbe"]["periodSeconds"] * probe["startupProbe"]["failureThreshold"] > 41
    assert actions[0].startswith("kubectl patch deployment/ledger -n books ")


def test_a_lower_confidence_match_never_beats_a_higher_confidence_alternative() -> None:
    obs = _obs()
    obs.derive("liveness_kill", "x")  # crash_loop held low, probe_failure high
    matches = match_all(obs.facts())
    assert [m.signature.family for m in matches].index("crash_loop_app_error") < [
        m.signature.family for m in matches
    ].index("probe_failure")  # catalog order alone would pick the crash loop
    best, others = rank_matches(matches)
    f = Finding(obs, best, alternatives=others)
    assert f.family == "probe_failure"
    assert all(f.score >= f.alternative_score(m) for m in f.alternatives)
    assert rank_matches([]) == (None, [])
