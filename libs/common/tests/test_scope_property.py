"""Properties of the result filter over random hostile results shaped like real tool output:
Kubernetes objects, events (also in YAML with kubernetes-mcp-server's capitalised keys), flows
with namespaces or IPs on both sides, aggregates keyed by namespace or ``ns/name``, Namespace
objects, and a foreign namespace in every carrier the filter knows (``ns``/``project``/``tenant``
keys, namespaces as objects, ``Kind/ns/name`` ids, API paths, cluster DNS names, Table rows),
records that name no namespace, Prometheus series with only a pod label, label-value lists,
Nodes and PVs (cluster-scoped), Secrets, multi-line logs, JSON encoded in strings and MCP
content — nested at random depths, inside envelopes (a List, a Prometheus response, MCP content,
double-encoded JSON), from pinned and unpinned calls:

- no foreign namespace, no foreign record's token, no Secret value survives (JSON and YAML alike);
- nothing that names no namespace survives from an unpinned call;
- no record that is provably the caller's is lost; peer-shaped records are kept exactly when
  the caller owns a side;
- filter_result never raises.

Every record carries a unique token (``n00017x``) so survival can be checked on the output text.
A token is *visible* (must survive), *hidden* (must not) or neither, where the rules leave the
outcome to the shape around it (the records inside an unattributed object: it may be an envelope
or a record withheld whole). ``SLEUTH_HYPOTHESIS_EXAMPLES`` scales the number of examples.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_common.scope import Scope, filter_result

ALLOWED = ["team-a", "shop"]
FOREIGN = ["team-b", "kube-system", "secret-ns"]
PEER_FOREIGN = ["partner-x"]  # the far side of a flow the caller owns: kept, its details withheld
SECRET_NS = "shop"  # where the caller may get secrets
EXAMPLES = int(os.environ.get("SLEUTH_HYPOTHESIS_EXAMPLES", "1500"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Where a record sits: "allowed" = inside a record attributed to the caller (or a pinned call's
# top level); "none" = an unpinned call's top level or an envelope there; "maybe" = inside an
# unattributed record, which may be an envelope or withheld whole; "hidden" = inside a dropped one.
Ctx = Literal["allowed", "none", "maybe", "hidden"]


@dataclass
class Doc:
    value: Any = None
    visible: set[str] = field(default_factory=set)
    hidden: set[str] = field(default_factory=set)
    ips: dict[str, str] = field(default_factory=dict)
    inventory: dict[str, list[str]] = field(default_factory=lambda: {ns: [] for ns in ALLOWED + FOREIGN})
    counter: list[int] = field(default_factory=lambda: [0])

    def token(self, ns: str | None = None) -> str:
        self.counter[0] += 1
        tok = f"n{self.counter[0]:05d}x"
        if ns is not None:
            self.inventory.setdefault(ns, []).append(tok)
        return tok

    def ip(self, ns: str) -> str:
        n = len(self.ips) + 1
        ip = f"10.{n // 65536}.{n // 256 % 256}.{n % 256}"
        self.ips[ip] = ns
        return ip

    def owned(self, tok: str, ctx: Ctx, allowed: bool) -> Ctx:
        """A record attributed by its own carrier: the context its children get."""
        if ctx == "hidden" or not allowed:
            self.hidden.add(tok)
            return "hidden"
        if ctx == "maybe":
            return "maybe"
        self.visible.add(tok)
        return "allowed"

    def unattributed(self, tok: str, ctx: Ctx) -> Ctx:
        """A record that names no namespace: it shares the fate of where it sits."""
        if ctx == "allowed":
            self.visible.add(tok)
            return "allowed"
        if ctx in ("none", "hidden"):
            self.hidden.add(tok)
        return "hidden" if ctx == "hidden" else "maybe"

    def never(self, *toks: str) -> None:
        self.hidden.update(toks)


namespaces = st.sampled_from(ALLOWED + FOREIGN)


@dataclass(frozen=True)
class Rec:
    """One record being drawn: the draw, the document it adds tokens to, where it sits, its namespace."""

    draw: st.DrawFn
    doc: Doc
    depth: int
    ctx: Ctx
    pinned: bool
    ns: str

    @property
    def allowed(self) -> bool:
        return self.ns in ALLOWED

    def children(self, sub: Ctx) -> list[Any]:
        if self.depth <= 0:
            return []
        return self.draw(st.lists(records(self.doc, self.depth - 1, sub, self.pinned), max_size=3))

    def owned(self) -> tuple[str, Ctx]:
        """A token in the record's namespace, the record attributed to it by its own carrier."""
        tok = self.doc.token(self.ns)
        return tok, self.doc.owned(tok, self.ctx, self.allowed)

    def allowed_and_foreign(self) -> tuple[str, str]:
        """A token in one of the caller's namespaces and one in a foreign namespace."""
        return self.doc.token(self.draw(st.sampled_from(ALLOWED))), self.doc.token(self.draw(st.sampled_from(FOREIGN)))


