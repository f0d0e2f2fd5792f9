"""A client's connection refused by a Service whose targetPort is not a port its (Ready) pods
declare: the Service is the finding, with both ports and the exact patch."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca.followups import service_findings

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
_fakes = sys.modules.get("agent_rca_fakes") or importlib.util.module_from_spec(_spec)
if "agent_rca_fakes" not in sys.modules:
    sys.modules["agent_rca_fakes"] = _fakes
    _spec.loader.exec_module(_fakes)


def _pod(name: str, app: str, **extra: object) -> PodView:
    return PodView.parse({"namespace": "pay", "name": name, "phase": "Running", "labels": {"app": app},
                          "owner": {"kind": "ReplicaSet", "name": name.rsplit("-", 1)[0]},
                          "containers": [{"name": app, "ready": True, "state": {"running": {}}}], **extra})


SERVER = _pod("quotes-7b8c9d0e1f-aaaaa", "quotes")
CLIENT = _pod("checkout-1a2b3c4d5e-bbbbb", "checkout")
SVC = {"name": "quotes", "namespace": "pay", "cluster_ip": "10.96.40.12", "selector": "app=quotes",
       "ports": [{"name": "web", "port": 80, "target_port": 3000}],
       "endpoints": {"ready": [{"ip": "10.1.0.5"}], "ports": [{"name": "web", "port": 3000}]}}
POD_DETAIL = {"name": SERVER.name, "namespace": "pay",
              "containers": [{"name": "quotes", "ports": [{"name": "web", "container_port": 8081}, {"name": "metrics", "container_port": 9100}]}]}
LOG = "2030-01-01T00:00:00Z ERROR quote fetch failed: dial tcp 10.96.40.12:80: connect: connection refused"


async def _run(detail: dict) -> tuple[Collected, list[WorkloadObservation]]:
    got = Collected(pods={"pay": [SERVER, CLIENT]}, services={"pay": [SVC]})
    f, log = _fakes.follow(_fakes.FakeTools({("get_pod", SERVER.name): detail}), got)
    obs = WorkloadObservation("pay", "Deployment", "checkout", pods=[CLIENT])
    obs.logs[(CLIENT.name, "checkout", False)] = LOG
    await f.run(obs)
    return got, service_findings(got, ["pay"], set(), log)


async def test_target_port_mismatch_is_a_service_finding() -> None:
    _got, found = await _run(POD_DETAIL)
    assert [o.resource for o in found] == ["Service/pay/quotes"]
    svc = found[0]
    top = match_all(svc.facts())[0]
    assert (top.signature.family, top.confidence) == ("service_no_endpoints", "high")
    text = svc.derived["service_port"][0]
    assert "targetPort 3000" in text and "8081 (web)" in text
    assert svc.variables["service_patch"] == """kubectl patch service quotes -n pay -p '{"spec":{"ports":[{"port":80,"targetPort":8081}]}}'"""


async def test_a_served_target_port_is_not_a_finding() -> None:
    detail = {**POD_DETAIL, "containers": [{"name": "quotes", "ports": [{"name": "web", "container_port": 3000}]}]}
    got, found = await _run(detail)
    assert not got.service_notes and not found
