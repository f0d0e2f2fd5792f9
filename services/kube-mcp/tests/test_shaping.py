"""The pure shaping functions on hand-made objects: what a reader of a tool result relies on."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth_kube_mcp import shaping
from sleuth_kube_mcp.tools import _tidy


def _pod(container_statuses: list[dict[str, Any]], phase: str = "Running", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "api-1",
            "namespace": "team-x",
            "ownerReferences": [
                {"kind": "Node", "name": "n1"},
                {"kind": "ReplicaSet", "name": "api-abc", "controller": True},
            ],
            **extra.pop("metadata", {}),
        },
        "spec": {
            "nodeName": "n1",
            "containers": [
                {
                    "name": s["name"],
                    "image": "img:1",
                    "resources": {"limits": {"memory": "256Mi"}},
                    "env": [
                        {"name": "DB_PASSWORD", "value": "hunter2"},
                        {"name": "MODE", "value": "fast"},
                        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "t"}}},
                    ],
                }
                for s in container_statuses
            ],
            **extra.pop("spec", {}),
        },
        "status": {"phase": phase, "containerStatuses": container_statuses, **extra.pop("status", {})},
    }


@dataclass(frozen=True)
class StatusCase:
    name: str
    statuses: list[dict[str, Any]]
    phase: str
    expect: str
    metadata: dict[str, Any] | None = None


STATUS_CASES = [
    StatusCase("running", [{"name": "a", "ready": True, "state": {"running": {}}}], "Running", "Running"),
    StatusCase(
        "crashloop",
        [{"name": "a", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
        "Running",
        "CrashLoopBackOff",
    ),
    StatusCase(
        "completed",
        [{"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}],
        "Succeeded",
        "Completed",
    ),
    StatusCase("pending-unscheduled", [], "Pending", "Pending"),
    StatusCase(
        "terminating",
        [{"name": "a", "state": {"running": {}}}],
        "Running",
        "Terminating",
        {"deletionTimestamp": "2026-11-30T08:00:00Z"},
    ),
]


@pytest.mark.parametrize("case", STATUS_CASES, ids=lambda c: c.name)
def test_status_column_matches_kubectl(case: StatusCase):
    pod = _pod(case.statuses, case.phase, metadata=case.metadata or {})
    assert shaping.pod_status_text(pod) == case.expect


def test_init_container_failure_shows_as_init_status():
    pod = _pod([{"name": "a", "state": {"waiting": {"reason": "PodInitializing"}}}], "Pending")
    pod["status"]["initContainerStatuses"] = [
        {"name": "migrate", "state": {"terminated": {"reason": "Error", "exitCode": 1}}}
    ]
    assert shaping.pod_status_text(pod) == "Init:Error"


def test_pod_summary_carries_the_oom_kill_and_the_controller_owner():
    pod = _pod(
        [
            {
                "name": "api",
                "restartCount": 4,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
                "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137, "finishedAt": "T"}},
            }
        ]
    )
    rec = shaping.pod_summary(pod)
    assert rec["namespace"] == "team-x"
    assert rec["owner"] == {"kind": "ReplicaSet", "name": "api-abc"}
    assert rec["ready"] == "0/1" and rec["restarts"] == 4
    c = rec["containers"][0]
    assert c["last_termination"] == {"reason": "OOMKilled", "exit_code": 137, "finished_at": "T"}
    assert c["state"] == {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}
    assert c["resources"] == {"requests": {}, "limits": {"memory": "256Mi"}}


def test_pod_detail_never_shows_secret_looking_literal_env_values():
    rec = shaping.pod_detail(_pod([{"name": "api", "state": {"running": {}}}]))
    env = {e["name"]: e for e in rec["containers"][0]["env"]}
    assert env["DB_PASSWORD"] == {"name": "DB_PASSWORD", "value": "<redacted>"}
    assert env["MODE"]["value"] == "fast"
    assert env["TOKEN"] == {"name": "TOKEN", "value_from": {"secret": "s1", "key": "t"}}
    assert "hunter2" not in repr(rec)


def test_clean_object_redacts_secret_data_and_drops_managed_fields():
    secret = {
        "kind": "Secret",
        "metadata": {
            "name": "s",
            "namespace": "a",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": '{"data":{"p":"aHVudGVyMg=="}}'
            },
        },
        "data": {"p": "aHVudGVyMg=="},
        "stringData": {"q": "plain"},
    }
    out = shaping.clean_object(secret)
    assert out["data"] == {"p": "<redacted>"} and out["stringData"] == {"q": "<redacted>"}
    assert "managedFields" not in out["metadata"]
    assert "aHVudGVyMg" not in repr(out)
    assert secret["data"] == {"p": "aHVudGVyMg=="}  # the input is not modified


def test_config_map_data_is_kept():
    cm = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"mode": "live"}}
    assert shaping.clean_object(cm)["data"] == {"mode": "live"}


@pytest.mark.parametrize(
    ("value", "expect"),
    [
        ("256Mi", Decimal(256 * 2**20)),
        ("500m", Decimal("0.5")),
        ("2", Decimal(2)),
        ("1.5Gi", Decimal(1.5 * 2**30)),
        ("1e3", Decimal(1000)),
        ("12k", Decimal(12000)),
        ("bogus", None),
        ("", None),
    ],
)
def test_parse_quantity(value, expect):
    assert shaping.parse_quantity(value) == expect


def test_quota_at_limit_compares_quantities_not_strings():
    rq = {
        "metadata": {"name": "q", "namespace": "a"},
        "status": {
            "hard": {"requests.memory": "1Gi", "pods": "10", "requests.cpu": "2"},
            "used": {"requests.memory": "1024Mi", "pods": "9", "requests.cpu": "2500m"},
        },
    }
    assert shaping.quota_record(rq)["at_limit"] == ["requests.cpu", "requests.memory"]


def test_selector_string():
    assert shaping.selector_string(
        {
            "matchLabels": {"app": "x"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        }
    ) == ("app=x,tier in (a,b),!canary")
    assert shaping.selector_string({"app": "x", "v": "1"}) == "app=x,v=1"
    assert shaping.selector_string(None) is None


def test_workload_kind_names_normalise():
    assert shaping.normalize_workload_kinds(["Deployment", "sts", "cronjobs"]) == (
        ["deployments", "statefulsets", "cronjobs"],
        [],
    )
    assert shaping.normalize_workload_kinds("deploy,pods") == (["deployments"], ["pods"])
    assert shaping.normalize_workload_kinds(None)[0][0] == "deployments"


def test_events_sort_newest_first_and_fall_back_to_event_time():
    evs = [
        {"metadata": {"namespace": "a"}, "lastTimestamp": "2026-11-30T08:00:00Z", "reason": "old"},
        {
            "metadata": {"namespace": "a"},
            "lastTimestamp": None,
            "eventTime": "2026-11-30T08:30:00.000000Z",
            "reason": "new-style",
        },
        {"metadata": {"namespace": "a"}, "lastTimestamp": "2026-11-30T08:59:00Z", "reason": "newest"},
    ]
    recs = shaping.sort_events(shaping.event_record(e) for e in evs)
    assert [r["reason"] for r in recs] == ["newest", "new-style", "old"]
    assert all(r["namespace"] == "a" and r["count"] == 1 for r in recs)


def test_service_endpoints_name_their_pods():
    svc = {
        "metadata": {"name": "s", "namespace": "a"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]},
    }
    ep = {
        "subsets": [
            {
                "addresses": [{"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "name": "x-1"}}],
                "notReadyAddresses": [{"ip": "10.0.0.2", "targetRef": {"kind": "Pod", "name": "x-2"}}],
            }
        ]
    }
    rec = shaping.service_record(svc, ep)
    assert rec["endpoints"]["ready"] == [{"ip": "10.0.0.1", "pod": "x-1"}]
    assert rec["endpoints"]["not_ready"] == [{"ip": "10.0.0.2", "pod": "x-2"}]
    assert shaping.service_record(svc, {})["endpoints"] == {"ready": [], "not_ready": [], "ports": []}


def test_log_lines_drop_the_partial_line_after_a_cut():
    assert shaping.log_lines("a\nb\n", truncated=False) == ["a", "b"]
    assert shaping.log_lines("tial\nb\nc\n", truncated=True) == ["b", "c"]


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=20), max_size=5))
def test_secret_values_never_survive_cleaning(data):
    out = shaping.clean_object({"kind": "Secret", "metadata": {"name": "s"}, "data": data})
    assert set(out["data"]) == set(data)
    assert all(v == "<redacted>" for v in out["data"].values())


def test_schema_tidy_turns_optional_into_plain_type():
    schema = {
        "title": "X",
        "type": "object",
        "properties": {
            "since": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "Since"},
            "title": {"type": "string", "title": "Title"},
        },
    }
    assert _tidy(schema) == {
        "type": "object",
        "properties": {"since": {"type": "integer"}, "title": {"type": "string"}},
    }
