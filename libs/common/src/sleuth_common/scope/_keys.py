"""How the scope filter's walker reads keys and object shapes (see ``_results`` for the rules).

Every mapping key gets a class (bit flags: names a namespace, holds a credential, a peer side,
free text, a label map …), computed once per distinct key string and cached; object kinds and
shapes say when a record is a Secret, a namespaced kind, or a cluster-scoped object without a
``kind`` (a PV by its ``claimRef``, a Namespace by its ``kubernetes.io/metadata.name`` label …).
"""

from __future__ import annotations

import re
from typing import Any

from sleuth_common.redact import REDACTED, is_secret_key
from sleuth_common.scope._names import COMMON_NAMESPACE_WORDS

# -- key classes (bit flags), cached per key string --------------------------------------------
NS = 1 << 0  # the value names a namespace (a string, a list of them, an object with a name)
NSMAP = 1 << 1  # a dict value is keyed by namespace
SECRET = 1 << 2  # the value is a credential
SRC = 1 << 3  # peer side: source
DST = 1 << 4  # peer side: destination
IP = 1 << 5  # the value may be an IP address
KIND = 1 << 6  # "kind"
VALUE = 1 << 7  # "value" (env name/value pairs)
OPAQUE = 1 << 8  # the value has slashes of its own (an image, a URL, a path): never ns/name
WNS = 1 << 9  # weak namespace key (ns, project, tenant …)
TEXT = 1 << 10  # free text (message, note, log, stdout …)
LABELS = 1 << 11  # a label/annotation/selector map (weak keys count only with known values)
NODE = 1 << 12  # a field only Node objects have
STRUCT = 1 << 13  # a structural field an envelope may keep (kind, apiVersion, status …)
NAMEKEY = 1 << 14  # shaped like an object name (a key of a map of records)
SECRETS = 1 << 15  # "secrets": a list of Secret objects (or references to them)
REFS = 1 << 16  # a list of references (ownerReferences …): kinds there are not objects
COLDEFS = 1 << 17  # a Table's columnDefinitions (schema: kept, or reduced to headers)
SECRETNAME = 1 << 18  # "secret": may hold the name of a Secret (kube-mcp's env refs)
OBJKEY = 1 << 19  # kind, metadata, object, cluster_scoped: the record may be a Kubernetes object
LISTCTX = 1 << 23  # items, rows, secrets …: the list's elements' kind depends on where it sits
# per call (never in the global cache)
DROP = 1 << 20  # the key itself names a foreign namespace / ns/name → drop the entry
NSKEY = 1 << 21  # the key is a namespace the call knows
ALLOWKEY = 1 << 22  # the key is an allowed namespace or an allowed ns/name ref

PEER = SRC | DST
STRSPECIAL = NS | WNS | SECRET | KIND
STRSLOW = STRSPECIAL | VALUE
KEYSPECIAL = DROP | NSKEY | ALLOWKEY | NODE | OBJKEY | PEER

_OPAQUE_KEYS = frozenset(
    {"image", "images", "imageid", "imagename", "imageref", "repository", "repo", "registry", "url", "urls",
     "uri", "href", "link", "path", "paths", "mountpath", "subpath", "file", "filename", "command",
     "args", "mediatype", "contenttype", "content_type", "media_type", "selflink", "requesturi"}
)
_WEAK_NS_KEYS = frozenset(
    {"ns", "project", "tenant", "project_name", "projectname", "tenant_name", "tenantname", "k8s_ns",
     "kube_ns", "exported_ns"}
)
_TEXT_KEYS = frozenset(
    {"message", "messages", "msg", "note", "notes", "description", "log", "logs", "line", "lines",
     "text", "content", "stdout", "stderr", "output", "result", "error", "err", "errors", "detail",
     "details", "summary", "body", "comment", "values", "entries", "events", "data"}
)
_TEXT_SUFFIXES = ("message", "messages", "_msg", "_log", "_logs", "output", "_text", "description",
                  "summary", "stdout", "stderr")
