"""Windows and cooldowns in Redis, in fake loop time (looptime): a minute's window and a half-hour
cooldown pass in milliseconds. Real Valkey; its client has no socket timeout here, so no timer
races the fast-forwarded clock while a reply is on its way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from redis.asyncio import Redis

from sleuth_alerts.store import Store
from sleuth_alerts.triage import UNKNOWN_CLUSTER, cluster_of, question, skip_reason
from sleuth_common.config import ClusterSettings
from sleuth_common.messages import AlertmanagerAlert, AlertRef

pytestmark = pytest.mark.connected

WINDOW, COOLDOWN = 60.0, 1800.0
TARGET = "web:team-a-alerts"


def ref(pod: str, fp: str = "") -> AlertRef:
    return AlertRef(
        labels={"alertname": "KubePodCrashLooping", "namespace": "team-a", "pod": pod}, fingerprint=fp or pod
    )


@pytest.fixture
async def store(valkey) -> AsyncIterator[Store]:
    redis = Redis.from_url(valkey.url, socket_timeout=None, socket_connect_timeout=None)
    try:
        yield Store(redis, "t")
    finally:
        await redis.aclose()


def now() -> float:
    return asyncio.get_running_loop().time()


async def add(store: Store, pod: str, cluster: str = "demo") -> str:
    return await store.add(TARGET, cluster, ref(pod), now=now(), window=WINDOW, cooldown=COOLDOWN)


@pytest.mark.looptime
async def test_a_window_closes_once_after_its_length(store: Store, looptime) -> None:
    assert await add(store, "api-1") == "queued"
    await asyncio.sleep(30)
    assert await add(store, "api-2") == "queued"
    assert await add(store, "api-1") == "duplicate"  # already waiting in this window
    assert await add(store, "db-1", cluster="prod-1") == "queued"  # another cluster, its own window
    await asyncio.sleep(29)
    assert await store.due_windows(now()) == []
    await asyncio.sleep(1.5)
    # The demo window opened at 0 s; prod-1's at 30 s closes 30 s later.
    assert await store.due_windows(now()) == [f"{TARGET}|demo"]
    batch_id = await store.close(f"{TARGET}|demo", now())
    assert batch_id and await store.close(f"{TARGET}|demo", now()) is None  # closed once
    batch = await store.batch(batch_id)
    assert batch is not None and batch.cluster == "demo" and batch.target == TARGET
    assert [a.labels["pod"] for a in batch.new] == ["api-1", "api-2"]
    assert await store.closed_batches(10) == [batch_id]
    await asyncio.sleep(30)
    assert await store.due_windows(now()) == [f"{TARGET}|prod-1"]


@pytest.mark.looptime
async def test_cooldown_lets_an_alert_ride_along_then_be_diagnosed_again(store: Store, looptime) -> None:
    assert await add(store, "api-1") == "queued"
    await asyncio.sleep(WINDOW + 1)
    assert await store.close(f"{TARGET}|demo", now())
    # Still firing a few minutes later: in cooldown, it rides along and opens a window with nothing new.
    await asyncio.sleep(300)
    assert await add(store, "api-1") == "cooldown"
    await asyncio.sleep(WINDOW + 1)
    assert await store.close(f"{TARGET}|demo", now()) is None, "a window with nothing new posts nothing"
    # After the cooldown the same alert is diagnosed again.
    await asyncio.sleep(COOLDOWN)
    assert await add(store, "api-1") == "queued"
    assert await store.pending_alerts() == 1


@dataclass(frozen=True)
class Case:
    labels: dict[str, str]
    status: str
    expected: str | None


@pytest.mark.parametrize(
    "case",
    [
        Case({"alertname": "Watchdog", "severity": "none"}, "firing", "ignored"),
        Case({"alertname": "KubePodCrashLooping", "severity": "warning"}, "resolved", "resolved"),
        Case({"alertname": "KubeletTooManyPods", "severity": "info"}, "firing", "low_severity"),
        Case({"alertname": "KubePodCrashLooping", "severity": "critical"}, "firing", None),
        Case({"alertname": "CustomAlert", "severity": "page-me"}, "firing", None),  # unknown: investigated
        Case({"alertname": "CustomAlert"}, "firing", None),
    ],
    ids=lambda c: f"{c.labels['alertname']}-{c.status}-{c.labels.get('severity', '')}",
)
def test_what_is_skipped(case: Case) -> None:
    alert = AlertmanagerAlert(status=case.status, labels=case.labels)  # type: ignore[arg-type]
    got = skip_reason(
        alert,
        skip_alertnames=["Watchdog"],
        severities=["none", "info", "warning", "critical"],
        min_severity="warning",
    )
    assert got == case.expected


def test_cluster_labels_map_to_configured_names_and_the_question_names_the_targets() -> None:
    clusters = [ClusterSettings(name="demo", aliases=["dev"])]
    assert cluster_of({"cluster": "DEV"}, ["cluster"], clusters) == "demo"
    assert cluster_of({"k8s_cluster": "prod-1"}, ["cluster", "k8s_cluster"], clusters) == UNKNOWN_CLUSTER
    assert cluster_of({"k8s_cluster": "prod-1"}, ["cluster", "k8s_cluster"], [*clusters, ClusterSettings(name="prod-1")]) == "prod-1"
    assert cluster_of({}, ["cluster"], clusters) == ""
    one = question("demo", [ref("checkout-api-7d9f8c6b5d-x2k4p")])
    assert one == (
        "Alert KubePodCrashLooping firing for pod checkout-api-7d9f8c6b5d-x2k4p in namespace team-a "
        "on cluster demo: do these alerts share a cause?"
    )
    two = question("", [ref("a-1"), ref("b-2")])
    assert "pod a-1 in namespace team-a; KubePodCrashLooping firing for pod b-2" in two
    assert "cluster" not in two
