"""Checks a webhook request passes before its body is read: Host, Origin, content type and the
route's bearer token. Pure functions of header values; the webhook turns a failed check into a
refusal (HTTP status, a reason for the metrics, a one-line message for the caller).

Why each one: a web page can make a browser POST ``text/plain`` or a form to any address without
a CORS preflight, so only ``application/json`` is accepted (a page cannot send that cross-site
without a preflight this server never answers); a browser always sends ``Origin`` on such a
POST and Alertmanager never does; and a DNS-rebinding page reaches a loopback server under its
own host name, which the ``Host`` allow-list refuses.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["HostCheck", "bearer_matches", "is_json", "origin_allowed", "split_host"]


def split_host(value: str) -> tuple[str, str]:
    """``Host`` header (or an allow-list entry) → (lower-case host without brackets or trailing
    dot, port or "")."""
    v = value.strip().lower()
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return v, ""
        rest = v[end + 1 :]
        return v[1:end], rest[1:] if rest.startswith(":") else ""
    if v.count(":") == 1:
        host, _, port = v.partition(":")
        return host.rstrip("."), port
    return v.rstrip("."), ""  # a name, or a bare IPv6 address in the allow-list


class HostCheck:
    """``allowed`` entries are names (any port) or name:port; None allows every host."""

    def __init__(self, allowed: list[str] | None) -> None:
        self.any = allowed is None
        self.names = {split_host(a) for a in allowed or [] if a.strip()}

    def allows(self, header: str) -> bool:
        if self.any:
            return True
        if not header.strip():
            return False
        host, port = split_host(header)
        return (host, "") in self.names or (host, port) in self.names


def origin_allowed(origin: str | None, allowed: list[str]) -> bool:
    """No ``Origin`` (Alertmanager, curl) is fine; any other value must be listed exactly."""
    if origin is None:
        return True
    want = {a.strip().lower().rstrip("/") for a in allowed}
    return origin.strip().lower().rstrip("/") in want


def is_json(content_type: str) -> bool:
    """``application/json``, optionally with ``charset=utf-8`` (case-insensitive), nothing else."""
    media, _, params = content_type.partition(";")
    if media.strip().lower() != "application/json":
        return False
    params = params.strip()
    if not params:
        return True
    name, sep, value = params.partition("=")
    return sep == "=" and name.strip().lower() == "charset" and value.strip().strip('"').lower() == "utf-8"


def bearer_matches(authorization: str, expected: str) -> bool:
    """``Authorization: Bearer <expected>``, compared in constant time (digests of equal length,
    so neither the content nor the length of the token leaks through timing)."""
    scheme, _, token = authorization.strip().partition(" ")
    given = token.strip() if scheme.lower() == "bearer" else ""
    same = hmac.compare_digest(hashlib.sha256(given.encode()).digest(), hashlib.sha256(expected.encode()).digest())
    return same and bool(given) and bool(expected)