_LABEL_KEYS = frozenset(
    {"labels", "matchlabels", "nodeselector", "annotations", "selector", "podlabels", "commonlabels",
     "extralabels", "metric", "stream", "externallabels", "discoveredlabels"}
)
_NODE_KEYS = frozenset(
    {"nodeinfo", "node_info", "kubeletversion", "kubelet_version", "podcidr", "podcidrs", "providerid",
     "kernelversion", "osimage", "containerruntimeversion", "kubeproxyversion", "unschedulable"}
)
_STRUCT_KEYS = frozenset(
    {"kind", "apiversion", "resourceversion", "continue", "selflink", "status", "resulttype", "type",
     "format", "version", "encoding", "phase", "state", "code", "cluster", "schema_version", "iserror"}
)
_REF_KEYS = frozenset(
    {"ownerreferences", "ownerrefs", "owners", "owner_references", "refs", "references", "subjects",
     "related", "relatedobjects"}
)
_NAME_KEY = re.compile(r"^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$")
_SIDE_SRC = re.compile(r"^(?:source|src|from|client|local|origin)(?:$|[_\-.A-Z0-9])")
_SIDE_DST = re.compile(r"^(?:destination|dest|dst|to|server|remote|peer)(?:$|[_\-.A-Z0-9])")
_IP_KEY = re.compile(
    r"(?i)(?:^|[_\-.a-z])(?:ip|ips|ipv4|ipv6|addr|address|addresses|host|hostip)(?:$|[_\-.A-Z0-9s])|^ip|^instance$"
)
# "secret": "checkout-api-db" (a Secret's name in kube-mcp's env refs) — not a credential:
# lower-case words joined by - or ., no letter/digit mixing.
OBJECT_NAME = re.compile(r"^[a-z]+(?:[-.][a-z]+)+(?:-[0-9]+)?$")

_KEY_CACHE: dict[str, int] = {}


def _classify_key(key: str) -> int:
    k = key.lower()
    c = 0
    if "namespace" in k and not k.endswith(("selector", "namespaced")):
        c |= NS
    elif k in _WEAK_NS_KEYS or k.endswith(("_ns", "-ns", ".ns")):
        c |= WNS
    if k.endswith("namespaces") or k.startswith(("by_namespace", "per_namespace", "bynamespace", "pernamespace")):
        c |= NSMAP
    if is_secret_key(key):
        c |= SECRET
        if k == "secret":
            c |= SECRETNAME
    if _SIDE_SRC.match(key):
        c |= SRC
    elif _SIDE_DST.match(key):
        c |= DST
    if _IP_KEY.search(key) or c & PEER:
        c |= IP
    if k == "kind":
        c |= KIND
    if k == "value":
        c |= VALUE
    if k in _OPAQUE_KEYS or k.endswith(("image", "images", "_url", "url", "_path", "uri")):
        c |= OPAQUE
    if "seccomp" in k or "apparmor" in k or k == "localhostprofile":
        # Security profiles: "runtime/default", "docker/default", "localhost/<file>" are profile
        # names, not namespace/name references (reading them as such withheld every pod that
        # carries the legacy seccomp annotation, as OpenShift's restricted SCC sets it).
        c |= OPAQUE
    if k in _TEXT_KEYS or k.endswith(_TEXT_SUFFIXES):
        c |= TEXT
    if k in _LABEL_KEYS or k.endswith(("labels", "annotations", "selector")):
        c |= LABELS
    if k in _NODE_KEYS:
        c |= NODE
    if k in _STRUCT_KEYS:
        c |= STRUCT
    if _NAME_KEY.match(key) and any(ch in key for ch in "-.0123456789"):
        c |= NAMEKEY
    if k == "secrets":
        c |= SECRETS
    if k in _REF_KEYS:
        c |= REFS
    if k == "columndefinitions":
        c |= COLDEFS
    if key in ("kind", "metadata", "object", "cluster_scoped"):
        c |= OBJKEY
    if k in ("items", "rows") or k in _LIST_HINT_KEYS:
        c |= LISTCTX
    return c


