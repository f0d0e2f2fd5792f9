"""The network-failure taxonomy, shared by logs, events and probe messages (DESIGN §3).

Different failures, different root causes:

- ``dns``       ``lookup x on 10.96.0.10:53: no such host`` / SERVFAIL / a refused or timed-out
                connection to port 53 → the name or cluster DNS (``dns_failure``)
- ``refused``   ``connection refused`` → nothing listens: a Service without ready endpoints, a
                wrong targetPort, or the peer is down
- ``timeout``   ``i/o timeout`` / ``connection timed out`` → something drops the packets: a
                NetworkPolicy, or the peer hangs
- ``unreachable`` ``no route to host`` / ``network is unreachable``
- ``reset``     ``connection reset by peer``
- ``tls``       ``x509: certificate ...`` / TLS handshake errors → the peer's certificate
- ``http_5xx``  an HTTP 5xx from the peer → the peer itself

``classify`` reads one line; ``resolve`` names the in-cluster object the target is (a Service by
DNS name or ClusterIP, a pod by IP), only among objects the asker could read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["NetFailure", "NetKind", "classify", "classify_all", "resolve"]


class NetKind(StrEnum):
    DNS = "dns"
    REFUSED = "refused"
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    RESET = "reset"
    TLS = "tls"
    HTTP_5XX = "http_5xx"


@dataclass(frozen=True)
class NetFailure:
    kind: NetKind
    host: str  # a name or an IP, "" when the line does not say
    port: str
    line: str


_IP = r"(?:\d{1,3}\.){3}\d{1,3}"
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
_ENDPOINT = re.compile(rf"(?<![\w.-])(\[?{_IP}\]?|{_HOST}):(\d{{2,5}})\b")
_DNS_NAME = re.compile(
    rf"(?:lookup|resolve host:?|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|Failed to resolve '?|Unknown host:?|"
    rf"UnknownHostException:?|could not translate host name \"?)\s*({_HOST})",
    re.IGNORECASE,
)
_DNS = re.compile(
    r"no such host|NXDOMAIN|SERVFAIL|server misbehaving|Could not resolve host|Name or service not known|"
    r"Temporary failure in name resolution|NameResolutionError|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|"
    r"UnknownHostException|could not translate host name|Failed to resolve",
    re.IGNORECASE,
)
_TLS = re.compile(
    r"x509:|certificate (?:has expired|is not (?:yet )?valid|signed by unknown authority|verify failed)|"
    r"tls: (?:handshake|bad certificate|failed)|SSL(?:Error|_ERROR|: CERTIFICATE_VERIFY_FAILED)|PKIX path",
    re.IGNORECASE,
)
_REFUSED = re.compile(r"connection refused|ECONNREFUSED|Connection refused", re.IGNORECASE)
_TIMEOUT = re.compile(
    r"i/o timeout|connection timed out|ETIMEDOUT|connect timed out|ConnectTimeout|timed out connecting|"
    r"context deadline exceeded \(Client\.Timeout|Connection timed out",
    re.IGNORECASE,
)
_UNREACHABLE = re.compile(r"no route to host|network is unreachable|EHOSTUNREACH|ENETUNREACH|HostUnreachable", re.IGNORECASE)
_RESET = re.compile(r"connection reset by peer|ECONNRESET", re.IGNORECASE)
_HTTP_5XX = re.compile(r"\b(?:status(?:\s?code)?[=: ]+|HTTP/\d(?:\.\d)? |returned |got )(5\d\d)\b", re.IGNORECASE)


_URL = re.compile(rf"\b(https?|grpcs?|wss?|amqps?|postgres(?:ql)?|mysql|redis|mongodb)://(?:[^@/\s]+@)?(\[?{_IP}\]?|{_HOST})(?::(\d{{2,5}}))?")
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443", "grpc": "80", "grpcs": "443"}
_AT_PORT = re.compile(rf"(?:at \"?({_HOST})\"?\s*(?:\(({_IP})\))?,?\s*)?\bport (\d{{2,5}})\b", re.IGNORECASE)
_TIMESTAMPISH = re.compile(r"^\d{4}-\d\d-\d\d(?:T\d\d)?$|^\d{1,2}$")


def _endpoint(line: str, prefer_port: str = "") -> tuple[str, str]:
    url = _URL.search(line)
    if url:
        return url.group(2).strip("[]"), url.group(3) or _DEFAULT_PORTS.get(url.group(1).lower(), "")
    found = [(h.strip("[]"), p) for h, p in _ENDPOINT.findall(line) if not _TIMESTAMPISH.match(h)]
    if not found:
        # libpq: 'connection to server at "db.shop" (10.0.0.7), port 5432 failed'
        m = _AT_PORT.search(line)
        if m:
            return m.group(1) or m.group(2) or "", m.group(3)
    if prefer_port:
        for h, p in found:
            if p == prefer_port:
                return h, p
    # The remote side is the last endpoint on a Go dial line ("dial tcp 10.0.0.5:43210->10.96.0.1:443").
    return found[-1] if found else ("", "")


_INBOUND = re.compile(r"handshake error from|remote error: tls|accept tcp", re.IGNORECASE)


def classify(line: str) -> NetFailure | None:
    """The network failure one log line, event or probe message reports, or None. A server's
    report about an inbound connection ("TLS handshake error from 10.1.2.3: remote error: ...")
    is not a failure to reach something: None."""
    if _INBOUND.search(line):
        return None
    if _DNS.search(line):
        m = _DNS_NAME.search(line)
        host = m.group(1).rstrip(".:") if m else ""
        return NetFailure(NetKind.DNS, host, "", line)
    for kind, rx in (
        (NetKind.TLS, _TLS),
        (NetKind.REFUSED, _REFUSED),
        (NetKind.TIMEOUT, _TIMEOUT),
        (NetKind.UNREACHABLE, _UNREACHABLE),
        (NetKind.RESET, _RESET),
    ):
        if rx.search(line):
            host, port = _endpoint(line)
            if port == "53" and kind in (NetKind.REFUSED, NetKind.TIMEOUT, NetKind.UNREACHABLE):
                return NetFailure(NetKind.DNS, host, port, line)  # the resolver itself does not answer
            return NetFailure(kind, host, port, line)
    m = _HTTP_5XX.search(line)
    if m:
        host, port = _endpoint(line)
        return NetFailure(NetKind.HTTP_5XX, host, port, line)
    return None


def classify_all(lines: Iterable[str]) -> list[NetFailure]:
    return [f for f in (classify(ln) for ln in lines) if f is not None]


def resolve(
    failure: NetFailure,
    namespace: str,
    services: Mapping[str, list[Mapping[str, Any]]],
    pod_ips: Mapping[str, tuple[str, str]] | None = None,
) -> tuple[str, str, str] | None:
    """The in-cluster object ``failure`` targets as ``(kind, namespace, name)``: a Service by name
    (``svc``, ``svc.ns``, ``svc.ns.svc``, ``svc.ns.svc.cluster.local``) or ClusterIP, a pod by IP.
    ``services`` and ``pod_ips`` (ip → (namespace, pod)) hold only what the asker could read."""
    host = failure.host.lower().rstrip(".")
    if not host:
        return None
    for ns, items in services.items():
        for svc in items:
            name = str(svc.get("name") or "")
            ip = str(svc.get("cluster_ip") or "")
            if ip and ip != "None" and host == ip:
                return ("Service", ns, name)
            if not name:
                continue
            parts = host.split(".")
            if parts[0] != name:
                continue
            if len(parts) == 1 and ns == namespace:
                return ("Service", ns, name)
            if len(parts) >= 2 and parts[1] == ns and (len(parts) == 2 or parts[2] == "svc"):
                return ("Service", ns, name)
    if pod_ips and host in pod_ips:
        ns, pod = pod_ips[host]
        return ("Pod", ns, pod)
    return None
