"""root_or_privileged: privileged or runAsUser 0 (high); nothing preventing root (low)."""

from __future__ import annotations

import yaml
from report_objects import container, cronjob, findings, inventory, pod, pod_spec, run, workload


def with_sc(pod_sc: dict | None, **container_sc: object) -> dict:
    c = container("app", securityContext=dict(container_sc) or None)
    spec = pod_spec(c)
    if pod_sc is None:
        spec.pop("securityContext")
    else:
        spec["securityContext"] = pod_sc
    return workload(spec=spec)


def test_privileged_is_high_and_the_patch_turns_it_off() -> None:
    (f,) = findings("root_or_privileged", with_sc({"runAsNonRoot": True, "runAsUser": 1000}, privileged=True))
    assert f.severity == "high" and f.observed["privileged"] == ["app"]
    spec = yaml.safe_load(f.fix)["spec"]["template"]["spec"]
    assert spec["containers"] == [{"name": "app", "securityContext": {"privileged": False, "allowPrivilegeEscalation": False}}]
    assert spec["securityContext"] == {"runAsNonRoot": True}  # its own non-root user is kept


def test_run_as_user_zero_on_the_pod_is_high() -> None:
    (f,) = findings("root_or_privileged", with_sc({"runAsUser": 0}))
    assert f.severity == "high" and f.observed["run_as_root"] == ["app"] and "runAsUser 0" in f.why


def test_a_container_override_wins_over_the_pod() -> None:
    assert findings("root_or_privileged", with_sc({"runAsUser": 0}, runAsUser=1000)) == []
    (f,) = findings("root_or_privileged", with_sc({"runAsUser": 1000}, runAsUser=0))
    assert f.observed["run_as_root"] == ["app"]


def test_nothing_set_is_low_image_decides() -> None:
    (f,) = findings("root_or_privileged", with_sc(None))
    assert f.severity == "low" and f.observed["root_not_prevented"] == ["app"]
    assert yaml.safe_load(f.fix)["spec"]["template"]["spec"]["securityContext"] == {"runAsNonRoot": True, "runAsUser": 10001}


def test_cronjob_and_pod_fixes_say_where_they_go() -> None:
    got = findings("root_or_privileged", cronjob(spec={"containers": [container("run")]}),
                   pod("debug", spec={"containers": [container("sh")]}))
    fixes = {f.kind: f.fix for f in got}
    assert "jobTemplate" in fixes["CronJob"]
    assert fixes["Pod"].startswith("# pod debug -n team-a: pods cannot be patched")


def test_non_root_is_fine_and_a_text_user_is_not_checked() -> None:
    assert findings("root_or_privileged", with_sc({"runAsNonRoot": True})) == []
    out = run("root_or_privileged", inventory(with_sc({"runAsUser": "root"})))
    assert out.findings == [] and "runAsUser" in out.not_checked[0].reason