def _scalar(r: Rec) -> Any:
    return r.draw(st.sampled_from([1, True, None, 2.5]))


def _k8s(r: Rec) -> Any:
    tok, sub = r.owned()
    return {
        "apiVersion": "v1", "kind": r.draw(st.sampled_from(["Pod", "Service", "Deployment"])),
        "metadata": {"name": tok, "namespace": r.ns, "labels": {"app.kubernetes.io/name": tok},
                     "ownerReferences": [{"kind": "ReplicaSet", "name": f"{tok}-rs"}]},
        "spec": {"containers": r.children(sub), "image": "registry.k8s.io/x:v1"},
        "status": {"podIP": r.doc.ip(r.ns), "hostIP": "192.168.0.9", "phase": "Running"},
    }


def _event(r: Rec) -> Any:
    tok, _ = r.owned()
    return {"involvedObject": {"kind": "Pod", "namespace": r.ns, "name": tok}, "message": f"Back-off restarting {tok}"}


def _yaml_event(r: Rec) -> Any:
    tok, _ = r.owned()
    return {"InvolvedObject": {"Kind": "Pod", "Name": tok}, "Namespace": r.ns, "Message": f"pulled {tok}"}


def _weak(r: Rec) -> Any:
    tok, _ = r.owned()
    return {r.draw(st.sampled_from(["ns", "project", "tenant", "namespace_name", "k8s_namespace"])): r.ns, "id": tok}


def _nsobject(r: Rec) -> Any:
    tok, _ = r.owned()
    return {"namespace": {"name": r.ns}, "id": tok}


def _kindref(r: Rec) -> Any:
    tok, _ = r.owned()
    return {"id": f"{r.draw(st.sampled_from(['Pod', 'Deployment', 'Service']))}/{r.ns}/{tok}"}


def _path(r: Rec) -> Any:
    tok, _ = r.owned()
    return {"selfLink": f"/api/v1/namespaces/{r.ns}/pods/{tok}"}


def _dns(r: Rec) -> Any:
    tok, _ = r.owned()
    return {"url": f"http://{tok}.{r.ns}.svc.cluster.local:8080/", "id": tok}


def _ref(r: Rec) -> Any:
    tok = r.doc.token(r.ns)
    if r.ctx == "maybe" and r.allowed:
        return f"{r.ns}/{tok}"
    (r.doc.visible if r.allowed and r.ctx != "hidden" else r.doc.hidden).add(tok)
    return f"{r.ns}/{tok}"


def _agg(r: Rec) -> Any:
    tok, _ = r.owned()
    return {"by_namespace": {r.ns: {"pods": tok}}}


def _refmap(r: Rec) -> Any:
    tok, _ = r.owned()
    return {"restarts": {f"{r.ns}/{tok}": 4}}


def _flow(r: Rec) -> Any:
    draw = r.draw
    owned = draw(st.booleans())
    if owned:
        src, dst = draw(st.sampled_from(ALLOWED)), draw(st.sampled_from(ALLOWED + PEER_FOREIGN))
        if draw(st.booleans()):
            src, dst = dst, src
    else:
        src, dst = draw(st.sampled_from(FOREIGN)), draw(st.sampled_from(FOREIGN))
    tok = r.doc.token()
    # the pod is on the source side: shown only when that side is the caller's
    r.doc.owned(tok, r.ctx, owned and src in ALLOWED)
    return {"source": {"namespace": src, "pod": tok}, "destination": {"namespace": dst}, "bytes": 10}


def _ipflow(r: Rec) -> Any:
    src, dst = r.draw(namespaces), r.draw(namespaces)
    tok = r.doc.token()
    r.doc.owned(tok, r.ctx, src in ALLOWED or dst in ALLOWED)  # the far side shows only as an IP
    return {"src_ip": r.doc.ip(src), "dst_ip": r.doc.ip(dst), "flow": tok}


