"""The result filter is an allowlist that fails closed (DESIGN §2): a record is kept only when it
is attributed to one of the caller's namespaces; what cannot be attributed is withheld with a
count, narrowly (the smallest record), and the filter never raises."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_common.scope import Scope, filter_data, filter_result

ALICE = Scope.of(["team-a"])
FOREIGN_TOKEN = re.compile(r"(?<![a-z0-9-])team-b(?![a-z0-9-])")
ADMIN = Scope.of([], cluster_wide=True)


@dataclass(frozen=True)
class Case:
    name: str
    doc: Any
    outcome: str
    shown: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    removed: int | None = None
    pinned: bool = False
    pinned_namespaces: tuple[str, ...] = ()
    ips: dict[str, str] = field(default_factory=dict)
    reason: str = ""


def _pod(ns: str | None, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns is not None:
        meta["namespace"] = ns
    return {"kind": "Pod", "metadata": meta, "status": {"phase": "Running"}}


CASES = [
    Case("a record naming no namespace is withheld, the caller's kept",
         [_pod("team-a", "api-0"), {"name": "pay-1", "phase": "Running"}], "filtered",
         shown=("api-0",), hidden=("pay-1",), removed=1,
         reason="1 record whose namespace could not be established was withheld"),
    Case("a top-level object naming no namespace is withheld",
         {"name": "pay-1", "restarts": 4}, "withheld", hidden=("pay-1",),
         reason="1 record whose namespace could not be established was withheld"),
    Case("nothing attributable left: withheld, counted",
         [{"name": "pay-1"}, {"name": "pay-2"}, {"name": "pay-3"}], "withheld", hidden=("pay-1", "pay-2", "pay-3"),
         reason="3 records whose namespace could not be established were withheld"),
    Case("a pinned call attributes records naming none", [{"name": "api-0"}, {"name": "api-1"}], "kept",
         shown=("api-0", "api-1"), pinned=True),
    Case("pinned_namespaces alone pin the call", [{"name": "api-0"}], "kept", shown=("api-0",),
         pinned_namespaces=("team-a",)),
    Case("a pin outside the scope pins nothing", [{"name": "pay-1"}], "withheld", hidden=("pay-1",),
         pinned=True, pinned_namespaces=("team-b",)),
    Case("a pinned record naming a foreign namespace is still dropped",
         [{"name": "api-0"}, {"name": "pay-1", "namespace": "team-b"}], "filtered",
         shown=("api-0",), hidden=("pay-1", "team-b"), removed=1, pinned=True),
    Case("nested records inherit their parent's attribution",
         {"namespace": "team-a", "name": "api", "containers": [{"name": "app"}, {"name": "sidecar"}]}, "kept",
         shown=("app", "sidecar")),
    Case("a foreign namespace in a nested list drops only that element",
         {"namespace": "team-a", "name": "api", "peers": [{"name": "db"}, {"name": "pay-1", "namespace": "team-b"}]},
         "filtered", shown=("api", "db"), hidden=("pay-1", "team-b"), removed=1),
    Case("a foreign namespace in the record's own fields drops it whole",
         [{"namespace": "team-a", "name": "api"}, {"metadata": {"namespace": "team-a"}, "spec": {"targetNamespace": "team-b"}, "name": "pay-1"}],
         "filtered", shown=("api",), hidden=("pay-1", "team-b"), removed=1),
    Case("an envelope keeps the caller's records and withholds its own loose fields",
         {"kind": "List", "cluster": "prod", "owner": "pay-1", "items": [_pod("team-a", "api-0"), _pod(None, "pay-2")]},
         "filtered", shown=("api-0", '"kind":"List"', "prod"), hidden=("pay-1", "pay-2"), removed=2),
    # G: narrowly
    Case("an unresolvable IP withholds only the record that depends on it",
         [{"src": "10.0.0.1", "dst": "10.0.0.9", "id": "flow-own"}, {"src": "10.7.7.7", "dst": "10.8.8.8", "id": "flow-unk"}],
         # the own flow stays; its team-b side's address does not (a peer outside the scope)
         "filtered", shown=("flow-own", "10.0.0.1"), hidden=("flow-unk", "10.7.7.7", "10.0.0.9"), removed=2,
         ips={"10.0.0.1": "team-a", "10.0.0.9": "team-b"},
         reason="whose owner hangs on an IP address that could not be resolved"),
    Case("an aggregate keyed by pod name is judged entry by entry",
         {"api-0": {"namespace": "team-a", "restarts": 1}, "team-b-web-1": {"namespace": "team-b", "restarts": 9}},
         "filtered", shown=("api-0",), hidden=("team-b-web-1", "team-b"), removed=1),
    Case("an aggregate keyed by pod IP is attributed through ips",
         {"10.0.0.1": {"restarts": 1}, "10.0.0.9": {"restarts": 9}}, "filtered", shown=("10.0.0.1",),
         hidden=("10.0.0.9",), removed=1, ips={"10.0.0.1": "team-a", "10.0.0.9": "team-b"}),
    Case("the name of a missing Secret stays",
         [{"namespace": "team-a", "reason": "FailedMount",
           "volumes": [{"name": "db", "secret": {"secretName": "checkout-api-db"}}],
           "env": [{"name": "DB", "valueFrom": {"secretKeyRef": {"name": "checkout-api-db", "key": "password"}}}]}],
         "kept", shown=('"secretName":"checkout-api-db"', '"name":"checkout-api-db"')),
]


def _run(case: Case, scope: Scope = ALICE) -> Any:
    return filter_result(
        json.dumps(case.doc), scope, pinned=case.pinned, pinned_namespaces=case.pinned_namespaces, ips=case.ips
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_allowlist(case: Case) -> None:
    out = _run(case)
    assert out.outcome == case.outcome, out.reason
    everything = out.text + out.reason + json.dumps(out.data)
    for token in case.shown:
        assert token in out.text
    for token in case.hidden:
        assert token not in everything, token
    if case.removed is not None:
        assert out.removed == case.removed
    assert case.reason in out.reason
    if out.outcome == "withheld":
        assert out.data is None and "team-a" in out.reason  # says which namespaces the caller has


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cluster_wide_callers_keep_everything(case: Case) -> None:
    out = _run(case, ADMIN)
    assert out.outcome == "kept" and out.removed == 0
    for token in case.hidden:
        if token not in ("10.7.7.7",):
            assert token in out.text


def test_unresolved_ips_are_reported_and_resolved_on_a_second_pass() -> None:
    doc = json.dumps([{"src": "10.0.0.1", "dst": "10.0.0.9", "id": "own"},
                      {"src": "10.7.7.7", "dst": "10.0.0.9", "id": "maybe"}])
    first = filter_result(doc, ALICE, ips={"10.0.0.1": "team-a", "10.0.0.9": "team-b"})
    assert first.outcome == "filtered" and first.unresolved_ips == {"10.7.7.7"}
    assert [f["id"] for f in first.data] == ["own"]
    second = filter_result(doc, ALICE, ips={"10.0.0.1": "team-a", "10.0.0.9": "team-b", "10.7.7.7": "team-a"})
    # both flows are alice's now; their team-b side (10.0.0.9) is withheld
    assert second.outcome == "filtered" and [f["id"] for f in second.data] == ["own", "maybe"]
    assert "10.0.0.9" not in second.text
    assert not second.unresolved_ips


def test_a_pinned_flow_still_needs_a_side_the_caller_owns() -> None:
    # A flows tool called with namespace=team-a may answer about everyone: each flow's sides are
    # resolved, the pin does not attribute them.
    doc = json.dumps([{"src_ip": "10.1.0.1", "dst_ip": "10.2.0.2", "id": "f-own"},
                      {"src_ip": "10.2.0.2", "dst_ip": "10.2.0.3", "id": "f-foreign"}])
    out = filter_result(doc, ALICE, pinned=True)
    assert out.outcome == "withheld" and out.unresolved_ips == {"10.1.0.1", "10.2.0.2", "10.2.0.3"}
    out = filter_result(doc, ALICE, pinned=True, ips={"10.1.0.1": "team-a", "10.2.0.2": "team-b", "10.2.0.3": "team-b"})
    assert [f["id"] for f in out.data] == ["f-own"] and "f-foreign" not in out.text


def test_a_pod_ip_inside_an_attributed_record_needs_no_resolution() -> None:
    doc = [{"metadata": {"namespace": "team-a", "name": "api-0"}, "status": {"podIP": "10.0.0.1", "hostIP": "192.168.1.5"}}]
    out = filter_result(json.dumps(doc), ALICE)
    assert out.outcome == "kept" and not out.unresolved_ips


def test_reasons_count_but_never_name() -> None:
    doc = [_pod("team-b", "pay-1"), {"name": "pay-2"}, {"kind": "Node", "metadata": {"name": "node-7"}}]
    out = filter_result(json.dumps(doc), ALICE)
    assert out.outcome == "withheld"
    for word in ("pay-1", "pay-2", "node-7", "team-b"):
        assert word not in out.reason
    assert "1 record from namespaces outside your access removed" in out.reason
    assert "1 cluster-scoped object you may not list was withheld" in out.reason


# -- H: never raise, never stall ---------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["team-b", "team-a", "team-b/pay-1", "Pod/team-b/x", "10.0.0.1", "pay.team-b.svc",
                       "a\nb", "{\"namespace\": \"team-b\"}", "[1, 2]", "kind", "Secret", "Node"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        # (no peer keys: the far side of the caller's flow may name another namespace, by design)
        st.sampled_from(["namespace", "ns", "kind", "metadata", "name", "items", "data", "ip", "podIP",
                         "message", "team-b", "api-0", "cells", "rows", "object", "secrets", "value", "x"])
        | st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=int(os.environ.get("SLEUTH_HYPOTHESIS_EXAMPLES", "600")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.booleans(), st.booleans())
def test_never_raises_on_any_json(value: Any, pinned: bool, cluster_wide: bool) -> None:
    scope = ADMIN if cluster_wide else ALICE
    out = filter_result(json.dumps(value), scope, pinned=pinned, ips={"10.0.0.1": "team-b"}, known_namespaces=["team-b"])
    assert out.outcome in ("kept", "filtered", "withheld")
    if not cluster_wide and out.outcome != "withheld":
        _no_foreign_namespace(out.data)


TEXT_KEYS = {"message", "data"}


def _no_foreign_namespace(node: Any, key: Any = None) -> None:
    """No value or key is the foreign namespace, no free text names it, nothing encoded in a
    string does. (A value of the caller's own record may still contain the word, say
    ``"team-b:8080"``: only free text is scanned, DESIGN §2.)"""
    if isinstance(node, dict):
        for k, v in node.items():
            assert k != "team-b"
            _no_foreign_namespace(v, k)
    elif isinstance(node, list):
        for v in node:
            _no_foreign_namespace(v, key)
    elif isinstance(node, str):
        assert node != "team-b"
        if node[:1] in ("{", "["):
            try:
                _no_foreign_namespace(json.loads(node), key)
            except ValueError:
                pass
        if key in TEXT_KEYS or (isinstance(key, str) and "namespace" in key):
            assert not FOREIGN_TOKEN.search(node), node


@pytest.mark.parametrize("value", [
    None, 0, 1.5, True, "plain", [], {}, [None, [None, [None]]], {"namespace": None, "name": 3},
    {1: "x", None: {"namespace": "team-b"}, (1, 2): "y"}, {"kind": 7, "metadata": "x"}, {"items": None, "kind": "NodeList"},
    {"rows": [{"cells": [1]}, {"cells": None}], "columnDefinitions": [1, {"name": None}, {"name": "Namespace"}]},
    [{"src": None, "dst": 5}], {"namespaces": {"team-b": 1, 3: 4}}, [b"bytes"],
])
def test_filter_data_never_raises_on_odd_values(value: Any) -> None:
    for scope in (ALICE, ADMIN):
        out = filter_data(value, scope)
        assert out.outcome in ("kept", "filtered", "withheld")
        if out.outcome != "withheld" and not scope.cluster_wide:
            assert "team-b" not in json.dumps(out.data, default=str)


def _nested(levels: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"namespace": "team-a", "secret-bit": "pay-1"}
    for _ in range(levels):
        doc = {"a": [doc]}
    return doc


def test_too_deep_is_withheld_as_too_deeply_nested() -> None:
    out = filter_data(_nested(150), ALICE)
    assert out.outcome == "withheld" and "too deeply nested" in out.reason
    assert filter_data(_nested(40), ALICE).outcome == "kept"
    out = filter_data(_nested(3000), ALICE, in_place=True)  # beyond the interpreter's own limit
    assert out.outcome == "withheld" and "too deeply nested" in out.reason
    out = filter_result("[" * 5000 + "]" * 5000, ALICE, pinned=True)
    assert out.outcome == "withheld" and out.data is None


def test_wide_inputs_are_filtered_whole() -> None:
    pods = [_pod("team-a" if i % 2 else "team-b", f"p{i}") for i in range(50_000)]
    out = filter_result(json.dumps({"kind": "List", "items": pods}), ALICE)
    assert out.outcome == "filtered" and out.removed == 25_000 and len(out.data["items"]) == 25_000
    wide = {f"pod-{i}": {"namespace": "team-b"} for i in range(20_000)}
    out = filter_result(json.dumps(wide), ALICE)
    assert out.removed == 20_000 and "pod-1" not in out.text


@pytest.mark.parametrize("value", [
    {"namespace": [], "ns": {"kind": '{"namespace": "team-b"}'}},  # found by the property above
    {"namespace": "team-a", "kind": '{"namespace": "team-b"}'},
    {"kind": '[{"namespace": "team-b", "name": "x"}]', "items": []},
    {"namespace": "team-a", "apiVersion": "team-b"},
    {"items": [], "status": "moved to team-b yesterday"},
])
def test_a_structural_field_holding_no_structure_is_judged_as_what_it_holds(value: Any) -> None:
    """``kind``, ``apiVersion``, ``status`` … are kept on sight only when they hold a token; JSON or
    prose in them is filtered as a document or as text, like any other string."""
    out = filter_result(json.dumps(value), ALICE, pinned=False, known_namespaces=["team-b"])
    if out.outcome != "withheld":
        _no_foreign_namespace(out.data)
        assert "team-b" not in json.dumps(out.data), out.data
