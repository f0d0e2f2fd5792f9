"""Alerts through the whole stack: Alertmanager's webhook → alerts service (window, cooldown) →
agent investigating as alice → one message in the web-chat channel team-a-alerts.

The same processes `make run` starts, on free ports, with a 2-second window.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sleuth.embedded.stack import Stack, StackPorts, StackSpec
from tests.snapshot_names import tenant_names

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

WINDOW = 2.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, demo_snapshot: Path) -> Iterator[Stack]:
    spec = StackSpec(
        snapshot=demo_snapshot,
        state_dir=tmp_path_factory.mktemp("alerts-stack"),
        ports=StackPorts.free(),
        extra_config={
            "alerts": {"window": WINDOW, "tick": 0.2, "cooldown": 600.0, "investigation_timeout": 60.0}
        },
    )
    with Stack(spec) as s:
        yield s


def crash_looping(pod: str, namespace: str, group_key: str = "g1") -> dict[str, Any]:
    """What Alertmanager posts for kube-prometheus-stack's KubePodCrashLooping."""
    return {
        "receiver": "team-a",
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": {
                    "alertname": "KubePodCrashLooping",
                    "cluster": "demo",
                    "container": "app",
                    "endpoint": "http",
                    "job": "kube-state-metrics",
                    "namespace": namespace,
                    "pod": pod,
                    "prometheus": "monitoring/kube-prometheus-stack-prometheus",
                    "reason": "CrashLoopBackOff",
                    "service": "kube-prometheus-stack-kube-state-metrics",
                    "severity": "warning",
                    "uid": "4f1c",
                },
                "annotations": {
                    "description": f'Pod {namespace}/{pod} (app) is in waiting state (reason: "CrashLoopBackOff").',
                    "runbook_url": "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubepodcrashlooping",
                    "summary": "Pod is crash looping.",
                },
                "startsAt": "2026-11-30T08:41:07.613Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus.monitoring:9090/graph?g0.expr=max_over_time%28...%29",
                "fingerprint": f"{namespace}-{pod}"[:16].encode().hex(),
            }
        ],
        "groupLabels": {"alertname": "KubePodCrashLooping", "namespace": namespace},
        "commonLabels": {"alertname": "KubePodCrashLooping", "namespace": namespace, "severity": "warning"},
        "commonAnnotations": {"summary": "Pod is crash looping."},
        "externalURL": "http://alertmanager.monitoring:9093",
        "version": "4",
        "groupKey": f'{{}}/{{severity="warning"}}:{{alertname="KubePodCrashLooping", namespace="{namespace}"}}/{group_key}',
        "truncatedAlerts": 0,
    }


def alerts_token(stack: Stack) -> str:
    """The demo route's bearer token: the stack puts it in the services' environment under the
    route's ``token_env``."""
    config = yaml.safe_load(stack.config_path.read_text())
    (route,) = [r for r in config["alerts"]["routes"] if r["name"] == "team-a"]
    return stack.spec.extra_env[route["token_env"]]


def post_alert(stack: Stack, body: dict[str, Any], token: str | None = None) -> httpx.Response:
    return httpx.post(
        f"{stack.alerts_url}/v1/alertmanager/team-a",
        json=body,
        headers={"Authorization": f"Bearer {token or alerts_token(stack)}"},
        timeout=10,
    )


