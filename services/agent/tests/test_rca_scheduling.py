"""Pending pods with a claim: a claim that waits for its first consumer (WaitForFirstConsumer) is a
consequence of the pod not being scheduled, not the cause; a claim whose provisioning failed is."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import EventView, PodView
from sleuth_agent.rca._signatures import match_all

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
rca_fakes = importlib.util.module_from_spec(_spec)
sys.modules["agent_rca_fakes"] = rca_fakes
_spec.loader.exec_module(rca_fakes)

SCHED = "0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."


def _pending() -> tuple[PodView, list[EventView]]:
    pod = PodView.parse({
        "namespace": "dw", "name": "lake-0", "phase": "Pending", "owner": {"kind": "StatefulSet", "name": "lake"},
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": SCHED}],
        "node_selector": {"pool": "storage-heavy"},
        "volumes": [{"name": "data", "type": "pvc", "source": "data-lake-0"}],
        "containers": [{"name": "lake", "image": "r/lake:1", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}],
    })
    ev = [EventView.parse({"type": "Warning", "reason": "FailedScheduling", "message": SCHED,
                           "involved_object": {"kind": "Pod", "name": "lake-0"}})]
    return pod, ev


def _tools(mode: str) -> object:
    return rca_fakes.FakeTools({
        ("list_pvcs", "dw"): {"pvcs": [{"name": "data-lake-0", "phase": "Pending", "storage_class": "ssd", "requested": "1Ti"}]},
        ("list_storage", ""): {"items": [{"name": "ssd", "default": True, "volume_binding_mode": mode}]},
    })


async def test_a_claim_waiting_for_its_first_consumer_leaves_the_scheduling_failure_as_the_cause() -> None:
    pod, events = _pending()
    claim_ev = EventView.parse({"type": "Normal", "reason": "WaitForFirstConsumer", "message": "waiting for first consumer to be created before binding",
                                "involved_object": {"kind": "PersistentVolumeClaim", "name": "data-lake-0"}})
    fu, _ = rca_fakes.follow(_tools("WaitForFirstConsumer"), Collected(pods={"dw": [pod]}, events={"dw": [*events, claim_ev]}))
    obs = WorkloadObservation("dw", "StatefulSet", "lake", pods=[pod], events=list(events))
    await fu.run(obs)
    families = [m.signature.family for m in match_all(obs.facts())]
    assert families[0] == "unschedulable_constraints"
    assert "pvc_pending" not in families
    assert "WaitForFirstConsumer" in " ".join(obs.derived["pvc_wait"])


async def test_a_claim_whose_provisioning_failed_is_the_cause() -> None:
    pod = PodView.parse({"namespace": "dw", "name": "lake-0", "phase": "Pending", "owner": {"kind": "StatefulSet", "name": "lake"},
                         "volumes": [{"name": "data", "type": "pvc", "source": "data-lake-0"}],
                         "containers": [{"name": "lake", "image": "r/lake:1", "ready": False}]})
    failed = EventView.parse({"type": "Warning", "reason": "ProvisioningFailed", "message": "storageclass.storage.k8s.io \"ssd\" not found",
                              "involved_object": {"kind": "PersistentVolumeClaim", "name": "data-lake-0"}})
    fu, _ = rca_fakes.follow(_tools("Immediate"), Collected(pods={"dw": [pod]}, events={"dw": [failed]}))
    obs = WorkloadObservation("dw", "StatefulSet", "lake", pods=[pod])
    await fu.run(obs)
    assert match_all(obs.facts())[0].signature.family == "pvc_pending"
