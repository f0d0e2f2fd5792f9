"""Names in strings, for the scope filter (DESIGN §2 steps 2-3).

Two questions about a string:

- *Which namespace does it name?* ``namespaces_in(value)`` reads the namespace out of the shapes
  a string carries one in: ``ns/name``, ``Kind/ns/name`` (kube-mcp's subgraph ids),
  ``…/namespaces/ns/…`` (API paths, selfLinks, audit URIs) and cluster DNS names
  (``svc.ns.svc``, ``svc.ns.svc.cluster.local``, ``pod-ip.ns.pod.cluster.local``). ``ip_of``
  reads an IP address (``10.1.2.3``, ``10.1.2.3:8080``, ``[fd00::1]:80``); an IP names a namespace
  only through the ``ips`` map the caller resolved (pod IPs of Pod objects), never by itself.
- *Does this text mention an object outside the caller's namespaces?* ``ForeignNames`` indexes
  the distinctive names of objects in namespaces outside the scope, and the names of those
  namespaces, in one Aho-Corasick automaton, and finds them on token boundaries.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping

import ahocorasick_rs

__all__ = [
    "COMMON_NAMES",
    "COMMON_NAMESPACE_WORDS",
    "LINE_WITHHELD",
    "ForeignNames",
    "ip_of",
    "namespaces_in",
    "ns_of_ref",
    "text_namespaces",
]

LINE_WITHHELD = "<line withheld: it names an object outside your namespaces>"

# Names too common to say anything about who owns them: a line saying "default" or "coredns"
# is no one tenant's business. Kinds and common component names are never indexed.
COMMON_NAMES = frozenset(
    {"default", "kubernetes", "kube-system", "kube-public", "kube-node-lease", "coredns", "kube-dns",
     "kube-proxy", "nginx", "ingress-nginx", "redis", "postgres", "postgresql", "mysql", "mongodb",
     "mariadb", "rabbitmq", "kafka", "zookeeper", "elasticsearch", "memcached", "envoy", "istio",
     "istiod", "linkerd", "cilium", "calico", "flannel", "prometheus", "grafana", "alertmanager",
     "loki", "tempo", "jaeger", "fluentd", "fluent-bit", "vector", "metrics-server", "cert-manager",
     "external-dns", "argocd", "traefik", "haproxy", "frontend", "backend", "database", "service",
     "services", "server", "client", "worker", "workers", "gateway", "controller", "manager",
     "operator", "webhook", "scheduler", "monitor", "metrics", "logging", "storage", "network",
     "cluster", "namespace", "namespaces", "deployment", "deployments", "replicaset", "statefulset",
     "daemonset", "cronjob", "configmap", "secret", "secrets", "ingress", "endpoints", "endpoint",
     "persistentvolume", "persistentvolumeclaim", "storageclass", "serviceaccount", "container",
     "containers", "running", "pending", "failed", "succeeded", "unknown", "healthy", "unhealthy",
     "started", "stopped", "created", "deleted", "updated", "warning", "normal", "error", "errors",
     "timeout", "request", "response", "public", "private", "internal", "external", "system",
     "master", "primary", "replica", "standby", "leader", "follower", "staging", "production",
     "development", "testing", "canary", "stable", "latest", "config", "settings", "volume",
     "volumes", "kube-root-ca.crt", "application", "localhost", "healthz", "readyz", "livez"}
)
# Namespace names that are ordinary words: not treated as a mention of that namespace.
COMMON_NAMESPACE_WORDS = frozenset(
    {"default", "kubernetes", "system", "public", "local", "monitoring", "logging", "ingress", "storage",
     "network", "networking", "security", "observability", "tools", "platform", "infra", "shared", "common",
     "database", "databases", "backup", "backups", "test", "tests", "testing", "staging", "production", "dev"}
)
_MIN_NAME = 6

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_INDEXABLE = re.compile(r"^[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?$")


def _lower(text: str) -> str:
    """Lower-case ``text`` keeping every offset (``str.lower`` may change the length)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


