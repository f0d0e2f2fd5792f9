"""Steps 2-4 of the scope filter (DESIGN §2): drop foreign records from a result or withhold it,
then redact. Reports counts, never names.

Input: JSON, YAML (third-party Kubernetes MCP servers answer in YAML, sometimes behind a ``#``
comment line) or text. Text passes only when the call was pinned to the caller's namespaces.

What names a namespace, at any depth:
- a key containing ``namespace`` (``metadata.namespace``, ``involvedObject.namespace``,
  ``Namespace``, ``source_namespace`` …) with a string value, or a list of them;
- the ``metadata.name`` of a ``kind: Namespace`` object, and ``name`` of records listed under a
  ``namespaces`` key;
- map keys under ``namespaces`` / ``by_namespace`` / ``per_namespace`` (``{"team-a": {...}}``);
- ``ns/name`` strings and map keys (``{"team-b/api-0": 42}``), told apart from ``apps/v1``,
  ``text/plain`` and image names by shape;
- map keys equal to a foreign namespace the document names elsewhere;
- IP addresses under IP-shaped keys (``podIP``, ``clusterIPs``, ``ip``, ``address``, ``src``,
  ``dst`` …), resolved through ``ips`` (from ``sleuth.authz.resolve``) for records that name no
  namespace themselves. An IP missing from ``ips`` matters only for a record that also sits in no
  record naming a namespace (a pod's ``hostIP`` is the pod's business); there it fails closed.

A *record* is an element of a list (the top-level document is one too). A record naming a foreign
namespace is dropped with everything inside it; lists nested in a record are records of their own.
A peer-shaped record (keys starting with ``source``/``src``/``from``/``client``/``local`` and
``destination``/``dst``/``to``/``server``/``remote``/``peer``) is kept when the caller owns either
side. A top-level object that names a foreign namespace is withheld whole, as is a result where a
record's owner hangs on an IP that ``ips`` does not resolve (``unresolved_ips`` says which).

Speed: one pass over the parsed value, in place, with per-key classification cached in dicts
(no regex per node); whole-text scans (redaction, markers) run at C speed on the serialized text.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from sleuth_common.redact import REDACTED, is_secret_env_name, is_secret_key, redact_text
from sleuth_common.scope._markers import strip_markers
from sleuth_common.scope._model import FilterOutcome, Scope
from sleuth_common.scope._parse import parse_result

__all__ = ["NARROW_MESSAGE", "dump_result", "filter_data", "filter_result", "parse_result"]  # parse_result re-exported

NARROW_MESSAGE = (
    "This result was withheld: it is unstructured text from a call that was not limited to your "
    "namespaces, so it cannot be checked. Narrow the query with a namespace argument ({scope})."
)
FOREIGN_TOP_MESSAGE = (
    "This result was withheld: it is about a namespace outside your access. You can read only "
    "these namespaces: {scope}."
)
UNRESOLVED_MESSAGE = (
    "This result was withheld: it names {n} IP address{es} whose owner could not be resolved, so it "
    "cannot be checked. Narrow the query to one of your namespaces ({scope})."
)
TOO_LARGE_MESSAGE = (
    "This result was withheld: it is larger than {limit} bytes, too large to check. Narrow the "
    "query (a namespace, a label selector, a name, fewer lines) — your namespaces: {scope}."
)

# Key classes (bit flags), cached per key string.
_NS = 1  # the value names a namespace (or a list of them)
_NSMAP = 2  # a dict value is keyed by namespace
_SECRET = 4  # the value is a credential
_SRC = 8  # peer side: source
_DST = 16  # peer side: destination
_IP = 32  # the value may be an IP address
_KIND = 64  # "kind"
_VALUE = 128  # "value" (env name/value pairs)
_DROP = 256  # per call: the key itself names a foreign namespace / ns/name → drop the entry
_OPAQUE = 512  # the value has slashes of its own (an image, a URL, a path): never an ns/name ref

# Keys whose string values contain slashes that are not ``namespace/name``: ``bitnami/redis`` is
# an image, ``/var/lib/data`` a path, ``team-b/api`` under ``image`` is a registry repository.
_OPAQUE_KEYS = frozenset(
    {"image", "images", "imageid", "imagename", "imageref", "repository", "repo", "registry", "url", "urls",
     "uri", "href", "link", "path", "paths", "mountpath", "subpath", "file", "filename", "command",
     "args", "mediatype", "contenttype", "content_type", "media_type"}
)

_SIDE_SRC = re.compile(r"^(?:source|src|from|client|local|origin)(?:$|[_\-.A-Z0-9])")
_SIDE_DST = re.compile(r"^(?:destination|dest|dst|to|server|remote|peer)(?:$|[_\-.A-Z0-9])")
_IP_KEY = re.compile(r"(?i)(?:^|[_\-.a-z])(?:ip|ips|ipv4|ipv6|addr|address|addresses|host|hostip)(?:$|[_\-.A-Z0-9s])|^ip")

_KEY_CACHE: dict[str, int] = {}


def _classify_key(key: str) -> int:
    k = key.lower()
    c = 0
    if "namespace" in k and not k.endswith(("selector", "namespaced")):
        c |= _NS
    if k.endswith("namespaces") or k.startswith(("by_namespace", "per_namespace", "bynamespace", "pernamespace")):
        c |= _NSMAP
    if is_secret_key(key):
        c |= _SECRET
    if _SIDE_SRC.match(key):
        c |= _SRC
    elif _SIDE_DST.match(key):
        c |= _DST
    if _IP_KEY.search(key) or c & (_SRC | _DST):
        c |= _IP
    if k == "kind":
        c |= _KIND
    if k == "value":
        c |= _VALUE
    if k in _OPAQUE_KEYS or k.endswith(("image", "images", "_url", "url", "_path")):
        c |= _OPAQUE
    return c


def _key_class(key: str) -> int:
    c = _KEY_CACHE.get(key)
    if c is None:
        c = _classify_key(key)
        if len(_KEY_CACHE) < 100_000:
            _KEY_CACHE[key] = c
    return c


# ns/name references: a DNS label, a slash, a Kubernetes object name. Not a MIME type, an API
# group/version, a protocol/port, a date or a path.
_NS_REF = re.compile(r"^([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)/([A-Za-z0-9](?:[-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?)$")
_API_VERSION = re.compile(r"^v\d+(?:(?:alpha|beta)\d+)?$")
_NOT_NAMESPACES = frozenset(
    {"text", "application", "image", "audio", "video", "multipart", "font", "model", "message",
     "tcp", "udp", "sctp", "http", "https", "grpc", "h2", "h2c", "ws", "wss", "and", "or", "either"}
)
_NAMED_NS = re.compile(r"(?i)namespace[a-z_\-]*[\"']?\s*[:=]\s*[\"']?([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)\b")
_IP_CACHE: dict[str, str | None] = {}

_NONE, _ALLOWED, _FOREIGN = 0, 1, 2


def _ns_ref(text: str) -> str | None:
    """The namespace of an ``ns/name`` string, or None when it is not shaped like one."""
    m = _NS_REF.match(text)
    if m is None:
        return None
    ns, name = m.group(1), m.group(2)
    if ns in _NOT_NAMESPACES or ns.isdigit() or _API_VERSION.match(name):
        return None
    return ns


def _ip_of(value: str) -> str | None:
    """The IP address in ``value`` (``10.1.2.3``, ``10.1.2.3:8080``, ``[fd00::1]:80``), else None."""
    if not value or len(value) > 64:
        return None
    c0 = value[0]
    if not (c0.isdigit() or c0 in "abcdefABCDEF:["):
        return None
    got = _IP_CACHE.get(value, "")
    if got != "":
        return got
    candidate = value
    if candidate.startswith("["):
        candidate = candidate[1:].split("]", 1)[0]
    elif candidate.count(":") == 1:
        candidate = candidate.split(":", 1)[0]
    try:
        ip: str | None = str(ipaddress.ip_address(candidate))
    except ValueError:
        ip = None
    if len(_IP_CACHE) < 200_000:
        _IP_CACHE[value] = ip
    return ip


class _Walk:
    """One filtering pass (in place). ``removed`` counts dropped records and map entries."""

    def __init__(
        self,
        allowed: frozenset[str],
        foreign_keys: frozenset[str],
        ips: Mapping[str, str] | None,
    ) -> None:
        self.allowed = allowed
        self.foreign_keys = foreign_keys
        self.ips = ips or {}
        self.removed = 0
        self.redacted = 0
        self.unresolved: set[str] = set()
        self._kc: dict[str, int] = {}
        self._refs: dict[str, bool] = {}

    # -- classification ----------------------------------------------------------------------
    def kc(self, key: Any) -> int:
        if not isinstance(key, str):
            return 0
        c = _key_class(key)
        if key in self.foreign_keys:
            c |= _DROP
        elif "/" in key:
            ns = _ns_ref(key)
            if ns is not None and ns not in self.allowed:
                c |= _DROP
        self._kc[key] = c
        return c

    def foreign_ref(self, value: str) -> bool:
        r = self._refs.get(value)
        if r is None:
            ns = _ns_ref(value)
            r = ns is not None and ns not in self.allowed
            if len(self._refs) < 100_000:
                self._refs[value] = r
        return r

    # -- records -----------------------------------------------------------------------------
    def record(self, d: dict[Any, Any], ctx: bool) -> str:
        """Judge one record and clean what it holds. Returns "keep", "drop" or "unresolved"."""
        st = [_NONE, _NONE, _NONE]
        ipsides: list[tuple[int, str]] = []
        pending: list[tuple[list[Any], int]] = []
        self.scan(d, 0, st, ipsides, pending)
        verdict = self.verdict(st, ipsides, ctx)
        if verdict == "keep":
            inner_ctx = ctx or st[0] != _NONE or st[1] != _NONE or st[2] != _NONE
            for lst, flags in pending:
                self.clean_list(lst, inner_ctx, flags)
        return verdict

    def verdict(self, st: list[int], ipsides: list[tuple[int, str]], ctx: bool) -> str:
        unresolved: list[str] = []
        if ipsides:
            named = (st[0] != _NONE, st[1] != _NONE, st[2] != _NONE)
            for side, value in ipsides:
                if named[side]:
                    continue
                ip = _ip_of(value)
                if ip is None:
                    continue
                owner = self.ips.get(ip)
                if owner is None:
                    # Inside a record that names a namespace, an unknown IP (a node's) is that
                    # record's business; only a record standing alone needs it resolved.
                    if not ctx:
                        unresolved.append(ip)
                elif owner in self.allowed:
                    if st[side] == _NONE:
                        st[side] = _ALLOWED
                else:
                    st[side] = _FOREIGN
        s0, s1, s2 = st
        if s0 == _FOREIGN:
            return "drop"
        if s1 or s2:
            if s0 == _ALLOWED or s1 == _ALLOWED or s2 == _ALLOWED:
                return "keep"
            if unresolved:
                self.unresolved.update(unresolved)
                return "unresolved"
            return "drop"
        if s0 == _ALLOWED or not unresolved:
            return "keep"
        self.unresolved.update(unresolved)
        return "unresolved"

    def mark(self, st: list[int], side: int, ns: str) -> None:
        if ns in self.allowed:
            if st[side] == _NONE:
                st[side] = _ALLOWED
        else:
            st[side] = _FOREIGN

    def scan(
        self,
        d: dict[Any, Any],
        side: int,
        st: list[int],
        ipsides: list[tuple[int, str]],
        pending: list[tuple[list[Any], int]],
    ) -> None:
        kcache = self._kc
        drop_keys: list[Any] | None = None
        is_namespace_kind = False
        for k, v in d.items():
            c = kcache.get(k)
            if c is None:
                c = self.kc(k)
            if c & _DROP:
                if drop_keys is None:
                    drop_keys = []
                drop_keys.append(k)
                continue
            s = side
            if side == 0 and c & (_SRC | _DST):
                s = 1 if c & _SRC else 2
            t = type(v)
            if t is str:
                if c & _NS:
                    if v:
                        self.mark(st, s, v)
                elif c & _SECRET:
                    if v and v != REDACTED:
                        d[k] = REDACTED
                        self.redacted += 1
                elif c & _VALUE:
                    name = d.get("name")
                    if type(name) is str and v and v != REDACTED and is_secret_env_name(name):
                        d[k] = REDACTED
                        self.redacted += 1
                elif c & _KIND:
                    if v == "Namespace" or v == "Project":
                        is_namespace_kind = True
                else:
                    if "/" in v and not c & _OPAQUE and self.foreign_ref(v):
                        st[s] = _FOREIGN
                    elif c & _IP:
                        ipsides.append((s, v))
            elif t is dict:
                if c & _NSMAP:
                    self.clean_ns_map(v)
                    for sub in v.values():
                        if type(sub) is dict:
                            self.scan(sub, s, st, ipsides, pending)
                        elif type(sub) is list:
                            pending.append((sub, 0))
                else:
                    if c & _SECRET:
                        # e.g. {"password": {"value": "..."}}: everything under it is secret
                        self.redact_tree(v)
                        continue
                    self.scan(v, s, st, ipsides, pending)
            elif t is list:
                flags = 0
                if c & _NS:
                    flags |= _NS
                if c & _IP:
                    flags |= _IP
                if c & _OPAQUE:
                    flags |= _OPAQUE
                if flags & _IP and not flags & _NS:
                    # a list of bare IPs is part of this record (a service's clusterIPs)
                    for item in v:
                        if type(item) is str:
                            ipsides.append((s, item))
                pending.append((v, flags))
        if is_namespace_kind:
            meta = d.get("metadata")
            name = meta.get("name") if type(meta) is dict else d.get("name")
            if type(name) is str and name:
                self.mark(st, side, name)
        if drop_keys:
            for k in drop_keys:
                del d[k]
            self.removed += len(drop_keys)

    def redact_tree(self, node: Any) -> None:
        if type(node) is dict:
            for k, v in node.items():
                if type(v) is str and v and v != REDACTED:
                    node[k] = REDACTED
                    self.redacted += 1
                else:
                    self.redact_tree(v)
        elif type(node) is list:
            for i, v in enumerate(node):
                if type(v) is str and v and v != REDACTED:
                    node[i] = REDACTED
                    self.redacted += 1
                else:
                    self.redact_tree(v)

    def clean_ns_map(self, m: dict[Any, Any]) -> None:
        foreign = [k for k in m if not (isinstance(k, str) and k in self.allowed)]
        for k in foreign:
            del m[k]
        self.removed += len(foreign)

    def clean_list(self, lst: list[Any], ctx: bool, flags: int = 0) -> str:
        """Filter ``lst`` in place. Returns "unresolved" when an element's owner could not be
        resolved (the caller then withholds the whole result)."""
        keep: list[Any] | None = None
        status = "keep"
        allowed = self.allowed
        for i, item in enumerate(lst):
            t = type(item)
            ok = True
            if t is dict:
                if flags & _NS:
                    name = item.get("name")
                    if type(name) is str and name and name not in allowed:
                        ok = False
                if ok:
                    v = self.record(item, ctx)
                    if v == "unresolved":
                        status = "unresolved"
                    ok = v == "keep"
            elif t is str:
                if flags & _NS:
                    ok = not item or item in allowed
                elif "/" in item and not flags & _OPAQUE and self.foreign_ref(item):
                    ok = False
                elif flags & _IP:
                    ip = _ip_of(item)
                    if ip is not None:
                        owner = self.ips.get(ip)
                        if owner is None:
                            if not ctx:
                                self.unresolved.add(ip)
                                status = "unresolved"
                                ok = False
                        else:
                            ok = owner in allowed
            elif t is list:
                if self.clean_list(item, ctx, flags) == "unresolved":
                    status = "unresolved"
            if ok:
                if keep is not None:
                    keep.append(item)
            else:
                self.removed += 1
                if keep is None:
                    keep = lst[:i]
        if keep is not None:
            lst[:] = keep
        return status


def _namespaces_named(text: str | None, data: Any) -> set[str]:
    """Namespaces the document names under namespace keys (a fast scan of the text)."""
    if text is None:
        text = json.dumps(data, default=str)
    return set(_NAMED_NS.findall(text))


def filter_data(
    data: Any,
    scope: Scope,
    *,
    ips: Mapping[str, str] | None = None,
    known_namespaces: Iterable[str] = (),
    text: str | None = None,
    in_place: bool = False,
) -> FilterOutcome:
    """Filter already-parsed JSON/YAML for ``scope`` (see the module docstring).

    ``ips`` maps IP → owning namespace (missing = unresolvable). ``known_namespaces``: other
    namespaces of the cluster, so map keys naming them are recognised. ``text``: the text ``data``
    was parsed from (saves a scan). ``in_place``: ``data`` may be modified (else it is copied).
    Credential-shaped values are redacted here only where the structure says so (secret keys,
    env name/value pairs); ``filter_result`` also redacts the serialized text.
    """
    if not in_place:
        data = json.loads(json.dumps(data, default=str))
    allowed = scope.namespaces
    if scope.cluster_wide:
        walk = _Walk(allowed, frozenset(), ips)
        walk.redacted += _redact_only(walk, data)
        return FilterOutcome("kept", data, 0, "", redacted=walk.redacted, structured=True)
    named = _namespaces_named(text, data) | set(known_namespaces) | set((ips or {}).values())
    walk = _Walk(allowed, frozenset(n for n in named if n not in allowed), ips)
    status = "keep"
    if isinstance(data, dict):
        status = walk.record(data, False)
        if status == "drop":
            return FilterOutcome("withheld", None, 0, FOREIGN_TOP_MESSAGE.format(scope=scope.describe()),
                                 structured=True)
    elif isinstance(data, list):
        status = walk.clean_list(data, False)
    elif isinstance(data, str) and walk.foreign_ref(data):
        return FilterOutcome("withheld", None, 0, FOREIGN_TOP_MESSAGE.format(scope=scope.describe()),
                             structured=True)
    if status == "unresolved" or walk.unresolved:
        n = len(walk.unresolved)
        return FilterOutcome(
            "withheld", None, 0,
            UNRESOLVED_MESSAGE.format(n=n, es="" if n == 1 else "es", scope=scope.describe()),
            unresolved_ips=frozenset(walk.unresolved), structured=True,
        )
    if walk.removed:
        plural = "s" if walk.removed != 1 else ""
        return FilterOutcome(
            "filtered", data, walk.removed,
            f"{walk.removed} record{plural} from namespaces outside your access removed",
            redacted=walk.redacted, structured=True,
        )
    return FilterOutcome("kept", data, 0, "", redacted=walk.redacted, structured=True)


def _redact_only(walk: _Walk, data: Any) -> int:
    """Structured redaction for cluster-wide callers (nothing is filtered)."""
    before = walk.redacted
    stack = [data]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            for k, v in node.items():
                if type(v) is str:
                    if not isinstance(k, str):
                        continue
                    c = _key_class(k)
                    if c & _SECRET and v and v != REDACTED:
                        node[k] = REDACTED
                        walk.redacted += 1
                    elif c & _VALUE:
                        name = node.get("name")
                        if type(name) is str and v and v != REDACTED and is_secret_env_name(name):
                            node[k] = REDACTED
                            walk.redacted += 1
                elif type(v) in (dict, list):
                    stack.append(v)
        elif type(node) is list:
            stack.extend(x for x in node if type(x) in (dict, list))
    return walk.redacted - before


def dump_result(data: Any) -> str:
    """The text of a filtered structured result (compact JSON, non-ASCII kept)."""
    if isinstance(data, str):
        return data
    return json.dumps(data, separators=(",", ":"), default=str)


def filter_result(
    text: str | bytes,
    scope: Scope,
    *,
    pinned: bool = False,
    max_bytes: int | None = None,
    ips: Mapping[str, str] | None = None,
    known_namespaces: Iterable[str] = (),
) -> FilterOutcome:
    """Filter one tool result for ``scope``; then redact. The outcome's ``data`` is the parsed
    value (or the text), ``text`` what a model may read.

    ``pinned``: the call's arguments limited it to namespaces in scope (see
    ``pinned_by_arguments``); only then may unstructured text pass. ``max_bytes``: results larger
    than this are withheld as too large to check (fail closed). ``ips``: IP → owning namespace.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if max_bytes is not None and len(text) > max_bytes and not scope.cluster_wide:
        return FilterOutcome("withheld", None, 0, TOO_LARGE_MESSAGE.format(limit=max_bytes, scope=scope.describe()))
    text = strip_markers(text)
    data, structured = parse_result(text)
    if not structured:
        if not (scope.cluster_wide or pinned):
            return FilterOutcome("withheld", None, 0, NARROW_MESSAGE.format(scope=scope.describe()))
        shown, n = redact_text(text)
        return FilterOutcome("kept", shown, 0, "", redacted=n, text=shown)
    out = filter_data(data, scope, ips=ips, known_namespaces=known_namespaces, text=text, in_place=True)
    if out.outcome == "withheld":
        return out
    shown = dump_result(out.data)
    shown, n = redact_text(shown)
    data = json.loads(shown) if n else out.data
    return FilterOutcome(
        out.outcome, data, out.removed, out.reason, redacted=out.redacted + n, structured=True, text=shown
    )
