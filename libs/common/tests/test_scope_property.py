"""Properties of the result filter over random nested results shaped like real tool output
(Kubernetes objects and lists, events — also in YAML with the capitalised keys of
kubernetes-mcp-server —, flows with namespaces or IPs on both sides, aggregates keyed by
namespace or ``ns/name``, ``Namespace`` objects, ``ns/name`` strings):

- no foreign namespace and no foreign record's name survives (JSON and YAML alike);
- no record that names only allowed namespaces is lost;
- peer-shaped records are kept exactly when the caller owns a side.

Every record carries a unique name token (``n00017x``) so survival can be checked on the output
text. Thousands of examples run in a few seconds (``SLEUTH_HYPOTHESIS_EXAMPLES`` scales them).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_common.scope import Scope, filter_result

ALLOWED = ["team-a", "shop"]
FOREIGN = ["team-b", "kube-system", "secret-ns"]
PEER_FOREIGN = ["partner-x"]  # the far side of a flow the caller owns: may be shown
SCOPE = Scope.of(ALLOWED)
EXAMPLES = int(os.environ.get("SLEUTH_HYPOTHESIS_EXAMPLES", "1500"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Doc:
    value: Any = None
    visible: set[str] = field(default_factory=set)  # tokens that must survive
    hidden: set[str] = field(default_factory=set)  # tokens that must not
    ips: dict[str, str] = field(default_factory=dict)
    counter: list[int] = field(default_factory=lambda: [0])

    def token(self) -> str:
        self.counter[0] += 1
        return f"n{self.counter[0]:05d}x"

    def ip(self, ns: str) -> str:
        n = len(self.ips) + 1
        ip = f"10.{n // 65536}.{n // 256 % 256}.{n % 256}"
        self.ips[ip] = ns
        return ip


namespaces = st.sampled_from(ALLOWED + FOREIGN)


@st.composite
def records(draw: st.DrawFn, doc: Doc, depth: int, hidden_above: bool) -> Any:
    kind = draw(st.sampled_from(
        ["k8s", "event", "yaml_event", "ref", "agg", "refmap", "flow", "ipflow", "nsobj", "plain", "scalar"]
    ))
    tok = doc.token()
    ns = draw(namespaces)
    foreign = ns in FOREIGN

    def children(hidden: bool) -> list[Any]:
        if depth <= 0:
            return []
        return draw(st.lists(records(doc, depth - 1, hidden), max_size=3))

    def note(is_foreign: bool) -> None:
        (doc.hidden if (is_foreign or hidden_above) else doc.visible).add(tok)

    if kind == "scalar":
        return draw(st.sampled_from([1, True, None, "Running", "apps/v1", "text/plain", "/var/log"]))
    if kind == "k8s":
        note(foreign)
        return {
            "apiVersion": "v1", "kind": draw(st.sampled_from(["Pod", "Service", "Deployment"])),
            "metadata": {"name": tok, "namespace": ns, "labels": {"app.kubernetes.io/name": tok},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": f"{tok}-rs"}]},
            "spec": {"containers": children(foreign or hidden_above), "image": "registry.k8s.io/x:v1"},
            "status": {"podIP": doc.ip(ns), "hostIP": "192.168.0.9", "phase": "Running"},
        }
    if kind == "event":
        note(foreign)
        return {"involvedObject": {"kind": "Pod", "namespace": ns, "name": tok},
                "message": f"Back-off restarting {tok}", "count": 3}
    if kind == "yaml_event":
        note(foreign)
        return {"InvolvedObject": {"Kind": "Pod", "Name": tok}, "Namespace": ns, "Message": f"pulled {tok}"}
    if kind == "ref":
        note(foreign)
        return f"{ns}/{tok}"
    if kind == "agg":
        note(foreign)
        return {"by_namespace": {ns: {"pods": tok}}}
    if kind == "refmap":
        note(foreign)
        return {"restarts": {f"{ns}/{tok}": 4}}
    if kind == "flow":
        owned = draw(st.booleans())
        if owned:
            src, dst = draw(st.sampled_from(ALLOWED)), draw(st.sampled_from(ALLOWED + PEER_FOREIGN))
            if draw(st.booleans()):
                src, dst = dst, src
        else:
            src, dst = draw(st.sampled_from(FOREIGN)), draw(st.sampled_from(FOREIGN))
        note(not owned)
        return {"source": {"namespace": src, "pod": tok}, "destination": {"namespace": dst}, "bytes": 10}
    if kind == "ipflow":
        src, dst = draw(namespaces), draw(namespaces)
        owned = src in ALLOWED or dst in ALLOWED  # the far side shows only as an IP
        note(not owned)
        return {"src_ip": doc.ip(src), "dst_ip": doc.ip(dst), "flow": tok}
    if kind == "nsobj":
        note(foreign)
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "annotations": {"t": tok}}}
    # plain: names no namespace; it shares the fate of its ancestors
    note(False)
    return {"name": tok, "items": children(hidden_above)}


@st.composite
def documents(draw: st.DrawFn) -> Doc:
    doc = Doc()
    doc.value = draw(st.lists(records(doc, 2, False), max_size=8))
    if draw(st.booleans()):
        doc.value = {"kind": "List", "items": doc.value}
    return doc


def _check(doc: Doc, text: str) -> None:
    out = filter_result(text, SCOPE, ips=doc.ips)
    assert out.outcome != "withheld", out.reason
    shown = out.text
    for ns in FOREIGN:
        assert ns not in shown, f"{ns} leaked"
    for tok in doc.hidden:
        assert tok not in shown, f"foreign record {tok} leaked"
    for tok in doc.visible:
        assert tok in shown, f"allowed record {tok} lost"
    assert (out.removed == 0) == (out.outcome == "kept")


@SETTINGS
@given(documents())
def test_json_results(doc: Doc) -> None:
    _check(doc, json.dumps(doc.value))


@settings(max_examples=max(100, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_yaml_results(doc: Doc) -> None:
    body = yaml.safe_dump(doc.value, sort_keys=False)
    if isinstance(doc.value, list) and doc.value and any(isinstance(x, dict | list) for x in doc.value):
        body = "# The following events (YAML format) were found:\n" + body
    out = filter_result(body, SCOPE, ips=doc.ips)
    if out.structured:
        _check(doc, body)
    else:  # a YAML document of scalars only is text, and unpinned text is withheld
        assert out.outcome == "withheld"


@settings(max_examples=300, deadline=None)
@given(namespaces, st.sampled_from(["namespace", "Namespace", "targetNamespace"]))
def test_foreign_top_level_document_is_withheld(ns: str, key: str) -> None:
    out = filter_result(json.dumps({key: ns, "items": [{"name": "x"}]}), SCOPE)
    assert (out.outcome == "withheld") == (ns in FOREIGN)
    if ns in FOREIGN:
        assert out.data is None and ns not in out.reason


def test_unresolvable_ip_withholds_unless_a_side_is_owned() -> None:
    ips = {"10.0.0.1": "team-a", "10.0.0.2": "team-b"}
    owned = [{"src": "10.0.0.1", "dst": "203.0.113.7"}]
    out = filter_result(json.dumps(owned), SCOPE, ips=ips)
    assert out.outcome == "kept"
    unknown = [{"src": "10.0.0.2", "dst": "203.0.113.7"}]
    out = filter_result(json.dumps(unknown), SCOPE, ips=ips)
    assert out.outcome == "withheld" and out.unresolved_ips == {"203.0.113.7"}
    assert "team-a" in out.reason and "team-b" not in out.reason
    foreign = [{"src": "10.0.0.2", "dst": "10.0.0.2"}, {"ip": "10.0.0.1"}]
    out = filter_result(json.dumps(foreign), SCOPE, ips=ips)
    assert out.outcome == "filtered" and out.removed == 1
