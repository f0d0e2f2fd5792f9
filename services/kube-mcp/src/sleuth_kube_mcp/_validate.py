"""Strict arguments (DESIGN §2): every name-like argument is checked as a Kubernetes name before
any read, so no argument can steer a read outside the object it names (``../../team-b/...``).

The rules are the API server's own: namespaces and container names are DNS-1123 labels; pod and
workload names DNS-1123 subdomains; ``get_resource`` names may also hold ``:`` (RBAC objects such
as ``system:controller:...``). The client checks every path again (``check_path``) as a backstop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ArgumentError", "check_arguments"]

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_ANY_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.:]{0,251}[A-Za-z0-9])?$")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9.-]{0,252}$")


class ArgumentError(ValueError):
    """An argument is not a valid Kubernetes name; the message says which and why."""


def _shown(value: str) -> str:
    return repr(value if len(value) <= 80 else value[:80] + "…")


def _label(arg: str, value: str) -> None:
    if not _LABEL.match(value):
        raise ArgumentError(
            f"invalid {arg} {_shown(value)}: must be a DNS-1123 label (lowercase letters, digits "
            "and '-', starting and ending with a letter or digit, at most 63 characters)"
        )


def _subdomain(arg: str, value: str) -> None:
    if len(value) > 253 or not _SUBDOMAIN.match(value):
        raise ArgumentError(
            f"invalid {arg} {_shown(value)}: must be a DNS-1123 subdomain (lowercase letters, "
            "digits, '-' and '.', at most 253 characters)"
        )


def _any_name(arg: str, value: str) -> None:
    if not _ANY_NAME.match(value) or ".." in value:
        raise ArgumentError(
            f"invalid {arg} {_shown(value)}: must be a Kubernetes object name (letters, digits, "
            "'-', '.', '_' and ':'; no '/' and no '..')"
        )


def check_arguments(tool: str, args: Mapping[str, Any]) -> None:
    """Raise :class:`ArgumentError` for the first name-like argument that is not valid."""
    ns = args.get("namespace")
    if isinstance(ns, str) and (ns or tool not in ("get_resource",)):
        _label("namespace", ns)
    container = args.get("container")
    if isinstance(container, str) and container:
        _label("container", container)
    kind = args.get("kind")
    if isinstance(kind, str) and kind and not _KIND.match(kind):
        raise ArgumentError(f"invalid kind {_shown(kind)}: use a Kind, plural or short name such as Deployment")
    name = args.get("name")
    if isinstance(name, str):
        (_any_name if tool == "get_resource" else _subdomain)("name", name)
    involved = args.get("involved_object_name")
    if isinstance(involved, str) and involved:
        _any_name("involved_object_name", involved)
    workload = args.get("workload")
    if isinstance(workload, str) and workload:
        _subdomain("workload", workload)
    kinds = args.get("kinds")
    if isinstance(kinds, list):
        for k in kinds:
            if not isinstance(k, str) or not _KIND.match(k):
                raise ArgumentError(f"invalid kind {_shown(str(k))} in kinds")