class ForeignNames:
    """Distinctive names of objects in namespaces outside a scope, and those namespaces' names,
    found in text on token boundaries (a match must not touch ``[a-z0-9-]`` on either side, so
    ``pay-db`` is found in ``pay-db.team-b.svc`` and ``"pay-db"`` but not in ``xpay-db``), or
    followed by a generated suffix (``pay-db-7f9c``, a pod of that workload) unless the whole
    token is one of the caller's own objects.

    An object name is *distinctive* when it is at least 6 characters, not a common word or kind
    (``COMMON_NAMES``) and not also the name of something in an allowed namespace. Namespace
    names are indexed whatever their length, unless they are ordinary words (``default``).
    """

    __slots__ = ("_automaton", "_own", "_patterns", "names", "namespaces")

    def __init__(self, names: Iterable[str], namespaces: Iterable[str] = (), own: Iterable[str] = ()) -> None:
        self._own: frozenset[str] = frozenset(own)
        self.names: frozenset[str] = frozenset(names)
        """Every indexed name (lower case)."""
        self.namespaces: frozenset[str] = frozenset(namespaces)
        """The foreign namespaces the inventory knows (indexed or not)."""
        self._patterns = sorted(self.names)
        self._automaton = ahocorasick_rs.AhoCorasick(self._patterns) if self._patterns else None

    @classmethod
    def build(cls, inventory: Mapping[str, Iterable[str]], allowed: Iterable[str]) -> ForeignNames:
        """Index ``inventory`` (``{namespace: [object names]}``) for a caller who may read the
        namespaces in ``allowed``."""
        allowed_set = {str(a).lower() for a in allowed}
        own: set[str] = set(allowed_set)
        foreign: dict[str, list[str]] = {}
        for ns, objects in inventory.items():
            key = str(ns)
            names = [_lower(str(n)) for n in (objects or ()) if isinstance(n, str) and n]
            if key.lower() in allowed_set:
                own.update(names)
            else:
                foreign[key] = names
        indexed: set[str] = set()
        for names in foreign.values():
            for n in names:
                if len(n) >= _MIN_NAME and n not in own and n not in COMMON_NAMES and _INDEXABLE.match(n):
                    indexed.add(n)
        for ns in foreign:
            n = ns.lower()
            if n and n not in own and n not in COMMON_NAMESPACE_WORDS and _INDEXABLE.match(n):
                indexed.add(n)
        return cls(indexed, foreign, own)

    @classmethod
    def of_namespaces(cls, namespaces: Iterable[str], allowed: Iterable[str]) -> ForeignNames:
        """Only namespace names (those the filter learnt from the document, without an inventory)."""
        return cls.build({ns: () for ns in namespaces}, allowed)

    def __bool__(self) -> bool:
        return self._automaton is not None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and _lower(name) in self.names

    def __repr__(self) -> str:
        return f"ForeignNames({len(self.names)} names)"

    def _spans(self, text: str) -> list[tuple[int, int]]:
        automaton = self._automaton
        if automaton is None or not text:
            return []
        low = _lower(text)
        if not low.isascii():
            # A lone surrogate (from a JSON escape) cannot cross into the automaton: one "?" for
            # it keeps every index where it was.
            low = _SURROGATE.sub("?", low) if _has_surrogate(low) else low
        end_of = len(low)
        chars = _NAME_CHARS
        spans = []
        for _idx, start, end in automaton.find_matches_as_indexes(low, overlapping=True):
            if start > 0 and low[start - 1] in chars:
                continue
            if end < end_of and low[end] in chars:
                # A generated suffix (a pod of a foreign Deployment: ``billing-api-6d9f7-x7k2p``,
                # ``ledger-db-1``) names that object's family, unless the whole token is the
                # caller's own object (``billing-api-v2`` in their namespace).
                if low[end] != "-" or end + 1 >= end_of or low[end + 1] not in chars or low[end + 1] == "-":
                    continue
                tok_end = end
                while tok_end < end_of and low[tok_end] in chars:
                    tok_end += 1
                if low[start:tok_end] in self._own or low[start:tok_end].rstrip("-") in self._own:
                    continue
                end = tok_end
            spans.append((start, end))
        return spans

    def hits(self, text: str) -> int:
        """How many times ``text`` names a foreign object or namespace."""
        return len(self._spans(text))

    def withhold_lines(self, text: str) -> tuple[str, int]:
        """``text`` with every line that names a foreign object replaced by ``LINE_WITHHELD``,
        and how many lines were replaced."""
        spans = self._spans(text)
        if not spans:
            return text, 0
        lines: list[tuple[int, int]] = []
        last_end = -1
        for start, _end in sorted(spans):
            if start < last_end:
                continue  # same line as the previous hit
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", start)
            if line_end < 0:
                line_end = len(text)
            lines.append((line_start, line_end))
            last_end = line_end
        out: list[str] = []
        pos = 0
        for line_start, line_end in lines:
            out.append(text[pos:line_start])
            out.append(LINE_WITHHELD)
            pos = line_end
        out.append(text[pos:])
        return "".join(out), len(lines)


