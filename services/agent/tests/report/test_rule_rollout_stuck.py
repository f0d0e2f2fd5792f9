"""rollout_stuck: a Deployment whose Progressing condition says ProgressDeadlineExceeded."""

from __future__ import annotations

from report_objects import findings, workload

STUCK = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
         "message": 'ReplicaSet "web-7d9" has timed out progressing.'}


def test_a_stuck_rollout_names_its_revision_and_how_to_roll_back() -> None:
    dep = workload(annotations={"deployment.kubernetes.io/revision": "14"},
                   status={"conditions": [{"type": "Available", "status": "False"}, STUCK], "availableReplicas": 1})
    (f,) = findings("rollout_stuck", dep)
    assert (f.severity, f.ref) == ("high", "Deployment/team-a/web")
    assert "revision 14" in f.why and "600s" in f.why
    assert "kubectl rollout undo deployment/web -n team-a" in f.fix
    assert f.observed["revision"] == "14" and f.observed["available"] == 1


def test_progressing_rollouts_and_odd_status_are_fine() -> None:
    ok = workload(status={"conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]})
    no_status = workload(name="bare")
    no_status.pop("status")
    odd = workload(name="odd", status={"conditions": [{"type": "Progressing"}]})
    assert findings("rollout_stuck", ok, no_status, odd) == []


def test_without_a_revision_annotation_it_says_the_current_revision() -> None:
    dep = workload(status={"conditions": [STUCK]})
    dep["spec"]["progressDeadlineSeconds"] = 120
    (f,) = findings("rollout_stuck", dep)
    assert "the current revision" in f.why and "120s" in f.why
