"""Text inside results (DESIGN §2 step 3): JSON encoded in strings is filtered as JSON; multi-line
text is kept only from a pinned call; kept text loses the lines that name objects or namespaces
outside the scope (``ForeignNames``: distinctive names only, on token boundaries)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from sleuth_common.scope import ForeignNames, Scope, filter_result
from sleuth_common.scope._names import LINE_WITHHELD

INVENTORY = {
    "team-a": ["api-0", "checkout-api", "checkout-api-db", "shared-config", "payments-api-v2"],
    "team-b": ["payments-db-0", "payments-api", "pay-1", "shared-config", "nginx", "coredns-custom"],
    "kube-system": ["coredns", "kube-proxy-x7z2q", "etcd-control-plane"],
    "default": ["kubernetes"],
}
ALICE = Scope.of(["team-a"], inventory=INVENTORY)
BARE = Scope.of(["team-a"])  # no inventory: only the foreign namespaces the document names
KUBECTL_A = (
    "NAMESPACE     NAME                READY   STATUS\n"
    "team-a        api-0               1/1     Running\n"
    "team-b        payments-db-0       0/1     CrashLoopBackOff\n"
    "kube-system   etcd-control-plane  1/1     Running\n"
)


# -- ForeignNames -------------------------------------------------------------------------------

def test_foreign_names_index_only_distinctive_foreign_names() -> None:
    names = ForeignNames.build(INVENTORY, ["team-a"])
    assert "payments-db-0" in names and "etcd-control-plane" in names and "team-b" in names
    assert "pay-1" not in names  # too short to be distinctive
    assert "shared-config" not in names  # also the caller's
    assert "nginx" not in names and "coredns" not in names and "kubernetes" not in names  # common
    assert "api-0" not in names and "default" not in names
    assert names.namespaces == {"team-b", "kube-system", "default"}


@pytest.mark.parametrize(("text", "hits"), [
    ("connecting to payments-db-0 failed", 1),
    ("PAYMENTS-DB-0 is down", 1),  # case folded
    ('upstream "payments-api" refused', 1),
    ("dial tcp payments-api.team-b.svc:8080", 2),  # the name and the namespace
    ("payments-api-v2 is mine", 0),  # a longer token that is the caller's own object
    ("payments-api-7f9c8-x2k4p restarted", 1),  # a pod of the foreign workload
    ("xpayments-api", 0),
    ("see team-b/pay-1", 1),
    ("team-bee and team-b2 are other words", 0),
    ("nothing foreign here: api-0 and shared-config", 0),
])
def test_hits_on_token_boundaries(text: str, hits: int) -> None:
    assert ForeignNames.build(INVENTORY, ["team-a"]).hits(text) == hits


def test_withhold_lines_replaces_only_lines_naming_foreign_objects() -> None:
    names = ForeignNames.build(INVENTORY, ["team-a"])
    text = "line one api-0 ok\nretry payments-api\r\nline three\nkube-system down"
    shown, n = names.withhold_lines(text)
    assert n == 2
    assert shown.split("\n") == ["line one api-0 ok", LINE_WITHHELD, "line three", LINE_WITHHELD]
    assert names.withhold_lines("all mine\n") == ("all mine\n", 0)
    assert not ForeignNames.build({}, ["team-a"]) and ForeignNames.build({}, ["team-a"]).hits("team-b") == 0


# -- filter_result ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str
    doc: Any
    outcome: str
    shown: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    pinned: bool = False
    scope: Scope = ALICE
    encode: bool = True


MCP_CONTENT = {"content": [{"type": "text", "text": json.dumps(
    {"items": [{"metadata": {"namespace": "team-a", "name": "api-0"}}, {"metadata": {"namespace": "team-b", "name": "pay-1"}}]})}]}
CASES = [
    Case("kubectl -A output in stdout, unpinned", {"stdout": KUBECTL_A}, "withheld", hidden=("payments-db-0", "team-b")),
    Case("kubectl -A output in stdout, pinned: foreign lines withheld", {"stdout": KUBECTL_A}, "filtered",
         shown=("api-0", "NAMESPACE"), hidden=("payments-db-0", "team-b", "etcd-control-plane", "kube-system"),
         pinned=True),
    Case("an allowed namespace key does not let unpinned text through",
         {"namespace": "team-a", "output": KUBECTL_A}, "filtered", hidden=("payments-db-0", "team-b")),
    Case("the same as a text result, pinned", KUBECTL_A, "filtered", shown=("api-0",),
         hidden=("payments-db-0", "team-b", "kube-system"), pinned=True, encode=False),
    Case("double-encoded JSON is filtered as JSON",
         json.dumps(json.dumps([{"namespace": "team-a", "name": "api-0"}, {"namespace": "team-b", "name": "pay-1"}])),
         "filtered", shown=("api-0",), hidden=("pay-1", "team-b"), encode=False),
    Case("MCP-content-shaped JSON is filtered inside", MCP_CONTENT, "filtered", shown=("api-0",), hidden=("pay-1", "team-b")),
    Case("JSON in a result key is filtered", {"result": json.dumps({"namespace": "team-b", "name": "pay-1"}),
                                              "namespace": "team-a"}, "filtered", hidden=("pay-1", "team-b")),
    Case("JSON within JSON within JSON",
         {"namespace": "team-a", "data": json.dumps({"logs": json.dumps([{"namespace": "team-b", "msg": "pay-1 down"},
                                                                         {"namespace": "team-a", "msg": "api-0 up"}])})},
         "filtered", shown=("api-0 up",), hidden=("pay-1", "team-b")),
    Case("event messages naming foreign objects are withheld, the event kept",
         [{"namespace": "team-a", "reason": "BackOff", "message": "upstream payments-api unreachable"},
          {"namespace": "team-a", "reason": "Pulled", "message": "Successfully pulled image for api-0"}],
         "filtered", shown=("BackOff", "Successfully pulled image for api-0"), hidden=("payments-api",)),
    Case("a foreign DNS name in a message withholds the message (no inventory needed)",
         [{"namespace": "team-a", "message": "lookup pay.team-z.svc.cluster.local: no such host"}],
         "filtered", shown=("team-a",), hidden=("team-z",), scope=BARE),
    Case("prose naming a namespace: withheld when it is not the caller's (no inventory needed)",
         [{"namespace": "team-a", "reason": "A", "message": "pod pay-1 in namespace team-z is failing"},
          {"namespace": "team-a", "reason": "B", "message": "ran kubectl get pods -n team-z"},
          {"namespace": "team-a", "reason": "C", "message": "{\"ns\": 1} ns=team-z"},
          {"namespace": "team-a", "reason": "D", "message": "scheduled in namespace team-a"},
          {"namespace": "team-a", "reason": "E", "message": "the namespace is being deleted"}],
         "filtered", shown=("scheduled in namespace team-a", "the namespace is being deleted"),
         hidden=("team-z", "pay-1"), scope=BARE),
    Case("log lines: the caller's kept, a foreign object's withheld",
         {"namespace": "team-a", "pod": "api-0",
          "logs": "GET /healthz 200\nPOST /pay -> payments-api.team-b.svc 503\nGET /orders 200\n"},
         "filtered", shown=("GET /healthz 200", "GET /orders 200"), hidden=("payments-api", "team-b"), pinned=True),
    Case("Loki-style streams: values scanned", {"status": "success", "data": {"result": [
        {"stream": {"namespace": "team-a", "pod": "api-0"},
         "values": [["1700000000", "calling payments-api"], ["1700000001", "ok api-0"]]}]}},
         "filtered", shown=("ok api-0",), hidden=("payments-api",)),
    Case("a pinned record whose fields name a foreign object is dropped",
         [{"name": "api-0", "status": "Running"}, {"name": "payments-db-0", "status": "Running"},
          {"name": "worker-3", "target": "etcd-control-plane:2379"}],
         "filtered", shown=("api-0",), hidden=("payments-db-0", "etcd-control-plane"), pinned=True),
    Case("a pinned label-value enumeration loses foreign values",
         {"status": "success", "data": ["api-0", "checkout-api", "payments-api", "team-b"]}, "filtered",
         shown=("checkout-api",), hidden=("payments-api", "team-b"), pinned=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_text(case: Case) -> None:
    raw = json.dumps(case.doc) if case.encode else case.doc
    out = filter_result(raw, case.scope, pinned=case.pinned)
    assert out.outcome == case.outcome, out.reason
    everything = out.text + out.reason + json.dumps(out.data)
    for token in case.shown:
        assert token in out.text
    for token in case.hidden:
        assert token not in everything, token


def test_text_withheld_from_an_unpinned_call_is_counted() -> None:
    out = filter_result(json.dumps({"namespace": "team-a", "stdout": KUBECTL_A, "items": [{"name": "x"}]}), ALICE)
    assert out.outcome == "filtered" and "1 text value not limited to your namespaces was withheld" in out.reason
    assert out.data["items"] == [{"name": "x"}]


def test_pinned_text_keeps_the_callers_lines() -> None:
    logs = "\n".join(f"2026-01-01T00:00:0{i}Z GET /orders/{i} 200" for i in range(5))
    out = filter_result(logs, ALICE, pinned=True)
    assert out.outcome == "kept" and out.text == logs
    out = filter_result(logs + "\nretrying payments-db-0", ALICE, pinned=True)
    assert out.outcome == "filtered" and out.removed == 1 and out.text.startswith(logs)
    assert "1 line naming objects outside your namespaces was withheld" in out.reason


def test_without_inventory_the_documents_foreign_namespaces_are_still_names() -> None:
    doc = {"namespace": "team-a", "events": [
        {"namespace": "team-a", "message": "scheduled next to team-b workloads"},
        {"namespace": "team-b", "message": "x"}]}
    out = filter_result(json.dumps(doc), BARE)
    assert "team-b" not in out.text and out.removed == 2
