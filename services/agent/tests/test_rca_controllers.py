"""Controller semantics read from the objects (a CronJob blocked by Forbid and a hung run, a
suspended CronJob, a Job stopped by activeDeadlineSeconds, a StatefulSet waiting on an ordinal,
an admission webhook refusing pods): typed facts in, typed diagnoses out."""

from __future__ import annotations

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import EventView, PodView, WorkloadView
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca.engine.rank import rank_matches
from sleuth_agent.rca.followups.controllers import apply, controller_facts


def _diagnose(obs: WorkloadObservation, workloads: list[WorkloadView] | None = None) -> tuple[str, str, dict[str, str]]:
    facts = controller_facts(obs, workloads or [])
    apply(obs, facts)
    best, _ = rank_matches(match_all(obs.facts()))
    assert best is not None
    return best.signature.family, best.confidence, {**obs.variables, **best.variables}


def test_forbid_with_a_hung_run_skips_every_new_run() -> None:
    cron = WorkloadView.parse({"namespace": "fin", "kind": "CronJob", "name": "export", "cron": {
        "concurrency_policy": "Forbid", "active_jobs": ["export-2901"], "last_schedule_time": "2027-02-03T02:00:00Z"}})
    hung = WorkloadView.parse({"namespace": "fin", "kind": "Job", "name": "export-2901", "job": {"start_time": "2027-01-30T02:00:05Z"}})
    skipped = EventView.parse({"type": "Normal", "reason": "JobAlreadyActive", "count": 7, "involved_object": {"kind": "CronJob", "name": "export"},
                               "message": "Not starting job because prior execution is running and concurrency policy is Forbid"})
    obs = WorkloadObservation("fin", "CronJob", "export", workload=cron, events=[skipped])
    family, confidence, v = _diagnose(obs, [cron, hung])
    assert "Forbid" in obs.derived["cron_blocked"][0] and "7 scheduled run(s)" in obs.derived["cron_blocked"][0]
    assert (family, confidence) == ("job_failed", "high")
    assert v["active_job"] == "export-2901" and v["active_since"].startswith("2027-01-30")


def test_forbid_with_an_active_run_and_no_skipped_schedule_is_not_blocked() -> None:
    cron = WorkloadView.parse({"namespace": "fin", "kind": "CronJob", "name": "export", "cron": {
        "concurrency_policy": "Forbid", "active_jobs": ["export-2902"], "last_schedule_time": "2027-02-03T02:00:00Z"}})
    running = WorkloadView.parse({"namespace": "fin", "kind": "Job", "name": "export-2902", "job": {"start_time": "2027-02-03T02:00:04Z"}})
    obs = WorkloadObservation("fin", "CronJob", "export", workload=cron)
    assert [f.kind for f in controller_facts(obs, [cron, running])] == []


def test_a_suspended_cronjob_says_so() -> None:
    cron = WorkloadView.parse({"namespace": "fin", "kind": "CronJob", "name": "export", "cron": {"suspend": True}})
    family, confidence, _v = _diagnose(WorkloadObservation("fin", "CronJob", "export", workload=cron, named=True))
    assert (family, confidence) == ("job_failed", "medium")


def test_a_job_past_its_active_deadline() -> None:
    job = WorkloadView.parse({"namespace": "cat", "kind": "Job", "name": "reindex", "job": {"active_deadline_seconds": 3600, "failed": 1},
                              "conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "Job was active longer than specified deadline"}]})
    obs = WorkloadObservation("cat", "Job", "reindex", workload=job)
    family, confidence, v = _diagnose(obs)
    assert (family, confidence) == ("job_failed", "high")
    assert (v["active_deadline"], v["active_deadline_span"]) == ("3600", "1 h")
    assert any("activeDeadlineSeconds" in d for d in obs.derived["job_deadline"])


def test_orderedready_statefulset_names_the_ordinal_the_others_wait_for() -> None:
    sts = WorkloadView.parse({"namespace": "mq", "kind": "StatefulSet", "name": "rabbit", "replicas": {"desired": 3, "ready": 2},
                              "pod_management_policy": "OrderedReady", "partition": 0})
    pods = [PodView.parse({"namespace": "mq", "name": f"rabbit-{i}", "phase": "Running", "owner": {"kind": "StatefulSet", "name": "rabbit"},
                           "containers": [{"name": "rabbit", "ready": i != 2, "restart_count": 5 if i == 2 else 0,
                                           "state": {"waiting": {"reason": "CrashLoopBackOff"}} if i == 2 else {"running": {}}}]})
            for i in range(3)]
    obs = WorkloadObservation("mq", "StatefulSet", "rabbit", pods=pods, workload=sts)
    facts = controller_facts(obs, [])
    assert [f.kind for f in facts] == ["ordered_ready"]
    assert "rabbit-2" in facts[0].detail


def test_an_admission_webhook_refusing_pods_is_a_stuck_rollout_with_the_rule_quoted() -> None:
    msg = ('Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: policy Deployment/inv/sync for '
           'resource violation: disallow-latest-tag: validate-image-tag: Using a mutable image tag e.g. \'latest\' is not allowed.')
    dep = WorkloadView.parse({"namespace": "inv", "kind": "Deployment", "name": "sync", "replicas": {"desired": 2, "ready": 0, "updated": 0}})
    ev = EventView.parse({"type": "Warning", "reason": "FailedCreate", "count": 14, "message": msg,
                          "involved_object": {"kind": "ReplicaSet", "name": "sync-6c9d"}})
    obs = WorkloadObservation("inv", "Deployment", "sync", events=[ev], workload=dep)
    family, confidence, v = _diagnose(obs)
    assert (family, confidence) == ("rollout_stuck", "high")
    assert v["webhook"] == "validate.kyverno.svc-fail" and "disallow-latest-tag" in v["admission_reason"]