# -- namespaces named inside one string ----------------------------------------------------------

_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
# ns/name references: a DNS label, a slash, a Kubernetes object name. Not a MIME type, an API
# group/version, a protocol/port, a date or a path.
_NS_REF = re.compile(rf"^({_LABEL})/([A-Za-z0-9](?:[-A-Za-z0-9_.]{{0,251}}[A-Za-z0-9])?)$")
# Kind/ns/name (kube-mcp's subgraph ids), Kind.group/ns/name, resource/ns/name.
_KIND_REF = re.compile(
    rf"^([A-Za-z][A-Za-z0-9]*(?:\.[a-z0-9.-]+)?)/({_LABEL})/([A-Za-z0-9](?:[-A-Za-z0-9_.]{{0,251}}[A-Za-z0-9])?)$"
)
_API_VERSION = re.compile(r"^v\d+(?:(?:alpha|beta)\d+)?$")
# First halves of ``x/y`` that are not namespaces: MIME types, protocols, and kubectl's
# ``pod/api-0`` resource prefixes.
_NOT_NAMESPACES = frozenset(
    {"text", "application", "image", "audio", "video", "multipart", "font", "model", "message",
     "tcp", "udp", "sctp", "http", "https", "grpc", "h2", "h2c", "ws", "wss", "and", "or", "either",
     "pod", "pods", "po", "deploy", "deployment", "deployments", "svc", "service", "services", "node",
     "nodes", "no", "job", "jobs", "cronjob", "cronjobs", "cj", "configmap", "configmaps", "cm",
     "secret", "secrets", "statefulset", "statefulsets", "sts", "daemonset", "daemonsets", "ds",
     "replicaset", "replicasets", "rs", "ingress", "ingresses", "ing", "pvc", "pv",
     "persistentvolumeclaim", "persistentvolume", "namespace", "namespaces", "ns", "serviceaccount",
     "serviceaccounts", "sa", "event", "events", "ev", "endpoints", "ep", "role", "roles",
     "rolebinding", "rolebindings", "clusterrole", "clusterrolebinding", "hpa", "pdb",
     "networkpolicy", "netpol", "storageclass", "sc", "crd", "lease", "leases"}
)
_RESOURCE_KINDS = frozenset(
    {"pod", "pods", "deployment", "deployments", "deploy", "service", "services", "svc", "statefulset",
     "statefulsets", "sts", "daemonset", "daemonsets", "ds", "replicaset", "replicasets", "rs", "job",
     "jobs", "cronjob", "cronjobs", "configmap", "configmaps", "cm", "secret", "secrets", "ingress",
     "ingresses", "pvc", "persistentvolumeclaims", "serviceaccount", "serviceaccounts", "sa",
     "event", "events", "endpoints", "role", "roles", "rolebinding", "rolebindings", "lease", "leases",
     "networkpolicy", "networkpolicies", "hpa", "pdb"}
)
# .../namespaces/<ns>[/...] in API paths and URLs.
_NS_PATH = re.compile(rf"(?:^|/)namespaces/({_LABEL})(?=$|[/?#\s\"'])")
# Kind/ns/name inside prose ("Back-off restarting Pod/team-b/api-0").
_KIND_REF_IN_TEXT = re.compile(
    rf"(?<![A-Za-z0-9/])(?:Pod|Deployment|Service|StatefulSet|DaemonSet|ReplicaSet|Job|CronJob|ConfigMap|Secret"
    rf"|Ingress|PersistentVolumeClaim|ServiceAccount|Event|Endpoints|Role|RoleBinding|NetworkPolicy"
    rf"|HorizontalPodAutoscaler|PodDisruptionBudget)/({_LABEL})/[A-Za-z0-9]"
)
# svc.ns.svc[.cluster.local], pod-ip.ns.pod[.cluster.local], _port._proto.svc.ns.svc…
_DNS_3 = re.compile(rf"(?<![a-z0-9-])[a-z0-9_-]+\.({_LABEL})\.(?:svc|pod)(?![a-z0-9-])", re.IGNORECASE)
# ns.svc.cluster.local (a search domain)
_DNS_2 = re.compile(rf"(?<![a-z0-9.-])({_LABEL})\.(?:svc|pod)\.cluster\.local(?![a-z0-9-])", re.IGNORECASE)

_REF_CACHE: dict[str, tuple[str | None, bool]] = {}
_IP_CACHE: dict[str, str | None] = {}


