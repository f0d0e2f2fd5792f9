"""resources_missing: no memory request and limit, no memory limit, or no CPU request at all."""

from __future__ import annotations

from report_objects import container, cronjob, findings, inventory, pod, pod_spec, run, workload


def with_resources(resources: dict | None, kind: str = "Deployment") -> dict:
    return workload(kind, "web", spec=pod_spec(container("app", resources=resources)))


def test_nothing_set_gets_starting_values_and_says_so() -> None:
    (f,) = findings("resources_missing", with_resources(None))
    assert f.observed["missing"] == ["memory request and limit", "CPU request"]
    assert f.fix == ("kubectl set resources deployment/web -n team-a -c app "
                     "--requests=cpu=100m,memory=128Mi --limits=memory=128Mi   "
                     "# starting values: check real use with kubectl top pod")


def test_a_memory_request_without_limit_gets_the_limit_at_the_request() -> None:
    (f,) = findings("resources_missing", with_resources({"requests": {"cpu": "100m", "memory": "300Mi"}}))
    assert f.observed["missing"] == ["memory limit"]
    assert f.fix == "kubectl set resources deployment/web -n team-a -c app --limits=memory=300Mi"
    assert "node's out-of-memory killer" in f.why


def test_no_cpu_at_all() -> None:
    (f,) = findings("resources_missing", with_resources({"requests": {"memory": "64Mi"}, "limits": {"memory": "64Mi"}}))
    assert f.observed["missing"] == ["CPU request"] and "--requests=cpu=100m" in f.fix


def test_limits_only_and_no_cpu_limit_are_fine() -> None:
    assert findings("resources_missing", with_resources({"limits": {"cpu": "1", "memory": "1Gi"}})) == []
    assert findings("resources_missing", with_resources({"requests": {"cpu": "1", "memory": "1Gi"},
                                                         "limits": {"memory": "1Gi"}})) == []


def test_cronjobs_and_bare_pods_are_judged_but_a_controllers_pod_is_not() -> None:
    bare = pod("debug", spec=pod_spec(container("sh", resources={})))
    owned = pod("web-1", spec=pod_spec(container("sh", resources={})), owner=("ReplicaSet", "web-7d9"))
    cron = cronjob(spec=pod_spec(container("run", port=None, resources={})))
    got = findings("resources_missing", bare, owned, cron)
    assert sorted(f.ref for f in got) == ["CronJob/team-a/nightly", "Pod/team-a/debug"]
    assert "kubectl set resources cronjob/nightly -n team-a -c run" in next(f.fix for f in got if f.kind == "CronJob")


def test_no_containers_no_spec_and_a_bad_quantity() -> None:
    empty = workload(name="empty", spec={"containers": []})
    nospec = workload(name="nospec")
    del nospec["spec"]
    bad = with_resources({"requests": {"cpu": "lots", "memory": "1Gi"}})
    out = run("resources_missing", inventory(empty, nospec, bad))
    assert out.findings == []
    assert [(n.name, n.rule) for n in out.not_checked] == [("web", "resources_missing")]
