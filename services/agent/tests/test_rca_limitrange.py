"""A LimitRange that refuses the pods of a new ReplicaSet (FailedCreate ... forbidden: maximum
memory usage per Container) beats an old, recovered OOMKill of a pod of the previous ReplicaSet,
and the answer carries the LimitRange's observed values."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import EventView, PodView, WorkloadView
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca.engine.rank import rank_matches

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
_fakes = sys.modules.get("agent_rca_fakes") or importlib.util.module_from_spec(_spec)
if "agent_rca_fakes" not in sys.modules:
    sys.modules["agent_rca_fakes"] = _fakes
    _spec.loader.exec_module(_fakes)

FORBIDDEN = ('pods "viewer-9d8c7b6a5-" is forbidden: [maximum memory usage per Container is 1Gi, '
             'but limit is 1536Mi]')


def _obs() -> WorkloadObservation:
    old_pod = PodView.parse({
        "namespace": "media", "name": "viewer-55aa66bb7-x1y2z", "phase": "Running",
        "owner": {"kind": "ReplicaSet", "name": "viewer-55aa66bb7"},
        "containers": [{"name": "viewer", "ready": True, "restart_count": 1, "state": {"running": {}},
                        "last_termination": {"reason": "OOMKilled", "exit_code": 137},
                        "resources": {"limits": {"memory": "768Mi"}}}],
    })
    dep = WorkloadView.parse({"namespace": "media", "kind": "Deployment", "name": "viewer", "replicas": {"desired": 1, "ready": 1, "updated": 0},
                              "conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": FORBIDDEN},
                                             {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "timed out"}]})
    ev = EventView.parse({"type": "Warning", "reason": "FailedCreate", "count": 12, "message": "Error creating: " + FORBIDDEN,
                          "involved_object": {"kind": "ReplicaSet", "name": "viewer-9d8c7b6a5"}})
    return WorkloadObservation("media", "Deployment", "viewer", pods=[old_pod], events=[ev], workload=dep)


QUOTAS = {"resource_quotas": [{"name": "rq", "hard": {"limits.memory": "8Gi"}, "used": {"limits.memory": "768Mi"}, "at_limit": []}],
          "limit_ranges": [{"name": "per-container", "limits": [{"type": "Container", "max": {"memory": "1Gi"}}]}]}


async def test_limitrange_failedcreate_beats_an_old_oomkill() -> None:
    f, _log = _fakes.follow(_fakes.FakeTools({("list_quotas", "media"): QUOTAS}))
    obs = _obs()
    await f.run(obs)
    primary, others = rank_matches(match_all(obs.facts()))
    assert primary is not None and (primary.signature.family, primary.confidence) == ("quota_exceeded", "high")
    assert "oom_killed" in {m.signature.family for m in others}
    derived = " ".join(obs.derived["quota"])
    assert "LimitRange per-container: Container: max memory=1Gi" in derived
    assert "was OOMKilled at its 768Mi memory limit earlier" in derived
    assert (obs.variables["lr_allowed"], obs.variables["lr_value"], obs.variables["lr_which"]) == ("1Gi", "1536Mi", "limit")
