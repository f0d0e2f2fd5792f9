"""Every shape a result names a namespace in (DESIGN §2 step 2): Tables, ``ns``/``project``/
``tenant`` keys, namespaces as lists or objects, ``Kind/ns/name`` and ``ns/name`` refs, API paths,
cluster DNS names, maps keyed by namespace, telemetry with only a pod label, label-value
enumerations. A foreign one drops the smallest enclosing record; the caller's records stay."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from sleuth_common.scope import Scope, filter_result

ALICE = Scope.of(["team-a"])


@dataclass(frozen=True)
class Case:
    name: str
    doc: Any
    outcome: str
    shown: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ("team-b",)
    pinned: bool = False
    known: tuple[str, ...] = ()
    ips: dict[str, str] = field(default_factory=dict)


TABLE_COLUMNS = [{"name": "Name", "type": "string", "format": "name", "description": "Name must be unique"},
                 {"name": "Namespace", "type": "string"}, {"name": "Status", "type": "string"}]
CASES = [
    Case("Table rows by their Namespace cell",
         {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "columnDefinitions": TABLE_COLUMNS,
          "rows": [{"cells": ["api-0", "team-a", "Running"]}, {"cells": ["pay-1", "team-b", "Running"]}]},
         "filtered", shown=("api-0", '"Namespace"'), hidden=("pay-1", "team-b")),
    Case("Table rows by their object's metadata",
         {"kind": "Table", "columnDefinitions": [{"name": "Name"}],
          "rows": [{"cells": ["api-0"], "object": {"metadata": {"name": "api-0", "namespace": "team-a"}}},
                   {"cells": ["pay-1"], "object": {"metadata": {"name": "pay-1", "namespace": "team-b"}}}]},
         "filtered", shown=("api-0",), hidden=("pay-1", "team-b")),
    Case("an unattributed Table's column definitions carry nothing else",
         {"kind": "Table", "columnDefinitions": [{"name": "Name"}, {"name": "pay-1 in team-b"}],
          "rows": [{"cells": ["api-0"], "object": {"metadata": {"name": "api-0", "namespace": "team-a"}}}]},
         "filtered", shown=("api-0", '"Name"'), hidden=("pay-1", "team-b")),
    Case("ns / project / tenant / namespace_name / k8s_namespace keys",
         [{"ns": "team-b", "id": "r1"}, {"project": "team-b", "id": "r2"}, {"tenant": "team-b", "id": "r3"},
          {"namespace_name": "team-b", "id": "r4"}, {"k8s_namespace": "team-b", "id": "r5"},
          {"kubernetes": {"namespace_name": "team-b"}, "id": "r6"}, {"ns": "team-a", "id": "mine"}],
         "filtered", shown=("mine",), hidden=("team-b", "r1", "r2", "r3", "r4", "r5", "r6")),
    Case("a namespace as an object", [{"namespace": {"name": "team-b"}, "id": "r1"}, {"namespace": {"name": "team-a"}, "id": "mine"}],
         "filtered", shown=("mine",), hidden=("team-b", "r1")),
    Case("namespaces as a list", {"namespace": "team-a", "policies": [{"name": "p1", "namespaces": ["team-a", "team-b"]}]},
         "filtered", shown=("p1",)),
    Case("namespaces as a list of objects",
         {"namespace": "team-a", "grants": [{"name": "g1", "namespace": [{"name": "team-a"}, {"name": "team-b"}]}]},
         "filtered", shown=("g1",)),
    Case("a namespace as an object with metadata",
         [{"namespace": {"metadata": {"name": "team-b"}}, "id": "r1"}, {"namespace": {"metadata": {"name": "team-a"}}, "id": "mine"}],
         "filtered", shown=("mine",), hidden=("team-b", "r1"), pinned=True),
    Case("an owner reference to a Namespace is a carrier",
         {"namespace": "team-a", "objects": [{"name": "o1", "ownerReferences": [{"kind": "Namespace", "name": "team-b"}]},
                                             {"name": "o2", "ownerReferences": [{"kind": "Namespace", "name": "team-a"}]}]},
         "filtered", shown=("o1", "o2")),
    Case("Kind/ns/name ids (kube-mcp subgraph)",
         {"namespace": "team-a", "nodes": [{"id": "Pod/team-b/api-0", "n": 1}, {"id": "Deployment/team-a/web", "n": 2}],
          "edges": [{"from": "Deployment/team-a/web", "to": "Pod/team-a/web-1"}, {"from": "Service/team-b/x", "to": "Pod/team-b/y"}]},
         "filtered", shown=("Deployment/team-a/web", "Pod/team-a/web-1")),
    Case("an edge from the caller's object to a foreign one is peer-shaped: kept, the far end withheld",
         {"namespace": "team-a", "edges": [{"from": "Deployment/team-a/web", "to": "Service/partner-x/api"}]},
         "filtered", shown=("Deployment/team-a/web",), hidden=("partner-x",)),
    Case("ns/name refs and keys", {"namespace": "team-a", "refs": ["team-a/api", "team-b/pay"],
                                   "restarts": {"team-a/api-0": 1, "team-b/pay-1": 9}},
         "filtered", shown=("team-a/api", "team-a/api-0"), hidden=("team-b", "pay")),
    Case("API paths", [{"selfLink": "/api/v1/namespaces/team-b/pods/pay-1", "id": "r1"},
                       {"requestURI": "/api/v1/namespaces/team-a/pods", "id": "mine"}],
         "filtered", shown=("mine",), hidden=("team-b", "r1")),
    Case("cluster DNS names", [{"url": "http://pay.team-b.svc.cluster.local:8080", "id": "r1"},
                               {"upstream": "pay.team-b.svc", "id": "r2"},
                               {"peer": "10-1-2-3.team-b.pod.cluster.local", "id": "r3"},
                               {"upstream": "api.team-a.svc:80", "id": "mine"}],
         "filtered", shown=("mine",), hidden=("team-b", "r1", "r2", "r3")),
    Case("a foreign DNS name in an env var drops the env entry only",
         [{"namespace": "team-a", "name": "api-0", "env": [{"name": "MODE", "value": "fast"},
                                                          {"name": "PAY_URL", "value": "http://pay.team-b.svc:80"}]}],
         "filtered", shown=("api-0", "MODE"), hidden=("team-b", "PAY_URL")),
    Case("a map keyed by namespaces the document names",
         {"namespace": "team-a", "usage": {"team-a": {"cpu": 1}, "team-b": {"cpu": 9}}}, "filtered", shown=("cpu",)),
    Case("a map keyed by namespaces under an unknown key, from the inventory",
         {"by_tenant": {"team-a": 3, "team-b": 5, "payments": 7}}, "filtered", shown=('"team-a":3',),
         hidden=("team-b", "payments"), known=("team-b", "payments")),
    Case("a foreign namespace only inside a nested list of a kept record",
         {"namespace": "team-a", "name": "api", "conditions": [{"type": "Ready"}, {"type": "Peer", "peer_namespace": "team-b"}]},
         "filtered", shown=("api", "Ready")),
    Case("Prometheus series with only a pod label are withheld unless pinned",
         {"status": "success", "data": {"resultType": "vector", "result": [
             {"metric": {"pod": "pay-1", "__name__": "up"}, "value": [1, "1"]},
             {"metric": {"pod": "api-0", "namespace": "team-a"}, "value": [1, "1"]},
             {"metric": {"instance": "10.9.9.9:9100", "job": "node"}, "value": [1, "1"]}]}},
         "filtered", shown=("api-0",), hidden=("pay-1", "10.9.9.9")),
    Case("Prometheus series pinned by the query", {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"pod": "api-0"}, "value": [1, "1"]}]}}, "kept", shown=("api-0",), pinned=True),
    Case("an instance label resolved through ips", {"status": "success", "data": {"result": [
        {"metric": {"instance": "10.0.0.1:8080"}, "value": [1, "1"]}, {"metric": {"instance": "10.0.0.9:8080"}, "value": [1, "2"]}]}},
         "filtered", shown=("10.0.0.1",), hidden=("10.0.0.9",), ips={"10.0.0.1": "team-a", "10.0.0.9": "team-b"}),
    Case("a label-value enumeration is withheld unless pinned",
         {"status": "success", "data": ["team-a", "team-b", "pay-1", "api-0"]}, "filtered", shown=("team-a",),
         hidden=("team-b", "pay-1", "api-0")),
    Case("a bare list of label values", ["pay-1", "api-0", "team-b"], "withheld", hidden=("pay-1", "api-0", "team-b")),
    Case("Namespace references inside a record", [{"involvedObject": {"kind": "Namespace", "name": "team-b"}, "id": "r1"}],
         "filtered", hidden=("team-b", "r1"), pinned=True),
    Case("weak keys in labels count only with a known namespace",
         [{"namespace": "team-a", "name": "api-0", "labels": {"project": "checkout", "tenant": "team-b"}},
          {"namespace": "team-a", "name": "api-1", "labels": {"project": "checkout"}}],
         "filtered", shown=("api-1",), hidden=("team-b",), known=("team-b",)),
    Case("peer-shaped records: kept when the caller owns a side",
         [{"source": {"namespace": "team-a", "pod": "api-0"}, "destination": {"namespace": "partner-x"}, "id": "own"},
          {"source": {"namespace": "team-b"}, "destination": {"namespace": "partner-x"}, "id": "theirs"}],
         "filtered", shown=("own", "api-0"), hidden=("team-b", "theirs", "partner-x")),
    Case("a disguised namespace key on a pinned record (the value is a known namespace)",
         [{"n\u0430mespace": "team-b", "name": "pay-1"}, {"name": "api-0"}], "filtered", shown=("api-0",),
         hidden=("team-b", "pay-1"), pinned=True, known=("team-b",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_carriers(case: Case) -> None:
    out = filter_result(json.dumps(case.doc), ALICE, pinned=case.pinned, known_namespaces=case.known, ips=case.ips)
    assert out.outcome == case.outcome, out.reason
    everything = out.text + out.reason + json.dumps(out.data)
    for token in case.shown:
        assert token in out.text
    for token in case.hidden:
        assert token not in everything, token


def test_kubectl_prefixes_and_mime_types_are_not_namespaces() -> None:
    doc = {"namespace": "team-a", "objects": ["pod/api-0", "deployment.apps/web", "text/plain", "tcp/8080", "apps/v1"],
           "image": "bitnami/redis:7"}
    out = filter_result(json.dumps(doc), ALICE)
    assert out.outcome == "kept" and out.data == doc
