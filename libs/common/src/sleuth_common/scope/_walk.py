"""The scope filter's walk (the rules are in ``_results``' docstring): one pass over a parsed
result, in place, judging each record and cleaning what the kept ones hold, with counts per cause
of removal (never names)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sleuth_common.redact import REDACTED, is_secret_env_name
from sleuth_common.scope._keys import (
    ALLOWKEY,
    COLDEFS,
    DROP,
    IP,
    KEYSPECIAL,
    LABELS,
    LISTCTX,
    NAMEKEY,
    NAMESPACED_KINDS,
    NO_LIST_CONTEXT,
    NODE,
    NS,
    NSKEY,
    NSMAP,
    OBJECT_NAME,
    OBJKEY,
    OPAQUE,
    PEER,
    REFS,
    SECRET,
    SECRET_KINDS,
    SECRET_TEXT,
    SECRETNAME,
    SECRETS,
    SERVER_META,
    SRC,
    STRSLOW,
    STRSPECIAL,
    STRUCT,
    TEXT,
    VALUE,
    WNS,
    WORDS,
    clean_columns,
    cluster_table,
    is_object,
    key_class,
    keyed_by_namespace,
    list_context,
    looks_json,
    redact_secret_data,
    redact_tree,
    shape_resource,
)
from sleuth_common.scope._model import Scope, cluster_resource, served_as
from sleuth_common.scope._names import (
    LINE_WITHHELD,
    ForeignNames,
    ip_of,
    namespaces_in,
    ns_of_ref,
    text_namespaces,
)
from sleuth_common.scope._parse import parse_checked

TEXT_WITHHELD = "<withheld: text not limited to your namespaces>"
VALUE_WITHHELD = "<withheld: not attributable to your namespaces>"
NAMES_WITHHELD = "<withheld: names an object outside your namespaces>"
TABLE_WITHHELD = "<withheld: a listing of cluster-scoped objects you may not list>"

MAX_DEPTH = 200
MAX_ENCODINGS = 4

# Record states per side, verdicts, attributions.
_NONE, _ALLOWED, _FOREIGN = 0, 1, 2
# record state list: [side0, side1, side2, attribution, flags, resource, namespace-object name]
_ATTR, _FL, _RES, _NSNAME = 3, 4, 5, 6
_F_SECRET, _F_NODE, _F_DEEP, _F_CLUSTER, _F_NSOBJ, _F_OBJ, _F_MENTION = 1, 2, 4, 8, 16, 32, 64

V_KEEP, V_FOREIGN, V_UNATTRIBUTED, V_UNRESOLVED, V_CLUSTER, V_SECRET, V_DEEP, V_ENVELOPE = range(8)
_TOKEN = re.compile(r"[\w.:/@+=\-]{1,256}")
"""A structural value (a kind, apiVersion, phase, continue token): no space, quote or bracket."""
KEPT = (V_KEEP, V_ENVELOPE)

# Attributions. A namespace name: the record (or an ancestor) names it. PIN + a namespace, or
# PINNED_ANY: inherited from the call's pinning only (IPs such a record carries must still resolve).
PIN = "\x00"
PINNED_ANY = "\x00*"  # pinned to the caller's namespaces (which ones is not known, or several)
_MULTI = "*several*"  # the record names more than one allowed namespace
_CLUSTER = "*cluster*"  # a cluster-scoped object the caller may read

# pending work of a kept record: (tag, container, key-or-flags, parent, key)
_P_LIST, _P_MAP, _P_JSON, _P_TEXT, _P_FREE, _P_COLDEFS = range(6)


class _Walk:
    """One filtering pass (in place), with counts per cause of removal."""

    def __init__(
        self,
        scope: Scope,
        ips: Mapping[str, str] | None,
        foreign_known: frozenset[str],
        pinned: bool,
        pins: frozenset[str],
    ) -> None:
        self.scope = scope
        self.allowed = scope.namespaces
        self.ips = ips or {}
        self.foreign_known = foreign_known
        self.foreign_tokens = foreign_known - WORDS
        self.known = foreign_known | self.allowed
        self.key_namespaces = self.known - WORDS
        self.pinned = pinned
        self.pins = pins
        fnames = scope.foreign_names
        self.fnames = fnames if fnames else None
        extra = foreign_known - WORDS - (fnames.namespaces if fnames is not None else frozenset())
        self._extra = extra
        self._scanners: list[ForeignNames] | None = None
        self.has_names = bool(self.fnames) or bool(extra)
        self.counts = [0] * 8  # per verdict (withheld causes)
        self.text_withheld = 0
        self.lines_withheld = 0
        self.values_withheld = 0
        self.foreign_values = 0
        self.kept = 0
        self.redacted = 0
        self.encodings = 0
        self.unresolved: set[str] = set()
        self._kc: dict[Any, int] = {}

    # -- classification ----------------------------------------------------------------------
    def kc(self, key: Any) -> int:
        if not isinstance(key, str):
            self._kc[key] = 0
            return 0
        c = key_class(key)
        if key in self.key_namespaces:
            c |= NSKEY
            if key in self.allowed:
                c |= ALLOWKEY
            else:
                c |= DROP
        elif "/" in key:
            ns = ns_of_ref(key, self.allowed)
            if ns is not None:
                c |= ALLOWKEY if ns in self.allowed else DROP
        if len(self._kc) < 100_000:
            self._kc[key] = c
        return c

    def scanners(self) -> list[ForeignNames]:
        if self._scanners is None:
            found = [self.fnames] if self.fnames is not None else []
            if self._extra:
                extra = ForeignNames.of_namespaces(self._extra, self.allowed)
                if extra:
                    found.append(extra)
            self._scanners = found
        return self._scanners

    def mark(self, st: list[Any], side: int, ns: str) -> None:
        if ns in self.allowed:
            if st[side] == _NONE:
                st[side] = _ALLOWED
            a = st[_ATTR]
            if a is None:
                st[_ATTR] = ns
            elif a != ns:
                st[_ATTR] = _MULTI
        else:
            st[side] = _FOREIGN

    # -- records -----------------------------------------------------------------------------
    def record(
        self,
        d: dict[Any, Any],
        ctx: str | None,
        depth: int,
        hint: str | None = None,
        refs: bool = False,
        pre_ns: str | None = None,
        pre_ip: str | None = None,
        top: bool = False,
    ) -> int:
        """Judge one record, clean what it holds, count it. Returns the verdict. ``top``: the
        document itself (or a document encoded in a string), an envelope whenever it holds
        anything; deeper, an unattributed object is an envelope only when it holds records."""
        if depth > MAX_DEPTH:
            self.counts[V_DEEP] += 1
            return V_DEEP
        for k0 in d:
            c0 = self._kc.get(k0)
            if c0 is None:
                c0 = self.kc(k0)
            if c0 & NAMEKEY and pre_ns is None and pre_ip is None and self.is_record_map(d):
                self.clean_map(d, ctx, depth + 1)  # {"api-0": {...}, "web-1": {...}}: entry by entry
                return V_ENVELOPE
            break
        st: list[Any] = [_NONE, _NONE, _NONE, None, 0, None, None]
        ipsides: list[tuple[int, str]] = [(0, pre_ip)] if pre_ip is not None else []
        pending: list[tuple[Any, ...]] = []
        if pre_ns is not None:
            self.mark(st, 0, pre_ns)
        self.scan(d, 0, st, ipsides, pending, depth, False, False)
        if st[_FL] or ipsides or hint is not None or st[1] or st[2]:
            verdict, attr = self.decide(d, st, ipsides, pending, ctx, hint, refs, top)
        elif st[0] == _ALLOWED:  # the common case, decided without the general rules
            verdict, attr = V_KEEP, st[_ATTR]
        elif st[0] == _NONE and ctx is not None and (ctx[0] != PIN or not self.has_names):
            verdict, attr = V_KEEP, ctx
        else:
            verdict, attr = self.decide(d, st, ipsides, pending, ctx, hint, refs, top)
        if verdict == V_KEEP and (st[1] == _FOREIGN or st[2] == _FOREIGN):
            # A flow or reference with one side outside the scope: the record is the caller's,
            # the foreign side's details are not (a peer's workload, pod, DNS name ...).
            for side in (1, 2):
                if st[side] == _FOREIGN:
                    self.blank_side(d, side)
        if verdict == V_KEEP or verdict == V_ENVELOPE:
            if verdict == V_KEEP and not (top and attr is not None and attr[0] == PIN):
                self.kept += 1  # (a document kept on the pin alone is an envelope: not counted)
            else:
                self.strip_loose(d, pending)
            if pending:
                self.follow(pending, attr, depth)
        else:
            self.counts[verdict] += 1
        return verdict

    def decide(
        self,
        d: dict[Any, Any],
        st: list[Any],
        ipsides: list[tuple[int, str]],
        pending: list[tuple[Any, ...]],
        ctx: str | None,
        hint: str | None,
        refs: bool,
        top: bool,
    ) -> tuple[int, str | None]:
        if st[_FL] & _F_DEEP:
            return V_DEEP, None
        if refs:  # a reference, not an object: a Namespace it names is a carrier
            kind, name = d.get("kind"), d.get("name")
            if type(kind) is str and type(name) is str and name and cluster_resource(kind) == "namespaces":
                self.mark(st, 0, name)
        elif st[_FL] & (_F_OBJ | _F_NODE) or hint is not None:
            self.object_kind(d, st, hint)
        flags = st[_FL]
        scope = self.scope
        if flags & _F_NSOBJ:
            name = st[_NSNAME]
            if name in self.allowed:
                return V_KEEP, name
            return (V_KEEP, _CLUSTER) if scope.may_list("namespaces") else (V_FOREIGN, None)
        if flags & _F_CLUSTER:
            return (V_KEEP, _CLUSTER) if scope.may_list(st[_RES] or "") else (V_CLUSTER, None)
        unresolved: list[str] = []
        if ipsides:
            named = (st[0] != _NONE, st[1] != _NONE, st[2] != _NONE)
            ips = self.ips
            for side, value in ipsides:
                if named[side]:
                    continue
                ip = ip_of(value)
                if ip is None:
                    continue
                owner = ips.get(ip)
                if owner is None:
                    # Inside an attributed record an unknown IP (a node's) is that record's
                    # business; a record standing alone needs it resolved, and so does a flow's
                    # side when the flow is attributed by the call's pinning only.
                    if ctx is None or (side and ctx[0] == PIN):
                        unresolved.append(ip)
                else:
                    self.mark(st, side, owner)
        s0, s1, s2 = st[0], st[1], st[2]
        if s0 == _FOREIGN:
            return V_FOREIGN, None
        attr: str | None = None
        if s1 or s2:
            if s0 == _ALLOWED or s1 == _ALLOWED or s2 == _ALLOWED:
                attr = st[_ATTR]
            elif unresolved:
                self.unresolved.update(unresolved)
                return V_UNRESOLVED, None
            else:
                return V_FOREIGN, None
        elif s0 == _ALLOWED:
            attr = st[_ATTR]
        elif unresolved:
            self.unresolved.update(unresolved)
            return V_UNRESOLVED, None
        elif ctx is not None:
            if ctx[0] == PIN and (flags & _F_MENTION or self.named_foreign(d) or self.mentions_foreign(d)):
                # on the call's pinning only, yet it names a foreign namespace or object
                return V_FOREIGN, None
            attr = ctx
        elif pending and not flags & _F_SECRET and not is_object(d) and _holds_records(pending, top):
            return V_ENVELOPE, None
        else:
            return V_UNATTRIBUTED, None
        if flags & _F_SECRET and not self.secret_ok(attr):
            return V_SECRET, None
        return V_KEEP, attr

    def named_foreign(self, d: dict[Any, Any]) -> bool:
        fnames = self.fnames
        if fnames is None:
            return False
        name = d.get("name")
        if type(name) is not str:
            meta = d.get("metadata")
            name = meta.get("name") if type(meta) is dict else None
        return type(name) is str and name in fnames

    def mentions_foreign(self, d: dict[Any, Any]) -> bool:
        """Does a key or value of the record's own content (free text aside: that is judged line
        by line) name a foreign namespace or object?"""
        scanners = self.scanners() if self.has_names else ()
        if not scanners:
            return False
        stack = [d]
        while stack:
            node = stack.pop()
            for k, v in node.items():
                if isinstance(k, str) and key_class(k) & NAMEKEY and any(sc.hits(k) for sc in scanners):
                    return True
                if type(v) is str:
                    if v and not (isinstance(k, str) and key_class(k) & TEXT) and any(sc.hits(v) for sc in scanners):
                        return True
                elif type(v) is dict:
                    stack.append(v)
        return False

    def secret_ok(self, attr: str | None) -> bool:
        scope = self.scope
        if attr is None or attr == _CLUSTER:
            return False
        if attr == PINNED_ANY:
            want = self.pins or self.allowed
            return bool(want) and want <= scope.secret_namespaces
        if attr == _MULTI:
            return bool(self.allowed) and self.allowed <= scope.secret_namespaces
        return scope.may_read_secrets(attr[1:] if attr[0] == PIN else attr)

    def object_kind(self, d: dict[Any, Any], st: list[Any], hint: str | None) -> None:
        """What kind of object the record is (its own ``kind``, its Table row ``object``, its
        list's kind, its shape): flags it as a Namespace, cluster-scoped object or Secret."""
        kind = d.get("kind")
        meta = d.get("metadata")
        obj = d
        if type(kind) is not str and type(meta) is not dict:
            o = d.get("object")
            if type(o) is dict:
                obj, kind, meta = o, o.get("kind"), o.get("metadata")
        if type(kind) is not str or kind in ("List", "Table", "PartialObjectMetadata", "PartialObjectMetadataList"):
            kind = hint
        if type(meta) is not dict:
            meta = None
        if kind is not None:
            res = cluster_resource(kind)
            if res is not None and (
                (meta is not None and meta.get("namespace")) or not served_as(res, obj.get("apiVersion"))
            ):
                # A namespaced object, or another API's kind that shares a cluster kind's name
                # (longhorn.io's Node): judged by its namespace like any namespaced record.
                res = None
                if kind in SECRET_KINDS or kind in NAMESPACED_KINDS:
                    pass
                else:
                    kind = None
            if res == "namespaces":
                name = meta.get("name") if meta is not None else obj.get("name")
                if type(name) is str and name:
                    st[_FL] |= _F_NSOBJ
                    st[_NSNAME] = name
                return
            if res is not None:
                st[_FL] |= _F_CLUSTER
                st[_RES] = res
                return
            if kind in SECRET_KINDS:
                if meta is not None or "data" in obj or "stringData" in obj or "type" in obj:
                    st[_FL] |= _F_SECRET
                    self.redacted += redact_secret_data(obj)
                return
            if kind in NAMESPACED_KINDS:
                return
        if st[_FL] & _F_NODE:
            st[_FL] |= _F_CLUSTER
            st[_RES] = "nodes"
            return
        if meta is None or "namespace" in meta or type(meta.get("name")) is not str:
            return
        if not any(k in meta for k in SERVER_META):
            return
        # A server object without a namespace is cluster-scoped.
        res = shape_resource(obj, meta)
        if res == "namespaces":
            st[_FL] |= _F_NSOBJ
            st[_NSNAME] = meta["name"]
        else:
            st[_FL] |= _F_CLUSTER
            st[_RES] = res or (cluster_resource(kind) if kind else None) or ""

    # -- the walk over one record's own content --------------------------------------------------
    def scan(  # noqa: C901 -- the filter's measured hot loop (make bench): inlined on purpose, splitting costs speed
        self,
        d: dict[Any, Any],
        side: int,
        st: list[Any],
        ipsides: list[tuple[int, str]],
        pending: list[tuple[Any, ...]],
        depth: int,
        labels: bool,
        nested: bool,
    ) -> None:
        if depth > MAX_DEPTH:
            st[_FL] |= _F_DEEP
            return
        kcache = self._kc
        drop_keys: list[Any] | None = None
        kind: Any = None
        nskeys = 0
        allowed_key: str | None = None
        allowed = self.allowed
        foreign_tokens = self.foreign_tokens
        for k, v in d.items():
            c = kcache.get(k)
            if c is None:
                c = self.kc(k)
            s = side
            if c & KEYSPECIAL:
                if c & PEER and not side:
                    s = 1 if c & SRC else 2
                if c & NSKEY:
                    nskeys += 1
                    if c & ALLOWKEY:
                        allowed_key = k
                if c & DROP:
                    if drop_keys is None:
                        drop_keys = []
                    drop_keys.append(k)
                    continue
                if c & ALLOWKEY and not c & NSKEY:
                    ns = ns_of_ref(k, allowed)
                    if ns is not None:
                        self.mark(st, side, ns)
                if c & NODE:
                    st[_FL] |= _F_NODE
                if c & OBJKEY and not nested:
                    st[_FL] |= _F_OBJ
            t = type(v)
            if t is str:
                if not v:
                    continue
                if c & STRSLOW:
                    if c & STRSPECIAL:
                        if c & NS:
                            self.mark(st, s, v)
                        elif c & WNS:
                            if not labels or v in self.known:
                                self.mark(st, s, v)
                        elif c & SECRET:
                            if v != REDACTED and not (c & SECRETNAME and OBJECT_NAME.match(v)):
                                d[k] = REDACTED
                                self.redacted += 1
                        elif _TOKEN.fullmatch(v):
                            kind = v
                            if v in foreign_tokens:
                                st[s] = _FOREIGN
                        else:
                            # not a kind at all (JSON, prose): judged as any other string below
                            self.loose_kind(d, k, v, s, st, pending)
                        continue
                    if c & VALUE:
                        name = d.get("name")
                        if type(name) is str and v != REDACTED and is_secret_env_name(name):
                            d[k] = REDACTED
                            self.redacted += 1
                            continue
                c0 = v[0]
                if (c0 == "{" or c0 == "[") and looks_json(v):
                    pending.append((_P_JSON, d, k))
                    continue
                if "\n" in v:
                    pending.append((_P_TEXT, d, k))
                    continue
                if c & TEXT:
                    pending.append((_P_FREE, d, k))
                    if " " in v:
                        continue  # prose: judged as text, not as a reference
                if "/" in v or ".svc" in v or ".pod" in v:
                    if c & OPAQUE and ".svc" in v and _is_image_key(k):
                        hidden = _in_cluster_registry(v, allowed)
                        if hidden is not None:
                            # The caller's own image, pulled from an in-cluster registry Service
                            # (OpenShift's image-registry.openshift-image-registry.svc:5000/<project>/…):
                            # the registry's host says nothing about whose record this is.
                            d[k] = hidden
                            self.redacted += 1
                            continue
                    for ns in namespaces_in(v, allowed, refs=not c & OPAQUE):
                        self.mark(st, s, ns)
                elif v in foreign_tokens:
                    # a value that is a foreign namespace's name; in a label or selector map it
                    # may be the caller's own reference, which only a record on the pin alone
                    # may not make
                    if labels:
                        st[_FL] |= _F_MENTION
                    else:
                        st[s] = _FOREIGN
                if c & IP:
                    ipsides.append((s, v))
            elif t is dict:
                if c & NSMAP:
                    self.clean_ns_map(v, st, s)
                    for sub in v.values():
                        if type(sub) is dict:
                            self.scan(sub, s, st, ipsides, pending, depth + 1, labels, True)
                        elif type(sub) is list:
                            pending.append((_P_LIST, sub, 0, v, None))
                    continue
                if c & SECRET and not ("secretName" in v or "name" in v):
                    # e.g. {"password": {"value": "..."}}: everything under it is secret
                    self.redacted += redact_tree(v)
                    continue
                is_map = False
                for k0 in v:  # a map of records? (its first key tells most dicts apart)
                    c0 = kcache.get(k0)
                    if c0 is None:
                        c0 = self.kc(k0)
                    is_map = bool(c0 & NAMEKEY) and self.is_record_map(v)
                    break
                if is_map:
                    pending.append((_P_MAP, v))
                    continue
                if c & NS:  # a namespace as an object: {"name": …} or {"metadata": {"name": …}}
                    name = v.get("name")
                    meta = v.get("metadata")
                    if type(name) is not str and type(meta) is dict:
                        name = meta.get("name")
                    if type(name) is str and name:
                        self.mark(st, s, name)
                self.scan(v, s, st, ipsides, pending, depth + 1, labels or bool(c & LABELS), True)
            elif t is list:
                if c & COLDEFS:
                    pending.append((_P_COLDEFS, v))
                    continue
                flags = c & (NS | IP | OPAQUE | TEXT | SECRETS | REFS | LISTCTX)
                if c & NS:
                    for item in v:
                        if type(item) is str and item in allowed:
                            self.mark(st, s, item)
                elif c & IP:
                    # a list of bare IPs is part of this record (a service's clusterIPs)
                    for item in v:
                        if type(item) is str:
                            ipsides.append((s, item))
                pending.append((_P_LIST, v, flags, d, k))
        if nested and kind is not None:
            self.nested_kind(d, kind, st, side)
        if allowed_key is not None:
            if nskeys == len(d):
                self.mark(st, side, allowed_key)  # a map keyed by namespace
            elif keyed_by_namespace(d):
                # keyed like {"team-a": …, "team-b": …}: the keys not in scope are namespaces too
                self.mark(st, side, allowed_key)
                drop_keys = [k for k in d if k not in allowed]
        if drop_keys:
            for k in drop_keys:
                del d[k]
            self.counts[V_FOREIGN] += len(drop_keys)

    def loose_kind(
        self, d: dict[Any, Any], k: Any, v: str, side: int, st: list[Any], pending: list[tuple[Any, ...]]
    ) -> None:
        """A ``kind`` (or another kind-like key) whose value is no kind: JSON or text in it is
        judged as a document or text of its own; a bare value naming a foreign namespace makes
        the record foreign."""
        if v[:1] in ("{", "[") and looks_json(v):
            pending.append((_P_JSON, d, k))
        elif "\n" in v or " " in v:
            pending.append((_P_TEXT, d, k))
        elif v in self.foreign_tokens:
            st[side] = _FOREIGN
        else:
            for ns in namespaces_in(v, self.allowed, refs=True):
                self.mark(st, side, ns)

    def nested_kind(self, d: dict[Any, Any], kind: str, st: list[Any], side: int) -> None:
        """A ``kind`` inside a record: a reference (``involvedObject``) or an embedded object."""
        meta = d.get("metadata")
        is_object = type(meta) is dict or d.get("cluster_scoped") is True
        res = cluster_resource(kind)
        if res == "namespaces":
            name = meta.get("name") if type(meta) is dict else d.get("name")
            if type(name) is str and name:
                self.mark(st, side, name)  # a Namespace named inside a record is a carrier
        elif res is not None:
            if is_object:
                st[_FL] |= _F_CLUSTER
                st[_RES] = res
        elif kind in SECRET_KINDS and (is_object or "data" in d or "stringData" in d):
            st[_FL] |= _F_SECRET
            self.redacted += redact_secret_data(d)

    def is_record_map(self, m: dict[Any, Any]) -> bool:
        kcache = self._kc
        for k, v in m.items():
            if type(v) is not dict:
                return False
            c = kcache.get(k)
            if c is None:
                c = self.kc(k)
            if not c & NAMEKEY or c & NSKEY:
                return False
        return True

    def clean_ns_map(self, m: dict[Any, Any], st: list[Any], side: int) -> None:
        foreign = [k for k in m if not (isinstance(k, str) and k in self.allowed)]
        for k in foreign:
            del m[k]
        self.counts[V_FOREIGN] += len(foreign)
        for k in m:
            self.mark(st, side, k)
            break

    # -- what a kept record holds ------------------------------------------------------------------
    def follow(self, pending: list[tuple[Any, ...]], attr: str | None, depth: int) -> None:
        for p in pending:
            tag = p[0]
            if tag == _P_LIST:
                _tag, lst, flags, parent, key = p
                hint, nscol, refs = list_context(parent, key, flags) if flags & (LISTCTX | REFS | NS) else NO_LIST_CONTEXT
                self.clean_list(lst, attr, flags, depth + 1, hint, nscol, refs)
            elif tag == _P_MAP:
                self.clean_map(p[1], attr, depth + 1)
            elif tag == _P_COLDEFS:
                if attr is None:
                    self.values_withheld += clean_columns(p[1])
            else:
                container, key = p[1], p[2]
                value = container.get(key)
                if type(value) is not str:
                    continue
                if tag == _P_JSON:
                    container[key] = self.string_value(value, attr, depth + 1)
                elif tag == _P_TEXT:
                    container[key] = self.text(value, attr, depth + 1)
                else:
                    container[key] = self.free_text(value)

    def clean_list(
        self,
        lst: list[Any],
        ctx: str | None,
        flags: int,
        depth: int,
        hint: str | None = None,
        nscol: int = -1,
        refs: bool = False,
    ) -> None:
        """Filter ``lst`` in place: each element is a record (or a string judged on its own)."""
        if depth > MAX_DEPTH:
            if lst:
                self.counts[V_DEEP] += len(lst)
                lst.clear()
            return
        keep: list[Any] | None = None
        for i, item in enumerate(lst):
            t = type(item)
            ok = True
            if t is dict:
                pre = None
                if nscol >= 0:
                    cells = item.get("cells")
                    if type(cells) is list and len(cells) > nscol and type(cells[nscol]) is str and cells[nscol]:
                        pre = cells[nscol]
                ok = self.record(item, ctx, depth + 1, hint, refs, pre) in KEPT
            elif t is str:
                new = self.string_item(item, ctx, flags, depth)
                if new is None:
                    ok = False
                elif new is not item:
                    item = new
                    lst[i] = new
            elif t is list:
                self.clean_list(item, ctx, flags, depth + 1, None, -1, refs)
            if ok:
                if keep is not None:
                    keep.append(item)
            elif keep is None:
                keep = lst[:i]
        if keep is not None:
            lst[:] = keep

    def clean_map(self, m: dict[Any, Any], ctx: str | None, depth: int) -> None:
        """A map of records keyed by object names: judged entry by entry."""
        drop: list[Any] = []
        fnames = self.fnames
        for k, v in m.items():
            pre_ip = None
            if isinstance(k, str):
                if fnames is not None and k in fnames:
                    drop.append(k)
                    self.counts[V_FOREIGN] += 1
                    continue
                if ip_of(k) is not None:
                    pre_ip = k
            if self.record(v, ctx, depth, pre_ip=pre_ip) not in KEPT:
                drop.append(k)
        for k in drop:
            del m[k]

    def string_item(self, s: str, ctx: str | None, flags: int, depth: int) -> str | None:
        """A string in a list: itself, a cleaned replacement, or None to drop it."""
        if not s:
            return s
        c0 = s[0]
        if (c0 == "{" or c0 == "[") and looks_json(s):
            return self.string_value(s, ctx, depth)
        if "\n" in s:
            return self.text(s, ctx, depth)
        allowed = self.allowed
        if flags & NS:
            if s in allowed:
                self.kept += 1
                return s
            self.foreign_values += 1
            return None
        if s in self.foreign_tokens or (self.fnames is not None and s in self.fnames):
            self.foreign_values += 1
            return None
        attributed = False
        if "/" in s or ".svc" in s or ".pod" in s:
            for ns in namespaces_in(s, allowed, refs=not flags & OPAQUE):
                if ns not in allowed:
                    self.foreign_values += 1
                    return None
                attributed = True
        if flags & IP or (c0.isdigit() and ctx is None):
            ip = ip_of(s)
            if ip is not None:
                owner = self.ips.get(ip)
                if owner is None:
                    if ctx is None:
                        self.unresolved.add(ip)
                        self.counts[V_UNRESOLVED] += 1
                        return None
                elif owner in allowed:
                    attributed = True
                else:
                    self.foreign_values += 1
                    return None
        if ctx is None:
            if attributed or s in allowed:
                self.kept += 1
                return s
            self.values_withheld += 1
            return None
        if flags & TEXT:
            shown = self.free_text(s)
            if shown is not s:
                return shown
        elif ctx[0] == PIN and self.has_names and any(sc.hits(s) for sc in self.scanners()):
            self.foreign_values += 1
            return None
        self.kept += 1
        return s

    def string_value(self, s: str, ctx: str | None, depth: int) -> str:
        """A string holding JSON: filtered as a document of its own, then re-encoded."""
        if self.encodings >= MAX_ENCODINGS or depth > MAX_DEPTH:
            self.counts[V_DEEP] += 1
            return VALUE_WITHHELD
        parsed = parse_checked(s)
        data = parsed.data
        if parsed.refused or parsed.prose:  # past a parsing limit, or JSON inside prose
            if parsed.prose and self.pinned:
                return self.text(s, ctx, depth)
            self.counts[V_DEEP if parsed.refused else V_UNATTRIBUTED] += 1
            return VALUE_WITHHELD
        if not parsed.structured or not isinstance(data, dict | list):
            if "\n" in s:
                return self.text(s, ctx, depth)
            return self.free_text(s) if ctx is not None else self.withhold_value()
        self.encodings += 1
        try:
            if isinstance(data, dict):
                if self.record(data, ctx, depth, top=True) not in KEPT:
                    return VALUE_WITHHELD
            else:
                self.clean_list(data, ctx, 0, depth)
        finally:
            self.encodings -= 1
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str)

    def blank_side(self, d: dict[Any, Any], side: int) -> None:
        """Replace every value on ``side`` (1 source, 2 destination) of a peer-shaped record."""
        stack: list[tuple[Any, int]] = [(d, 0)]
        while stack:
            node, cur = stack.pop()
            items = list(node.items()) if type(node) is dict else list(enumerate(node))
            for k, v in items:
                s = cur
                if type(node) is dict and not cur:
                    c = self._kc.get(k)
                    if c is None:
                        c = self.kc(k)
                    if c & PEER:
                        s = 1 if c & SRC else 2
                if s == side:
                    if v not in (None, "", VALUE_WITHHELD) and type(v) is not bool:
                        node[k] = self.withhold_value()
                elif type(v) in (dict, list):
                    stack.append((v, s))

    def withhold_value(self) -> str:
        self.values_withheld += 1
        return VALUE_WITHHELD

    def text(self, s: str, ctx: str | None, depth: int) -> str:
        """Multi-line text: kept only from a pinned call, and then without lines naming foreign
        objects."""
        if not self.pinned:
            self.text_withheld += 1
            return TEXT_WITHHELD
        if "Secret" in s and SECRET_TEXT.search(s):
            # a Secret written out as YAML/JSON text: judged as the object it is (its data goes)
            parsed = parse_checked(s)
            if parsed.structured and not parsed.prose and isinstance(parsed.data, dict | list):
                return self.string_value(json.dumps(parsed.data), ctx, depth)
        shown, n = self.kept_text(s)
        self.lines_withheld += n
        return shown

    def kept_text(self, text: str) -> tuple[str, int]:
        """Text that may be shown: a ``kubectl get`` table of a cluster-scoped kind only to who
        may list it (Namespaces: the caller's rows), and no line naming a foreign object."""
        resource = cluster_table(text)
        if resource is not None and not self.scope.may_list(resource):
            if resource != "namespaces":
                self.counts[V_CLUSTER] += 1
                return TABLE_WITHHELD, 0
            lines = text.split("\n")
            kept = [lines[0], *(ln for ln in lines[1:] if not ln.strip() or ln.split()[0] in self.allowed)]
            self.foreign_values += len(lines) - len(kept)
            text = "\n".join(kept)
        return self.withhold_lines(text)

    def withhold_lines(self, text: str) -> tuple[str, int]:
        """Kept text without the lines that name a foreign object or namespace."""
        n = 0
        for scanner in self.scanners():
            text, got = scanner.withhold_lines(text)
            n += got
        allowed = self.allowed
        foreign = [at for ns, at in text_namespaces(text) if ns not in allowed]
        if foreign:
            starts: list[int] = []
            for at in sorted(foreign):
                start = text.rfind("\n", 0, at) + 1
                if not starts or starts[-1] != start:
                    starts.append(start)
            out: list[str] = []
            pos = 0
            for start in starts:
                end = text.find("\n", start)
                end = len(text) if end < 0 else end
                out.append(text[pos:start])
                out.append(LINE_WITHHELD)
                pos = end
            out.append(text[pos:])
            text = "".join(out)
            n += len(starts)
        return text, n

    def free_text(self, s: str) -> str:
        """A single-line free-text value (a message, a log line) of a kept record."""
        bad = any(scanner.hits(s) for scanner in self.scanners())
        if not bad:
            bad = any(ns not in self.allowed for ns, _at in text_namespaces(s))
        if bad:
            self.lines_withheld += 1
            return NAMES_WITHHELD
        return s

    def strip_loose(self, d: dict[Any, Any], pending: list[tuple[Any, ...]]) -> None:
        """An envelope keeps only its structural string fields (the records it holds are judged
        on their own)."""
        skip = {id(p[1]) for p in pending if p[0] in (_P_LIST, _P_MAP)}
        later = {(id(p[1]), p[2]) for p in pending if p[0] in (_P_JSON, _P_TEXT)}
        fnames = self.fnames
        stack = [d]
        while stack:
            node = stack.pop()
            for k, v in node.items():
                t = type(v)
                if t is str:
                    if not v or v == REDACTED or (id(node), k) in later:
                        continue
                    structural = isinstance(k, str) and key_class(k) & STRUCT and _TOKEN.fullmatch(v)
                    if not structural or v in self.foreign_tokens or (fnames is not None and v in fnames):
                        node[k] = VALUE_WITHHELD
                        self.values_withheld += 1
                elif t is dict and id(v) not in skip:
                    stack.append(v)