def key_class(key: str) -> int:
    c = _KEY_CACHE.get(key)
    if c is None:
        c = _classify_key(key)
        if len(_KEY_CACHE) < 100_000:
            _KEY_CACHE[key] = c
    return c


SECRET_KINDS = frozenset({"Secret", "secret", "secrets"})
NAMESPACED_KINDS = frozenset(
    {"Pod", "Service", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "ConfigMap",
     "Secret", "Event", "Endpoints", "EndpointSlice", "Ingress", "PersistentVolumeClaim", "ServiceAccount",
     "Role", "RoleBinding", "NetworkPolicy", "HorizontalPodAutoscaler", "PodDisruptionBudget", "LimitRange",
     "ResourceQuota", "Lease", "ControllerRevision", "PodTemplate", "ReplicationController", "Binding"}
)
SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
_LIST_HINT_KEYS = {
    "secrets": "Secret", "persistentvolumes": "PersistentVolume", "storageclasses": "StorageClass",
    "clusterroles": "ClusterRole", "clusterrolebindings": "ClusterRoleBinding", "ingressclasses": "IngressClass",
    "priorityclasses": "PriorityClass", "customresourcedefinitions": "CustomResourceDefinition",
    "namespaces": "Namespace",
}


# Namespace names that are also ordinary field names or words: a key or list element equal to one
# is not taken for a mention of that namespace.
WORDS = COMMON_NAMESPACE_WORDS | {"data", "config", "status", "spec", "metadata", "items", "name", "kind",
                                   "type", "value", "values", "labels", "annotations", "default"}


def looks_json(v: str) -> bool:
    end = v.rstrip()[-1:]
    return (end == "}" and v[0] == "{") or (end == "]" and v[0] == "[")


HEADER = re.compile(r"^[A-Z][A-Za-z0-9 ()./%-]{0,40}$")


def is_object(d: dict[Any, Any]) -> bool:
    meta = d.get("metadata")
    return type(meta) is dict and "name" in meta


def shape_resource(obj: dict[Any, Any], meta: dict[Any, Any]) -> str | None:
    """The cluster-scoped resource a kind-less server object is shaped like, if any."""
    spec = obj.get("spec")
    spec = spec if type(spec) is dict else {}
    labels = meta.get("labels")
    if type(labels) is dict and "kubernetes.io/metadata.name" in labels:
        return "namespaces"
    if spec.get("finalizers") == ["kubernetes"]:
        return "namespaces"
    if "claimRef" in spec or "persistentVolumeReclaimPolicy" in spec:
        return "persistentvolumes"
    if "provisioner" in obj:
        return "storageclasses"
    if "names" in spec and "group" in spec:
        return "customresourcedefinitions"
    if "roleRef" in obj:
        return "clusterrolebindings"
    if "rules" in obj or "aggregationRule" in obj:
        return "clusterroles"
    if "controller" in spec:
        return "ingressclasses"
    if "globalDefault" in obj or "preemptionPolicy" in obj:
        return "priorityclasses"
    return None


def list_context(parent: Any, key: Any, flags: int) -> tuple[str | None, int, bool]:
    """For a list under ``parent[key]``: the kind its elements are (``NodeList`` items, a
    ``secrets`` list …), the Table ``Namespace`` column when it is a Table's ``rows``, and whether
    its elements are references rather than objects."""
    hint: str | None = None
    nscol = -1
    if type(parent) is dict and isinstance(key, str):
        low = key.lower()
        if low == "items":
            kind = parent.get("kind")
            if type(kind) is str and kind not in ("List", "Table"):
                hint = kind[:-4] if kind.endswith("List") else kind
        elif low == "rows":
            cols = parent.get("columnDefinitions")
            if type(cols) is list:
                for i, col in enumerate(cols):
                    if type(col) is dict and str(col.get("name", "")).lower() == "namespace":
                        nscol = i
                        break
        else:
            hint = _LIST_HINT_KEYS.get(low)
    if hint is None and flags & NS:
        hint = "Namespace"  # {"namespace": [{"name": …}]}: each names a namespace
    return hint, nscol, bool(flags & REFS)