def _nsobj(r: Rec) -> Any:
    tok = r.doc.token()
    r.doc.owned(tok, r.ctx, r.allowed)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": r.ns, "annotations": {"t": tok}}}


def _table(r: Rec) -> Any:
    tok = r.doc.token(r.ns)
    row_ctx: Ctx = "none" if r.ctx in ("none", "allowed") else r.ctx  # the Table is an envelope
    r.doc.owned(tok, row_ctx, r.allowed)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "columnDefinitions": [{"name": "Name", "type": "string"}, {"name": "Namespace", "type": "string"}],
            "rows": [{"cells": [tok, r.ns, "Running"]}]}


def _prom(r: Rec) -> Any:
    tok = r.doc.token()
    r.doc.unattributed(tok, r.ctx)
    return {"metric": {"__name__": "up", "pod": tok}, "value": [1700000000, "1"]}


def _labels(r: Rec) -> Any:
    mine, theirs = r.allowed_and_foreign()
    r.doc.unattributed(mine, r.ctx)
    r.doc.never(theirs)
    return {"data": [mine, theirs]}


def _node(r: Rec) -> Any:
    tok = r.doc.token()
    r.doc.never(tok)
    ip = r.doc.ip(r.draw(st.sampled_from(ALLOWED)))  # a hostNetwork pod's IP: claims nothing
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": tok, "uid": "1"},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}], "nodeInfo": {"kubeletVersion": "v1"}}}


def _pv(r: Rec) -> Any:
    tok = r.doc.token()
    r.doc.never(tok)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": tok, "uid": "1"},
            "spec": {"claimRef": {"namespace": r.draw(st.sampled_from(ALLOWED)), "name": "data"}}}


def _secret(r: Rec) -> Any:
    tok, value = r.doc.token(r.ns), r.doc.token()
    r.doc.owned(tok, r.ctx, r.ns == SECRET_NS)
    r.doc.never(value)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": r.ns, "name": tok},
            "data": {"password": value}}


def _log(r: Rec) -> Any:
    tok, mine, theirs = r.doc.token(r.ns), r.doc.token(r.ns), r.doc.token(r.draw(st.sampled_from(FOREIGN)))
    r.doc.owned(tok, r.ctx, r.allowed)
    r.doc.never(theirs)
    if r.pinned:
        r.doc.owned(mine, r.ctx, r.allowed)
    else:
        r.doc.never(mine)  # text from an unpinned call is withheld whole
    return {"namespace": r.ns, "name": tok, "log": f"GET / 200 {mine}\nupstream {theirs} refused\n"}


def _json(r: Rec) -> Any:
    tok, sub = r.owned()
    return {"namespace": r.ns, "name": tok, "result": json.dumps(r.children(sub))}


def _mcp(r: Rec) -> Any:
    # MCP content: unattributed, holding a JSON document (an envelope where nothing attributes it)
    return {"type": "text", "text": json.dumps(r.children(r.ctx))}


def _bymap(r: Rec) -> Any:
    mine, theirs = r.allowed_and_foreign()
    r.doc.owned(mine, r.ctx, True)  # a map of records is judged entry by entry
    r.doc.never(theirs)
    own_ns = next(n for n, toks in r.doc.inventory.items() if mine in toks)
    other_ns = next(n for n, toks in r.doc.inventory.items() if theirs in toks)
    return {mine: {"namespace": own_ns, "restarts": 1}, theirs: {"namespace": other_ns, "restarts": 2}}


def _plain(r: Rec) -> Any:
    # names no namespace; it shares the fate of where it sits
    tok = r.doc.token()
    sub = r.doc.unattributed(tok, r.ctx)
    return {"name": tok, "items": r.children(sub)}


# Every record shape, by the name a failing example shows (the order is the draw's: keep it stable).
BUILDERS: dict[str, Callable[[Rec], Any]] = {
    "k8s": _k8s, "event": _event, "yaml_event": _yaml_event, "ref": _ref, "agg": _agg, "refmap": _refmap,
    "flow": _flow, "ipflow": _ipflow, "nsobj": _nsobj, "plain": _plain, "scalar": _scalar, "weak": _weak,
    "nsobject": _nsobject, "kindref": _kindref, "path": _path, "dns": _dns, "table": _table, "prom": _prom,
    "labels": _labels, "node": _node, "pv": _pv, "secret": _secret, "log": _log, "json": _json, "mcp": _mcp,
    "bymap": _bymap,
}
KINDS = list(BUILDERS)