def _holds_records(pending: list[tuple[Any, ...]], top: bool) -> bool:
    """Does an unattributed object hold records to judge on their own (so that it is an
    envelope), rather than being a record nothing attributes?"""
    for p in pending:
        tag = p[0]
        if tag == _P_FREE:
            continue
        if top or (tag != _P_LIST and tag != _P_COLDEFS):
            return True
        if any(type(x) is dict or type(x) is list for x in p[1]):
            return True
    return False


_IMAGE_KEYS = frozenset({"image", "images", "imageid", "image_id", "imageref", "image_ref", "imagename", "image_name"})
_REGISTRY_SVC = re.compile(r"^([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.svc(?:\.[a-z0-9.-]+)?(?::\d{1,5})?/([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)/")


def _is_image_key(key: object) -> bool:
    return isinstance(key, str) and key.lower() in _IMAGE_KEYS


def _in_cluster_registry(value: str, allowed: frozenset[str]) -> str | None:
    """``value`` with its registry host hidden, when it is an image the caller's own project holds
    in an in-cluster registry Service (``<svc>.<ns>.svc[:port]/<project>/<name>``, ``<project>``
    one of the caller's namespaces); None otherwise (the usual rules apply, and an image of another
    team's project keeps its record out)."""
    m = _REGISTRY_SVC.match(value)
    if m is None or m.group(3) not in allowed or m.group(2) in allowed:
        return None
    return f"{REDACTED}/{value[m.end(3) - len(m.group(3)):]}"