NO_LIST_CONTEXT: tuple[str | None, int, bool] = (None, -1, False)


_LABEL = re.compile(r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$")
SECRET_TEXT = re.compile(r"""kind["']?\s*:\s*["']?Secret\b""")
"""A Secret written out as YAML or JSON text."""


def keyed_by_namespace(d: dict[Any, Any]) -> bool:
    """Every key shaped like a namespace name and every value of one type (an aggregate)."""
    if len(d) < 2:
        return False
    first = None
    for k, v in d.items():
        if not isinstance(k, str) or not _LABEL.match(k):
            return False
        if first is None:
            first = type(v)
        elif type(v) is not first:
            return False
    return True


def clean_columns(cols: list[Any]) -> int:
    """An unattributed Table's column definitions reduced to schema (header-shaped names,
    types), so nothing else rides along in them. Returns how many were withheld."""
    kept: list[Any] = []
    for col in cols:
        if type(col) is not dict:
            continue
        name = col.get("name")
        if type(name) is str and HEADER.match(name):
            kept.append({k: v for k, v in col.items() if k in ("name", "type", "format", "priority")})
    withheld = len(cols) - len(kept)
    cols[:] = kept
    return withheld


def redact_secret_data(obj: dict[Any, Any]) -> int:
    """A Secret's ``data``/``stringData``/``binaryData`` values replaced (keys kept); how many."""
    n = 0
    for key in ("data", "stringData", "binaryData"):
        values = obj.get(key)
        if type(values) is dict:
            for k, v in values.items():
                if v is not None and v != REDACTED:
                    values[k] = REDACTED
                    n += 1
        elif type(values) is str and values and values != REDACTED:
            obj[key] = REDACTED
            n += 1
    return n


def redact_tree(node: Any, depth: int = 0) -> int:
    """Every string under ``node`` replaced (a value held under a credential key); how many."""
    if depth > 200:
        return 0
    n = 0
    if type(node) is dict:
        for k, v in node.items():
            if type(v) is str:
                if v and v != REDACTED:
                    node[k] = REDACTED
                    n += 1
            else:
                n += redact_tree(v, depth + 1)
    elif type(node) is list:
        for i, v in enumerate(node):
            if type(v) is str:
                if v and v != REDACTED:
                    node[i] = REDACTED
                    n += 1
            else:
                n += redact_tree(v, depth + 1)
    return n


# Header columns of ``kubectl get`` tables of cluster-scoped kinds (text results).
_TABLE_HEADERS = (
    ({"NAME", "STATUS", "ROLES", "AGE", "VERSION"}, "nodes"),
    ({"NAME", "CAPACITY", "RECLAIM", "CLAIM"}, "persistentvolumes"),
    ({"NAME", "PROVISIONER", "RECLAIMPOLICY"}, "storageclasses"),
)


def cluster_table(text: str) -> str | None:
    """The cluster-scoped resource a ``kubectl get`` text table lists (by its header line):
    nodes, PVs, StorageClasses, or ``namespaces`` for exactly ``NAME STATUS AGE``."""
    head = text.lstrip("\n")[:400].split("\n", 1)[0]
    if "NAME" not in head:
        return None
    cols = head.split()
    if cols == ["NAME", "STATUS", "AGE"]:
        return "namespaces"
    got = set(cols)
    for wanted, resource in _TABLE_HEADERS:
        if wanted <= got:
            return resource
    return None