def _read_ref(text: str) -> tuple[str | None, bool]:
    """``(namespace, certain)``: certain is False when the first half could as well be a MIME
    type, a protocol or a kubectl resource prefix (``text/plain``, ``tcp/80``, ``pod/api-0``)."""
    m = _NS_REF.match(text)
    if m is not None:
        first, name = m.group(1), m.group(2)
        if first.isdigit() or _API_VERSION.match(name):
            return None, False
        return first, first not in _NOT_NAMESPACES
    m = _KIND_REF.match(text)
    if m is not None:
        kind, middle = m.group(1), m.group(2)
        if (kind[0].isupper() or kind in _RESOURCE_KINDS) and not _API_VERSION.match(middle):
            return middle, True
    return None, False


def ns_of_ref(text: str, allowed: frozenset[str] = frozenset()) -> str | None:
    """The namespace of an ``ns/name`` or ``Kind/ns/name`` string, or None when it is not shaped
    like one. An ambiguous first half (``pod/api-0``) counts only when it is an ``allowed``
    namespace."""
    got = _REF_CACHE.get(text)
    if got is None:
        got = _read_ref(text)
        if len(_REF_CACHE) < 200_000:
            _REF_CACHE[text] = got
    ns, certain = got
    if ns is None or certain or ns in allowed:
        return ns
    return None


def namespaces_in(value: str, allowed: frozenset[str] = frozenset(), *, refs: bool = True) -> list[str]:
    """Every namespace ``value`` names as a reference, an API path or a cluster DNS name.
    ``refs=False`` skips the ``ns/name`` reading (for images, URLs and paths, whose slashes are
    their own) but still reads ``namespaces/x`` paths and DNS names."""
    found: list[str] = []
    if "/" in value:
        if refs:
            ns = ns_of_ref(value, allowed)
            if ns is not None:
                found.append(ns)
        if "namespaces/" in value:
            found.extend(_NS_PATH.findall(value))
        if " " in value:  # prose: Kind/ns/name anywhere in it
            found.extend(_KIND_REF_IN_TEXT.findall(value))
    if ".svc" in value or ".pod" in value or ".SVC" in value:
        found.extend(n.lower() for n in _DNS_3.findall(value))
        found.extend(n.lower() for n in _DNS_2.findall(value))
    return found


# "in namespace team-b", "namespace: team-b", "-n team-b", "--namespace=team-b", "ns=team-b".
_PROSE_NS = re.compile(
    r"(?i)(?:\bnamespaces?\b[\s\"'`:=/]*|(?<![\w-])(?:-n|--namespace)(?:\s+|=)[\"']?|\bns[=:/][\"']?)"
    r"([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)(?![-a-z0-9])"
)
# Words that follow "namespace" in prose without naming one ("the namespace is being deleted").
_PROSE_STOP = frozenset(
    {"is", "was", "were", "are", "be", "been", "being", "not", "no", "and", "or", "the", "a", "an", "to", "of",
     "in", "on", "for", "from", "with", "without", "does", "doesn", "do", "did", "exists", "exist", "found",
     "missing", "must", "should", "may", "can", "cannot", "will", "has", "have", "had", "name", "names",
     "scope", "scoped", "selector", "field", "label", "labels", "that", "this", "which", "where", "it", "as",
     "by", "at", "if", "all", "any", "each", "per", "level", "wide", "terminating", "deleted", "created"}
)


def text_namespaces(text: str) -> list[tuple[str, int]]:
    """The namespaces prose names, with where: API paths, ``Kind/ns/name``, cluster DNS names,
    and mentions such as ``in namespace team-b``, ``-n team-b``, ``ns=team-b``."""
    found: list[tuple[str, int]] = []
    if "/" in text:
        if "namespaces/" in text:
            found.extend((m.group(1), m.start(1)) for m in _NS_PATH.finditer(text))
        found.extend((m.group(1), m.start(1)) for m in _KIND_REF_IN_TEXT.finditer(text))
    if ".svc" in text or ".pod" in text or ".SVC" in text:
        found.extend((m.group(1).lower(), m.start(1)) for m in _DNS_3.finditer(text))
        found.extend((m.group(1).lower(), m.start(1)) for m in _DNS_2.finditer(text))
    low = text.lower()
    if "namespace" in low or "-n" in text or "ns" in low:
        for m in _PROSE_NS.finditer(text):
            token = m.group(1).lower()
            if token not in _PROSE_STOP:
                found.append((token, m.start(1)))
    return found


def ip_of(value: str) -> str | None:
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


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")
