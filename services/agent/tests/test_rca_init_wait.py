"""An init container that is still running (no restarts, no Warning events) because what it
waits for does not answer: its current log is read and the dependency is named."""

from __future__ import annotations

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca.followups import FollowUps


def _pod() -> PodView:
    return PodView.parse({
        "namespace": "shop", "name": "orders-5c6d7e8f9a-abcde", "phase": "Pending",
        "owner": {"kind": "ReplicaSet", "name": "orders-5c6d7e8f9a"},
        "conditions": [{"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
                        "message": "containers with incomplete status: [await-cache]"}],
        "init_containers": [{"name": "await-cache", "image": "busybox", "ready": False, "restart_count": 0,
                             "state": {"running": {"started_at": "2030-01-01T10:00:00Z"}}}],
        "containers": [{"name": "orders", "image": "r/orders:1", "ready": False,
                        "state": {"waiting": {"reason": "PodInitializing"}}}],
    })


def _log(n: int = 12) -> str:
    return "\n".join(
        f"2030-01-01T10:{i:02d}:00.000Z 2030-01-01T10:{i:02d}:00Z still waiting for cache-main.infra.svc.cluster.local:6379 (nc: connect failed)"
        for i in range(n)
    )


def test_representative_is_the_running_init_container() -> None:
    obs = WorkloadObservation("shop", "Deployment", "orders", pods=[_pod()])
    pod, c = obs.representative()
    assert pod is not None and c is not None and c.name == "await-cache"


async def test_waiting_init_container_names_its_dependency() -> None:
    class NoTools:
        def has_tool(self, name: str) -> bool:
            return False

    pod = _pod()
    obs = WorkloadObservation("shop", "Deployment", "orders", pods=[pod])
    obs.logs[(pod.name, "await-cache", False)] = _log()
    await FollowUps(NoTools(), EvidenceLog(), Collected(pods={"shop": [pod]}), 5.0, False).run(obs)  # type: ignore[arg-type]
    assert obs.variables["endpoint"] == "cache-main.infra.svc.cluster.local:6379"
    text = obs.derived["init_wait"][0]
    assert "await-cache" in text and "Service cache-main in namespace infra" in text
    top = match_all(obs.facts())[0]
    assert (top.signature.family, top.confidence) == ("dependency_unreachable", "high")


async def test_a_few_lines_or_a_finished_init_container_are_not_a_wait() -> None:
    class NoTools:
        def has_tool(self, name: str) -> bool:
            return False

    pod = _pod()
    obs = WorkloadObservation("shop", "Deployment", "orders", pods=[pod])
    obs.logs[(pod.name, "await-cache", False)] = _log(2)
    await FollowUps(NoTools(), EvidenceLog(), Collected(), 5.0, False).run(obs)  # type: ignore[arg-type]
    assert "init_wait" not in obs.derived