def channel(stack: Stack) -> list[dict[str, Any]]:
    r = httpx.get(
        f"{stack.gateway_url}/v1/channels/team-a-alerts/messages",
        headers={"Authorization": f"Bearer {stack.token('alice')}"},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    return r.json()["messages"]


def wait_for_messages(stack: Stack, n: int, within: float = 90.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        msgs = [m for m in channel(stack) if m["author"] == "sleuth"]
        if len(msgs) >= n:
            return msgs
        time.sleep(0.3)
    raise AssertionError(f"expected {n} bot message(s) in team-a-alerts, got {channel(stack)}")


def alerts_metric(stack: Stack, name: str) -> float:
    text = httpx.get(f"{stack.alerts_url}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def test_a_crash_looping_pod_gets_one_grounded_answer_in_the_channel(
    stack: Stack, demo_snapshot: Path
) -> None:
    body = crash_looping("checkout-api-7d9f8c6b5d-x2k4p", "team-a")
    assert post_alert(stack, body, token="not-the-token").status_code == 401
    r = post_alert(stack, body)
    assert r.status_code == 200 and r.json()["alerts"] == 1, r.text
    (msg,) = wait_for_messages(stack, 1)
    text = msg["text"]
    assert "demo" in text and "KubePodCrashLooping" in text and "checkout-api" in text
    assert "Root cause" in text and ("oom_killed" in text or "crash_loop_app_error" in text), text
    assert "E01" in text and "kubectl " in text, "the answer cites replayable evidence"
    assert "alice" in text
    assert msg["id"].startswith("alert-")

    # The same notification again (Alertmanager retrying) and a new notification of the same alert
    # within the cooldown: nothing new is diagnosed, nothing is posted.
    investigations = alerts_metric(stack, "sleuth_alert_investigations_total")
    assert post_alert(stack, body).json()["duplicate"] is True
    assert (
        post_alert(stack, crash_looping("checkout-api-7d9f8c6b5d-x2k4p", "team-a", "g2")).status_code == 200
    )
    time.sleep(WINDOW + 2.0)
    assert len(wait_for_messages(stack, 1)) == 1
    assert alerts_metric(stack, "sleuth_alert_investigations_total") == investigations
    assert alerts_metric(stack, 'sleuth_alerts_received_total{disposition="cooldown"}') >= 1


def test_a_team_b_alert_on_alices_route_is_reported_without_team_b_names(
    stack: Stack, demo_snapshot: Path
) -> None:
    before = len(wait_for_messages(stack, 0))
    team_b = tenant_names(demo_snapshot, "team-b")
    pod = sorted(n for n in team_b if n.startswith("inventory-db"))[0]
    body = crash_looping(pod, "team-b")
    assert post_alert(stack, copy.deepcopy(body)).status_code == 200
    msgs = wait_for_messages(stack, before + 1)
    text = msgs[-1]["text"]
    assert "outside" in text and "alice" in text and "demo" in text
    leaked = sorted(n for n in team_b if n in json.dumps(channel(stack)))
    assert not leaked, f"team-b names leaked into team-a-alerts: {leaked}"


def test_an_admins_mark_never_widens_what_the_channel_sees(stack: Stack, demo_snapshot: Path) -> None:
    """carol (cluster admin, a member through platform-admins) says ``alerts on`` in alice's
    team channel; an alert about team-b then arrives on the route. The investigation reads as
    carol, but the channel's answer fits every member (alice's team-a only): team-b is counted,
    never named."""
    r = httpx.post(
        f"{stack.gateway_url}/v1/channels/team-a-alerts/messages",
        json={"text": "alerts on"},
        headers={"Authorization": f"Bearer {stack.token('carol')}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    before = len(wait_for_messages(stack, 0))
    team_b = tenant_names(demo_snapshot, "team-b")
    pod = sorted(n for n in team_b if n.startswith("billing-api"))[0]
    assert post_alert(stack, crash_looping(pod, "team-b", "g-mark")).status_code == 200
    msgs = wait_for_messages(stack, before + 1)
    text = msgs[-1]["text"]
    assert "outside" in text, text
    leaked = sorted(n for n in team_b if n in json.dumps(channel(stack)))
    assert not leaked, f"team-b names reached team-a-alerts after carol's mark: {leaked}"
    # ... and what every member may read is still investigated under carol's mark.
    before = len(msgs)
    assert post_alert(stack, crash_looping("payments-worker-5c6d7e8f9a-mt4zq", "team-a", "g-mark-a")).status_code == 200
    text = wait_for_messages(stack, before + 1)[-1]["text"]
    assert "Root cause" in text and "outside" not in text, text


def test_no_service_was_refused_anything_on_the_bus(stack: Stack) -> None:
    """Runs last: every subject the services used above is in their NATS permissions
    (sleuth.embedded.access). nats-server logs a "Violation" for any publish, subscription or
    login it refused."""
    refused = [line for line in (stack.logs / "nats.log").read_text(errors="replace").splitlines()
               if "Violation" in line]
    assert not refused, "\n".join(refused[:10])
