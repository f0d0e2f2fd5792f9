"""Property: for random nested results, no foreign namespace survives the filter and no
record that names only allowed namespaces is lost."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth_common.scope import Scope, filter_result

ALLOWED = ["team-a", "shop"]
FOREIGN = ["team-b", "kube-system", "secret-ns"]
SCOPE = Scope.of(ALLOWED)

namespaces = st.sampled_from(ALLOWED + FOREIGN)
ns_keys = st.sampled_from(["namespace", "targetNamespace", "source_namespace"])
plain_keys = st.sampled_from(["name", "spec", "status", "items", "pods", "owner", "labels"])
scalars = st.one_of(st.integers(), st.booleans(), st.sampled_from(["x", "Running", "api-1"]), st.none())


def _record(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    plain = st.dictionaries(plain_keys, children, max_size=4)
    ns_fields = st.dictionaries(ns_keys, namespaces, max_size=2)
    meta = st.builds(lambda ns: {"metadata": {"namespace": ns, "name": "obj"}}, namespaces)
    involved = st.builds(lambda ns: {"involvedObject": {"kind": "Pod", "namespace": ns}}, namespaces)
    extra = st.one_of(st.just({}), ns_fields, meta, involved)
    return st.builds(lambda a, b: {**a, **b}, plain, extra)


documents = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), _record(children)),
    max_leaves=40,
)


def _namespace_values(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if "namespace" in k.lower() and isinstance(v, str):
                out.add(v)
            _namespace_values(v, out)
    elif isinstance(node, list):
        for x in node:
            _namespace_values(x, out)
    return out


@settings(max_examples=300, deadline=None)
@given(documents)
def test_no_foreign_namespace_survives(doc: Any) -> None:
    out = filter_result(json.dumps(doc), SCOPE)
    if out.outcome == "withheld":
        assert out.data is None
        return
    assert not (_namespace_values(out.data, set()) & set(FOREIGN))
    assert out.removed == 0 if out.outcome == "kept" else out.removed > 0


@settings(max_examples=300, deadline=None)
@given(documents)
def test_all_allowed_records_are_never_lost(doc: Any) -> None:
    wrapped = {"items": [doc]}
    out = filter_result(json.dumps(wrapped), SCOPE)
    clean = not (_namespace_values(doc, set()) & set(FOREIGN))
    if clean:
        assert out.outcome == "kept" and out.data == wrapped
    else:
        assert out.outcome == "filtered" and out.removed >= 1
        assert not (_namespace_values(out.data, set()) & set(FOREIGN))


@settings(max_examples=200, deadline=None)
@given(st.lists(documents, max_size=6))
def test_allowed_siblings_survive_next_to_foreign_ones(records: list[Any]) -> None:
    out = filter_result(json.dumps(records), SCOPE)
    assert out.outcome != "withheld"  # a list is never withheld whole
    survivors = out.data
    for rec in records:
        if not (_namespace_values(rec, set()) & set(FOREIGN)):
            assert rec in survivors