@st.composite
def records(draw: st.DrawFn, doc: Doc, depth: int, ctx: Ctx, pinned: bool) -> Any:
    kind = draw(st.sampled_from(KINDS))
    return BUILDERS[kind](Rec(draw, doc, depth, ctx, pinned, draw(namespaces)))


@st.composite
def documents(draw: st.DrawFn) -> tuple[Doc, bool]:
    doc = Doc()
    pinned = draw(st.booleans())
    top: Ctx = "allowed" if pinned else "none"
    doc.value = draw(st.lists(records(doc, 3, top, pinned), max_size=8))
    wrap = draw(st.sampled_from(["list", "List", "prometheus", "mcp", "double"]))
    if wrap == "List":
        doc.value = {"apiVersion": "v1", "kind": "List", "items": doc.value, "metadata": {"resourceVersion": "1"}}
    elif wrap == "prometheus":
        doc.value = {"status": "success", "data": {"resultType": "vector", "result": doc.value}}
    elif wrap == "mcp":
        doc.value = {"content": [{"type": "text", "text": json.dumps(doc.value)}]}
    elif wrap == "double":
        doc.value = json.dumps(doc.value)
    return doc, pinned


def _scope(doc: Doc) -> Scope:
    return Scope.of(ALLOWED, secret_namespaces=[SECRET_NS], inventory=doc.inventory)


def _check(doc: Doc, text: str, pinned: bool) -> None:
    out = filter_result(text, _scope(doc), ips=doc.ips, pinned=pinned)
    shown = out.text
    for ns in FOREIGN:
        assert ns not in shown, f"{ns} leaked"
    for tok in doc.hidden:
        assert tok not in shown, f"{tok} leaked"
    for tok in doc.visible:
        assert tok in shown, f"the caller's {tok} lost ({out.reason})"
    if doc.visible:
        assert out.outcome != "withheld", out.reason
    if out.outcome != "withheld":
        assert (out.removed == 0) == (out.outcome == "kept")


@SETTINGS
@given(documents())
def test_json_results(drawn: tuple[Doc, bool]) -> None:
    doc, pinned = drawn
    _check(doc, json.dumps(doc.value), pinned)


@settings(max_examples=max(100, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_yaml_results(drawn: tuple[Doc, bool]) -> None:
    doc, pinned = drawn
    body = yaml.safe_dump(doc.value, sort_keys=False)
    if isinstance(doc.value, list) and doc.value and any(isinstance(x, dict | list) for x in doc.value):
        body = "# The following events (YAML format) were found:\n" + body
    out = filter_result(body, _scope(doc), ips=doc.ips, pinned=pinned)
    if out.structured:
        _check(doc, body, pinned)
    else:  # a YAML document of scalars only is text: withheld unless pinned, never a leak
        assert out.outcome == "withheld" or pinned
        for tok in doc.hidden:
            assert tok not in out.text


@settings(max_examples=300, deadline=None)
@given(namespaces, st.sampled_from(["namespace", "Namespace", "targetNamespace", "ns", "tenant"]))
def test_foreign_top_level_document_is_withheld(ns: str, key: str) -> None:
    out = filter_result(json.dumps({key: ns, "items": [{"name": "x"}]}), Scope.of(ALLOWED))
    assert (out.outcome == "withheld") == (ns in FOREIGN)
    if ns in FOREIGN:
        assert out.data is None and ns not in out.reason


def test_unresolvable_ip_withholds_only_its_record() -> None:
    ips = {"10.0.0.1": "team-a", "10.0.0.2": "team-b"}
    scope = Scope.of(ALLOWED)
    owned = [{"src": "10.0.0.1", "dst": "203.0.113.7"}]
    assert filter_result(json.dumps(owned), scope, ips=ips).outcome == "kept"
    unknown = [{"src": "10.0.0.2", "dst": "203.0.113.7"}]
    out = filter_result(json.dumps(unknown), scope, ips=ips)
    assert out.outcome == "withheld" and out.unresolved_ips == {"203.0.113.7"}
    assert "team-a" in out.reason and "team-b" not in out.reason
    mixed = [{"src": "10.0.0.2", "dst": "203.0.113.7", "id": "u"}, {"ip": "10.0.0.1", "id": "mine"}]
    out = filter_result(json.dumps(mixed), scope, ips=ips)
    assert out.outcome == "filtered" and out.removed == 1 and out.unresolved_ips == {"203.0.113.7"}
    assert [r["id"] for r in out.data] == ["mine"]
