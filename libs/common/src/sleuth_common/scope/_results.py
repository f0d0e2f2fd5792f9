"""Steps 2-4 of the scope filter (DESIGN §2): keep what is provably the caller's, withhold the
rest, then redact. An allowlist that fails closed; it reports counts, never names.

Input: JSON, YAML or text (``_parse``); a result that is a quoted string holding a document
(double-encoded JSON) is that document; one that broke a parsing limit is withheld. Cluster-wide
callers get everything, redacted (Secret ``data``/``stringData`` values included). For everyone
else (the walk is in ``_walk``, the key and shape tables in ``_keys``, names in strings in
``_names``):

**Records.** A *record* is the top-level value, each element of a list, and each entry of a map
of records (a dict whose keys are all shaped like object names — with a ``-``, ``.`` or digit —
and whose values are all objects: ``{"api-0": {...}, "web-1": {...}}``, judged entry by entry).
A record's *own content* is its fields and nested objects, not its nested lists or record maps
(those hold records of their own). A record is kept only when it is attributed to a namespace
in scope, in one of three ways:

1. *By what its own content names*: a key containing ``namespace`` (``metadata.namespace``,
   ``involvedObject.namespace``, ``namespace_name``, ``k8s_namespace`` …) or a weak key (``ns``,
   ``project``, ``tenant``, ``*_ns``; inside ``labels``/``annotations``/selectors/Prometheus
   ``metric``/Loki ``stream`` only when the value is a namespace the call knows), holding a
   string, a list of strings or an object with a ``name``; a string shaped ``ns/name``,
   ``Kind/ns/name`` (kube-mcp's subgraph ids), ``…/namespaces/ns/…`` or a cluster DNS name
   (``svc.ns.svc[.cluster.local]``, ``ip.ns.pod.cluster.local``), except ``ns/name`` readings of
   images, URLs and paths; a map key shaped ``ns/name``; the keys of a map keyed by namespace
   (``by_namespace``/``*namespaces`` keys, a dict whose keys are all namespaces the document, the
   inventory, ``known_namespaces`` or ``ips`` name, or a dict of same-typed values keyed by
   DNS labels one of which is the caller's: its other keys are dropped); a row's cell under a
   ``meta.k8s.io`` Table's ``Namespace`` column, or the row's ``object``; an IP under an
   IP-shaped key (``podIP``, ``ip``, ``address``, ``instance``, ``src``/``dst`` …, or a map key)
   resolved through ``ips`` — pod IPs from Pod objects, so a node's IP attributes nothing. A
   namespace outside the scope anywhere in a record's own content drops the record — in any of
   those carriers, or as a whole value equal to a namespace the call knows is not the caller's
   (outside label/annotation/selector maps, where it may be the caller's own reference); a map
   entry keyed by a foreign namespace or ``ns/name`` is dropped. *Peer-shaped* records (keys starting
   ``source``/``src``/``from``/``client``/``local`` and ``destination``/``dst``/``to``/``server``/
   ``remote``/``peer``) are kept when the caller owns either side and their own part names no
   foreign namespace.
2. *By inheritance*: records inside a kept record inherit its attribution; top-level records
   inherit the call's pinning (``pinned``/``pinned_namespaces``: the arguments limited the call
   to namespaces in scope; pins outside the scope are ignored, and naming only such pins
   nothing). A foreign namespace in its own content still drops an inherited record. A record
   attributed by the pin alone is also dropped when a value equals a namespace outside the scope
   the call knows, when a key or non-free-text value names a foreign object or namespace
   (``Scope.foreign_names`` and the foreign namespaces the document names), or when its ``name``
   is a foreign object's; and a peer side that is only an IP must resolve.
3. *As a cluster-scoped object the caller may list*: a record whose ``kind`` (or its Table row
   ``object``'s, or its list's: ``NodeList`` items …) is cluster-scoped (``Node``,
   ``PersistentVolume``, ``StorageClass``, ``ClusterRole``, ``CustomResourceDefinition``, any
   ``Cluster*`` …), that kube-mcp marks ``"cluster_scoped": true``, that has Node-only fields
   (``nodeInfo``, ``kubeletVersion``, ``podCIDR``, ``providerID``, ``unschedulable`` …), or that
   is a server object (``metadata`` with ``uid``/``resourceVersion``/``creationTimestamp``)
   without a namespace (its resource read from its shape: a PV's ``claimRef``, a
   StorageClass's ``provisioner`` …) is kept only when ``Scope.cluster_kinds`` holds its
   resource (``nodes``, ``persistentvolumes`` …), whatever namespace or IP it names (a PV bound
   to a claim in scope included); kept, it is the caller's to read whole. A ``Namespace`` object
   is kept when its name is in scope or the caller may list ``namespaces``; named inside another
   record, a Namespace is a namespace carrier.

**Secrets.** A ``kind: Secret`` object (also kind-less under ``secrets`` or in a ``SecretList``,
and a Secret written as YAML/JSON inside kept text) is kept only when the namespace it is
attributed to is in ``Scope.secret_namespaces``; its ``data``/``stringData`` values are always
replaced, keys kept. Names of Secrets (``secretName``, ``secretKeyRef.name``, a ServiceAccount's
``secrets`` references, kube-mcp's ``{"secret": "checkout-api-db"}``) are not credentials: the
walk keeps them.

**Envelopes.** An unattributed object that is no Kubernetes object and holds records is an
envelope: it is kept around what survives of them, which are judged as records of their own
(unattributed: only their own carriers can attribute them); its own string fields other than
structural ones (``kind``, ``apiVersion``, ``status``, ``type``, ``resourceVersion`` …, and never
a foreign name) are replaced by ``VALUE_WITHHELD``. The top-level value (or a document in a
string) is an envelope when it holds anything (``{"kind": "List", "items": …}``, Prometheus'
``{"status", "data": {"result": …}}``, MCP ``{"content": […]}``, a Table); deeper, only when it
holds objects or lists in a list, a record map, JSON or text. An unattributed Table keeps only
header-shaped column names. A string in a list is kept when the list's record is attributed
(unless it names a foreign namespace, ``ns/name``, DNS name or IP owner, or — pinned only — a
foreign object), or when it is an allowed namespace or names one; otherwise withheld (so a
label-value list from an unpinned call keeps only the caller's namespaces).

**Text.** A string that starts with ``{``/``[`` and parses is filtered as a document of its own,
inheriting the attribution of where it sits (at most ``MAX_ENCODINGS`` levels), then re-encoded
as compact JSON. A multi-line string is text: kept only when the call was pinned, else replaced
by ``TEXT_WITHHELD``. Kept text — a pinned text result, multi-line strings, single-line strings
under free-text keys (``message``, ``note``, ``log``, ``stdout``, ``values`` …) — is scanned for
names of objects and namespaces outside the scope (``Scope.foreign_names`` and the foreign
namespaces the document names, on token boundaries) and for namespaces it names itself — DNS
names, API paths, ``Kind/ns/name``, ``in namespace x``, ``-n x``, ``ns=x`` — outside the
scope; a line (or single-line value) naming one is replaced by a placeholder.

**Withheld, narrowly.** What cannot be attributed is withheld — the smallest enclosing record, a
value, a line — and counted by cause in ``reason`` ("N records whose namespace could not be
established were withheld", "… cluster-scoped objects you may not list …", "… Secrets you may
not read …", "… text values not limited to your namespaces …", "… lines naming objects outside
your namespaces …"). An IP missing from ``ips`` withholds only the record whose attribution
hangs on it (``unresolved_ips`` lists them, the rest is returned as ``filtered``; inside an
attributed record an unknown IP, such as a pod's ``hostIP``, needs no resolution). The result is
``withheld`` as a whole only when its top-level object is dropped or withheld, or when nothing
attributable is left and something was withheld for a cause other than a foreign namespace.
Deeper than ``MAX_DEPTH`` levels is withheld as too deeply nested; ``filter_result`` never
raises (an unexpected failure withholds the result).

Speed: one pass over the parsed value, in place, with per-key classification cached in dicts
(no regex per node); whole-text scans (redaction, markers) run at C speed on the serialized text.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from sleuth_common.redact import REDACTED, is_secret_env_name, redact_text
from sleuth_common.scope._keys import (
    OBJECT_NAME,
    SECRET,
    SECRET_KINDS,
    SECRET_TEXT,
    SECRETNAME,
    TEXT,
    VALUE,
    key_class,
    redact_secret_data,
)
from sleuth_common.scope._markers import strip_markers
from sleuth_common.scope._model import FilterOutcome, Scope
from sleuth_common.scope._parse import REFUSED_MESSAGE, parse_checked, parse_result
from sleuth_common.scope._walk import (
    KEPT,
    MAX_DEPTH,
    MAX_ENCODINGS,
    PIN,
    PINNED_ANY,
    TEXT_WITHHELD,
    V_CLUSTER,
    V_DEEP,
    V_FOREIGN,
    V_SECRET,
    V_UNATTRIBUTED,
    V_UNRESOLVED,
    VALUE_WITHHELD,
    _Walk,
)

__all__ = [
    "NARROW_MESSAGE",
    "TEXT_WITHHELD",
    "VALUE_WITHHELD",
    "dump_result",
    "filter_data",
    "filter_result",
    "parse_result",  # re-exported
]

log = logging.getLogger(__name__)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

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
UNCHECKABLE_MESSAGE = (
    "This result was withheld: it is {what}, so it cannot be checked. Narrow the query "
    "(your namespaces: {scope})."
)
NARROW_HINT = "Narrow the query with a namespace argument to see more (your namespaces: {scope})."


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _reason_parts(walk: _Walk) -> tuple[list[str], bool]:
    """What was removed, by cause (counts only), and whether any cause was other than a foreign
    namespace."""
    c = walk.counts
    parts: list[str] = []
    foreign = c[V_FOREIGN] + walk.foreign_values
    if foreign:
        parts.append(_plural(foreign, "record", "records") + " from namespaces outside your access removed")
    unattributed = c[V_UNATTRIBUTED] + walk.values_withheld
    if unattributed:
        parts.append(
            _plural(unattributed, "record whose namespace could not be established was withheld",
                    "records whose namespace could not be established were withheld")
        )
    if c[V_UNRESOLVED]:
        parts.append(
            _plural(c[V_UNRESOLVED], "record whose owner hangs on an IP address that could not be resolved was withheld",
                    "records whose owner hangs on IP addresses that could not be resolved were withheld")
        )
    if c[V_CLUSTER]:
        parts.append(
            _plural(c[V_CLUSTER], "cluster-scoped object you may not list was withheld",
                    "cluster-scoped objects you may not list were withheld")
        )
    if c[V_SECRET]:
        parts.append(_plural(c[V_SECRET], "Secret you may not read was withheld", "Secrets you may not read were withheld"))
    if walk.text_withheld:
        parts.append(
            _plural(walk.text_withheld, "text value not limited to your namespaces was withheld",
                    "text values not limited to your namespaces were withheld")
        )
    if walk.lines_withheld:
        parts.append(
            _plural(walk.lines_withheld, "line naming objects outside your namespaces was withheld",
                    "lines naming objects outside your namespaces were withheld")
        )
    if c[V_DEEP]:
        parts.append(
            _plural(c[V_DEEP], "record too deeply nested to check was withheld",
                    "records too deeply nested to check were withheld")
        )
    other = bool(unattributed or c[V_UNRESOLVED] or c[V_CLUSTER] or c[V_SECRET] or walk.text_withheld or c[V_DEEP])
    return parts, other


def _removed(walk: _Walk) -> int:
    return (sum(walk.counts) + walk.foreign_values + walk.values_withheld + walk.text_withheld
            + walk.lines_withheld)


# Each starts with a literal, so the regex engine skips ahead at memory speed.
_NAMED_NS = re.compile(
    r"amespace[a-zA-Z_\-]*[\"']?[ \t]*[:=][ \t]*[\"']?([a-zA-Z0-9](?:[-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)\b"
)
_NAMED_NS_SHORT = re.compile(r"\"ns\"[ \t]*:[ \t]*\"([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)\"")


def _namespaces_named(text: str | None, data: Any) -> set[str]:
    """Namespaces the document names under namespace keys (a fast scan of the text)."""
    if text is None:
        text = json.dumps(data, default=str)
    found = {n.lower() for n in _NAMED_NS.findall(text)}
    if '"ns"' in text:
        found.update(_NAMED_NS_SHORT.findall(text))
    return found


def _pins(scope: Scope, pinned: bool, pinned_namespaces: Iterable[str]) -> tuple[bool, frozenset[str]]:
    """The call's pinning: a call pinned to any namespace outside the scope is not pinned at all
    (its text could be that namespace's). ``pinned`` with no namespaces named is the caller's
    word that the arguments named only the scope's namespaces (``pinned_by_arguments``)."""
    given = frozenset(n for n in pinned_namespaces if isinstance(n, str) and n)
    pins = frozenset(n for n in given if n in scope.namespaces)
    if given and pins != given:
        return False, frozenset()
    return (pinned or bool(pins)), pins


def filter_data(
    data: Any,
    scope: Scope,
    *,
    ips: Mapping[str, str] | None = None,
    known_namespaces: Iterable[str] = (),
    text: str | None = None,
    in_place: bool = False,
    pinned: bool = False,
    pinned_namespaces: Iterable[str] = (),
) -> FilterOutcome:
    """Filter already-parsed JSON/YAML for ``scope`` (see the module docstring).

    ``ips`` maps IP → owning namespace (missing = unresolvable). ``known_namespaces``: other
    namespaces of the cluster, so mentions of them are recognised. ``text``: the text ``data``
    was parsed from (saves a scan). ``in_place``: ``data`` may be modified (else it is copied).
    ``pinned``/``pinned_namespaces``: the call's arguments limited it to these namespaces in
    scope (records naming none are attributed to them; text may pass). Credential-shaped values
    are redacted here only where the structure says so (secret keys, env name/value pairs, Secret
    data); ``filter_result`` also redacts the serialized text. Never raises.
    """
    try:
        return _filter_data(data, scope, ips, known_namespaces, text, in_place, pinned, pinned_namespaces)
    except RecursionError:
        return _uncheckable("too deeply nested", scope)
    except Exception:  # the filter's contract is to never raise: fail closed instead
        log.exception("scope filter failed on a result; withheld")
        return _uncheckable("in a shape the filter could not read", scope)


def _uncheckable(what: str, scope: Scope) -> FilterOutcome:
    return FilterOutcome("withheld", None, 0, UNCHECKABLE_MESSAGE.format(what=what, scope=scope.describe()),
                         structured=True)


def _filter_data(
    data: Any,
    scope: Scope,
    ips: Mapping[str, str] | None,
    known_namespaces: Iterable[str],
    text: str | None,
    in_place: bool,
    pinned: bool,
    pinned_namespaces: Iterable[str],
) -> FilterOutcome:
    if not in_place:
        data = json.loads(json.dumps(data, default=str))
    if scope.cluster_wide:
        redacted = _redact_only(data)
        return FilterOutcome("kept", data, 0, "", redacted=redacted, structured=True)
    pinned, pins = _pins(scope, pinned, pinned_namespaces)
    fnames = scope.foreign_names
    named = _namespaces_named(text, data) | {str(n) for n in known_namespaces} | set((ips or {}).values())
    if fnames is not None:
        named |= fnames.namespaces
    walk = _Walk(scope, ips, frozenset(n for n in named if n not in scope.namespaces), pinned, pins)
    ctx: str | None = None
    if pinned:
        ctx = PIN + next(iter(pins)) if len(pins) == 1 else PINNED_ANY
    described = scope.describe()
    if isinstance(data, dict):
        verdict = walk.record(data, ctx, 0, top=True)
        if verdict == V_FOREIGN:
            return FilterOutcome("withheld", None, 0, FOREIGN_TOP_MESSAGE.format(scope=described), structured=True)
        if verdict not in KEPT:
            return _withheld(walk, scope)
    elif isinstance(data, list):
        walk.clean_list(data, ctx, 0, 0)
    elif isinstance(data, str):
        shown = walk.string_item(data, ctx, TEXT, 0)
        if shown is None or shown in (VALUE_WITHHELD, TEXT_WITHHELD):
            if walk.foreign_values:
                return FilterOutcome("withheld", None, 0, FOREIGN_TOP_MESSAGE.format(scope=described),
                                     structured=True)
            return _withheld(walk, scope)
        data = shown
    removed = _removed(walk)
    if not removed:
        return FilterOutcome("kept", data, 0, "", redacted=walk.redacted, structured=True)
    parts, other = _reason_parts(walk)
    if other and walk.kept == 0:
        return _withheld(walk, scope)
    reason = "; ".join(parts)
    if other:
        reason += ". " + NARROW_HINT.format(scope=described)
    return FilterOutcome(
        "filtered", data, removed, reason, redacted=walk.redacted,
        unresolved_ips=frozenset(walk.unresolved), structured=True,
    )


def _withheld(walk: _Walk, scope: Scope) -> FilterOutcome:
    described = scope.describe()
    parts, _other = _reason_parts(walk)
    only_unresolved = walk.unresolved and walk.counts[V_UNRESOLVED] and len(parts) == 1
    if only_unresolved:
        n = len(walk.unresolved)
        reason = UNRESOLVED_MESSAGE.format(n=n, es="" if n == 1 else "es", scope=described)
    else:
        reason = "This result was withheld: " + ("; ".join(parts) or "nothing in it could be attributed")
        reason += ". " + NARROW_HINT.format(scope=described)
    return FilterOutcome("withheld", None, 0, reason, unresolved_ips=frozenset(walk.unresolved), structured=True)


def _redact_only(data: Any) -> int:
    """Structured redaction for cluster-wide callers (nothing is filtered; Secret data still
    goes)."""
    redacted = 0
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, secret_items = stack.pop()
        if type(node) is dict:
            kind = node.get("kind")
            is_secret = secret_items or (type(kind) is str and kind in SECRET_KINDS)
            if is_secret:
                redacted += redact_secret_data(node)
            items_are_secrets = type(kind) is str and kind in ("SecretList", "Secret")
            for k, v in node.items():
                if type(v) is str:
                    if not isinstance(k, str) or not v or v == REDACTED:
                        continue
                    if "Secret" in v and SECRET_TEXT.search(v):
                        inner = _redacted_secret_text(v)
                        if inner is not None:
                            node[k], n = inner
                            redacted += n
                            continue
                    c = key_class(k)
                    if c & SECRET and not (c & SECRETNAME and OBJECT_NAME.match(v)):
                        node[k] = REDACTED
                        redacted += 1
                    elif c & VALUE:
                        name = node.get("name")
                        if type(name) is str and is_secret_env_name(name):
                            node[k] = REDACTED
                            redacted += 1
                elif type(v) is dict:
                    stack.append((v, False))
                elif type(v) is list:
                    secret_list = (items_are_secrets and k == "items") or (isinstance(k, str) and k.lower() == "secrets")
                    stack.append((v, secret_list))
        elif type(node) is list:
            stack.extend((x, secret_items) for x in node if type(x) in (dict, list))
    return redacted


def _redacted_secret_text(value: str) -> tuple[str, int] | None:
    """A Secret written out as JSON/YAML inside a string, its data redacted (re-encoded as JSON)."""
    parsed = parse_checked(value)
    if not parsed.structured or parsed.prose or not isinstance(parsed.data, dict | list):
        return None
    n = _redact_only(parsed.data)
    return (json.dumps(parsed.data, separators=(",", ":"), ensure_ascii=False), n) if n else None


def dump_result(data: Any) -> str:
    """The text of a filtered structured result (compact JSON, non-ASCII kept)."""
    if isinstance(data, str):
        return data
    try:
        return json.dumps(data, separators=(",", ":"), default=str)
    except TypeError:  # keys JSON cannot hold (YAML dates, tuples): as text
        return json.dumps(_string_keys(data), separators=(",", ":"), default=str)


def _string_keys(node: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, dict):
        return {(k if isinstance(k, str | int | float | bool) or k is None else str(k)): _string_keys(v, depth + 1)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_string_keys(v, depth + 1) for v in node]
    return node


def _unwrap_json_string(text: str) -> str:
    """A result that is a quoted string holding a document (double-encoded JSON, or JSON in a
    YAML-quoted scalar) is that document."""
    for _ in range(MAX_ENCODINGS):
        s = text.strip()
        if len(s) < 2 or s[0] not in "\"'" or s[-1] != s[0]:
            break
        try:
            inner = json.loads(s) if s[0] == '"' else yaml.load(s, Loader=_YAML_LOADER)
        except (ValueError, yaml.YAMLError):
            break
        if not isinstance(inner, str) or inner.lstrip()[:1] not in ("{", "[", '"', "'"):
            break
        text = inner
    return text


def filter_result(
    text: str | bytes,
    scope: Scope,
    *,
    pinned: bool = False,
    max_bytes: int | None = None,
    ips: Mapping[str, str] | None = None,
    known_namespaces: Iterable[str] = (),
    pinned_namespaces: Iterable[str] = (),
) -> FilterOutcome:
    """Filter one tool result for ``scope``; then redact. The outcome's ``data`` is the parsed
    value (or the text), ``text`` what a model may read. Never raises.

    ``pinned``: the call's arguments limited it to namespaces in scope (see
    ``pinned_by_arguments``); only then may unstructured text pass, and records naming no
    namespace are attributed to ``pinned_namespaces`` (the namespaces the arguments named; those
    outside the scope are ignored, and naming only such pins nothing). ``max_bytes``: results
    larger than this are withheld as too large to check (fail closed). ``ips``: IP → owning
    namespace. ``known_namespaces``: other namespaces of the cluster.
    """
    try:
        return _filter_result(text, scope, pinned, max_bytes, ips, known_namespaces, pinned_namespaces)
    except RecursionError:
        return _uncheckable("too deeply nested", scope)
    except Exception:  # the filter's contract is to never raise: fail closed instead
        log.exception("scope filter failed on a result; withheld")
        return _uncheckable("in a shape the filter could not read", scope)


def _filter_result(
    text: str | bytes,
    scope: Scope,
    pinned: bool,
    max_bytes: int | None,
    ips: Mapping[str, str] | None,
    known_namespaces: Iterable[str],
    pinned_namespaces: Iterable[str],
) -> FilterOutcome:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    elif not isinstance(text, str):
        text = json.dumps(text, default=str)
    if max_bytes is not None and len(text) > max_bytes and not scope.cluster_wide:
        return FilterOutcome("withheld", None, 0, TOO_LARGE_MESSAGE.format(limit=max_bytes, scope=scope.describe()))
    text = _unwrap_json_string(strip_markers(text))
    parsed = parse_checked(text, depth_bounded_by_caller=True)  # the walk limits depth itself
    if parsed.refused:  # looked structured but broke a parsing limit: never shown as text
        return FilterOutcome("withheld", None, 0, REFUSED_MESSAGE.format(refused=parsed.refused, scope=scope.describe()))
    data = parsed.data
    if not parsed.structured:
        return _filter_text(text, scope, pinned, pinned_namespaces, ips, known_namespaces)
    out = filter_data(
        data, scope, ips=ips, known_namespaces=known_namespaces, text=text, in_place=True, pinned=pinned,
        pinned_namespaces=pinned_namespaces,
    )
    if out.outcome == "withheld":
        return out
    pre = _redact_structures(out.data)
    shown = dump_result(out.data)
    shown, n = redact_text(shown)
    n += pre
    data = json.loads(shown) if n else out.data
    return FilterOutcome(
        out.outcome, data, out.removed, out.reason, redacted=out.redacted + n,
        unresolved_ips=out.unresolved_ips, structured=True, text=shown,
    )


_NAME_SPELLINGS = frozenset(
    {"key", "Key", "KEY", "Name", "NAME", "variable", "Variable", "env", "Env", "envName", "field", "Field",
     "parameter", "Parameter", "param", "Param", "setting", "Setting"}
)  # lowercase "name" (with "value") is the walk's own env rule
_ARGV_FLAGS = ("-p", "-a", "-u", "-P", "--pass", "--token", "--secret", "--auth", "--key", "--cred", "--api-key")
_ARGV_TOOLS = frozenset(
    {"mysql", "mysqldump", "mysqladmin", "mariadb", "sshpass", "htpasswd", "redis-cli", "curl", "login", "set"}
)
_VALUE_FIELDS = frozenset({"value", "val", "secret", "data", "setting_value"})
_ARGV_KEYS = frozenset({"args", "command", "argv", "cmd", "cmdline", "entrypoint", "arguments"})


def _redact_structures(data: Any) -> int:
    """Credentials the structure gives away and the text rules cannot see, in the kept data:
    ``{"Key": "DB_PASSWORD", "Value": ...}`` pairs under other spellings than the walk's
    ``name``/``value``, an argv list (``["mysql", "-uroot", "-phunter2"]``) judged as the
    command line it is, and every value under a Secret's ``data``/``stringData`` whatever its
    shape (a list of key/value items). One pass, cheap per node."""
    n = 0
    stack: list[Any] = [data]
    names = _NAME_SPELLINGS
    argv_keys = _ARGV_KEYS
    while stack:
        node = stack.pop()
        if type(node) is dict:
            pair = False
            for k, v in node.items():
                t = type(v)
                if t is dict:
                    stack.append(v)
                elif t is list:
                    if k in argv_keys and _argv_worth_a_look(v):
                        n += _redact_argv(v)
                    else:
                        stack.append(v)
                elif t is str and k in names and is_secret_env_name(v):
                    pair = True
            if pair:
                n += _redact_pair(node)
            if node.get("kind") == "Secret":
                for key in ("data", "stringData"):
                    if type(node.get(key)) in (dict, list):
                        n += _redact_all(node[key])
        elif type(node) is list:
            stack.extend(x for x in node if type(x) in (dict, list))
    return n


def _redact_pair(node: dict[Any, Any]) -> int:
    n = 0
    for k, v in list(node.items()):
        if isinstance(k, str) and k.lower() in _VALUE_FIELDS and type(v) in (str, int, float) \
                and v not in (REDACTED, ""):
            node[k] = REDACTED
            n += 1
    return n


def _argv_worth_a_look(argv: list[Any]) -> bool:
    for w in argv:
        if type(w) is str and (w.startswith(_ARGV_FLAGS) or w in _ARGV_TOOLS or "://" in w or "@" in w):
            return True
    return False


def _redact_all(node: Any) -> int:
    n = 0
    stack = [node]
    while stack:
        cur = stack.pop()
        items = cur.items() if type(cur) is dict else enumerate(cur)
        for k, v in list(items):
            if type(v) in (dict, list):
                stack.append(v)
            elif type(v) in (str, int, float) and v != REDACTED and v != "" and not (
                type(cur) is dict and str(k).lower() in ("key", "name")
            ):
                cur[k] = REDACTED
                n += 1
    return n


def _redact_argv(argv: list[Any]) -> int:
    """One argv list as the command line it is: ``-p`` and its value are separate items."""
    words = [w for w in argv if type(w) is str]
    if len(words) != len(argv) or len(words) < 2 or any(" " in w or not w for w in words):
        return 0  # items with spaces are judged as text on their own
    joined = " ".join(words)
    shown, count = redact_text(joined)
    if not count:
        return 0
    parts = shown.split(" ")
    if len(parts) != len(words):  # the placeholder spans items: redact every changed one
        changed = [i for i, w in enumerate(words) if w not in shown]
    else:
        changed = [i for i, (a, b) in enumerate(zip(words, parts, strict=True)) if a != b]
    for i in changed:
        argv[i] = REDACTED
    return len(changed)


def _filter_text(
    text: str,
    scope: Scope,
    pinned: bool,
    pinned_namespaces: Iterable[str],
    ips: Mapping[str, str] | None,
    known_namespaces: Iterable[str],
) -> FilterOutcome:
    """Unstructured text: kept only from a pinned call (or for a cluster-wide caller), without
    the lines that name objects outside the scope."""
    if scope.cluster_wide:
        shown, n = redact_text(text)
        return FilterOutcome("kept", shown, 0, "", redacted=n, text=shown)
    pinned, pins = _pins(scope, pinned, pinned_namespaces)
    if not pinned:
        return FilterOutcome("withheld", None, 0, NARROW_MESSAGE.format(scope=scope.describe()))
    named = _namespaces_named(text, None) | {str(n) for n in known_namespaces} | set((ips or {}).values())
    if scope.foreign_names is not None:
        named |= scope.foreign_names.namespaces
    walk = _Walk(scope, ips, frozenset(n for n in named if n not in scope.namespaces), True, pins)
    kept, walk.lines_withheld = walk.kept_text(text)
    if walk.counts[V_CLUSTER]:
        return _withheld(walk, scope)
    shown, n = redact_text(kept)
    removed = _removed(walk)
    if removed:
        reason = "; ".join(_reason_parts(walk)[0])
        return FilterOutcome("filtered", shown, removed, reason, redacted=n, text=shown)
    return FilterOutcome("kept", shown, 0, "", redacted=n, text=shown)
