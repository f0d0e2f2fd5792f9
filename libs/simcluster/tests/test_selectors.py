"""Label and field selectors, as the API server parses and applies them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth_common.k8s import LabelSelector, SelectorError
from sleuth_simcluster._selectors import fields_match, parse_field_selector


def pod(name: str, labels: dict[str, str], phase: str = "Running", node: str = "n1", ns: str = "a") -> dict:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"nodeName": node}, "status": {"phase": phase}}


PODS = [
    pod("web-1", {"app": "web", "tier": "front"}),
    pod("web-2", {"app": "web", "tier": "front", "canary": "true"}, node="n2"),
    pod("api-1", {"app": "api", "tier": "back"}, phase="Pending", node=""),
    pod("job-1", {"job-name": "migrate"}, phase="Succeeded", ns="b"),
]


@dataclass(frozen=True)
class Case:
    selector: str
    names: tuple[str, ...]


LABEL_CASES = [
    Case("", ("web-1", "web-2", "api-1", "job-1")),
    Case("app=web", ("web-1", "web-2")),
    Case("app==web", ("web-1", "web-2")),
    Case("app!=web", ("api-1", "job-1")),
    Case("app in (web, api)", ("web-1", "web-2", "api-1")),
    Case("app notin (web)", ("api-1", "job-1")),
    Case("canary", ("web-2",)),
    Case("!canary", ("web-1", "api-1", "job-1")),
    Case("app=web,!canary", ("web-1",)),
    Case("tier in (front,back),app!=api", ("web-1", "web-2")),
    Case("job-name", ("job-1",)),
    Case("app=", ()),
]


@pytest.mark.parametrize("case", LABEL_CASES, ids=[c.selector or "empty" for c in LABEL_CASES])
def test_label_selector(case: Case) -> None:
    sel = LabelSelector.from_string(case.selector)
    assert tuple(p["metadata"]["name"] for p in PODS if sel.matches_object(p)) == case.names


@pytest.mark.parametrize("bad", ["app in web", "app in (web", "=web", "app web", "app=web,,", "(app)", "app=web,",
                                 "app-=web", "app in ()x"])
def test_bad_label_selector_is_refused(bad: str) -> None:
    with pytest.raises(SelectorError):
        LabelSelector.from_string(bad)


FIELD_CASES = [
    Case("status.phase=Running", ("web-1", "web-2")),
    Case("status.phase!=Running", ("api-1", "job-1")),
    Case("spec.nodeName==n1", ("web-1", "job-1")),
    Case("spec.nodeName=", ("api-1",)),
    Case("metadata.name=web-2", ("web-2",)),
    Case("metadata.namespace=b", ("job-1",)),
    Case("metadata.namespace=a,status.phase=Running,spec.nodeName!=n2", ("web-1",)),
]


@pytest.mark.parametrize("case", FIELD_CASES, ids=[c.selector for c in FIELD_CASES])
def test_field_selector_on_pods(case: Case) -> None:
    reqs = parse_field_selector(case.selector, "pods")
    assert tuple(p["metadata"]["name"] for p in PODS if fields_match(reqs, p)) == case.names


def test_event_field_selectors() -> None:
    event = {"metadata": {"name": "e", "namespace": "a"}, "type": "Warning", "reason": "BackOff",
             "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "a", "uid": "u1"},
             "source": {"component": "kubelet"}}
    for selector, expected in [
        ("involvedObject.name=web-1,involvedObject.namespace=a,involvedObject.kind=Pod,involvedObject.uid=u1", True),
        ("involvedObject.name=web-2", False),
        ("type=Warning,reason=BackOff", True),
        ("type!=Warning", False),
        ("source=kubelet", True),
        ("regarding.name=web-1", True),
    ]:
        assert fields_match(parse_field_selector(selector, "events"), event) is expected, selector


def test_escaped_values() -> None:
    obj = {"metadata": {"name": "a,b=c"}}
    assert fields_match(parse_field_selector(r"metadata.name=a\,b\=c", "configmaps"), obj)


@pytest.mark.parametrize(("selector", "plural", "message"), [
    ("status.phase=Running", "configmaps", '"status.phase" is not a known field selector'),
    ("spec.foo=x", "pods", "field label not supported: spec.foo"),
    ("nonsense", "pods", "invalid selector"),
])
def test_unknown_fields_are_refused(selector: str, plural: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        parse_field_selector(selector, plural)


_label = st.from_regex(r"[a-z]([a-z0-9.-]{0,9}[a-z0-9])?", fullmatch=True)  # valid label keys and values


@given(key=_label, value=_label, labels=st.dictionaries(_label, _label, max_size=4))
def test_equality_and_inequality_partition_objects(key: str, value: str, labels: dict[str, str]) -> None:
    obj = {"metadata": {"labels": labels}}
    def matches(text: str) -> bool:
        return LabelSelector.from_string(text).matches_object(obj)

    assert matches(f"{key}={value}") != matches(f"{key}!={value}")
    assert matches(key) != matches(f"!{key}")
