"""What the caller may read, per cluster: the one answer behind the ``access`` command,
``GET /v1/whoami``'s ``access`` field and the cluster-admin check of ``diagnostics``.

authz-cache resolves it (``sleuth.authz.scope``, cached there per user and groups); the gateway
only asks and shows it. Only the caller's own namespaces ever appear, never anyone else's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sleuth_common.bus import BusError, request
from sleuth_common.messages import ScopeReply, ScopeRequest
from sleuth_gateway.auth import Identity
from sleuth_gateway.errors import DependencyUnavailable
from sleuth_gateway.runtime import Gateway

__all__ = ["Access", "ClusterAccess", "caller_access"]

_SHOWN_NAMESPACES = 100
"""Namespaces listed per cluster in chat (``/v1/whoami`` lists them all)."""


@dataclass(frozen=True)
class ClusterAccess:
    cluster_wide: bool = False
    namespaces: tuple[str, ...] = ()
    unavailable: bool = False
    """authz-cache could not ask this cluster: nothing of it is shown until it answers."""


@dataclass(frozen=True)
class Access:
    """The caller's scope per cluster: the configured clusters in config order, then any other
    cluster authz-cache answered for."""

    clusters: dict[str, ClusterAccess]
    seconds: float
    """How long authz-cache took to answer."""

    @property
    def cluster_admin(self) -> bool:
        """Cluster-wide on every cluster (one that did not answer counts as not: fail closed)."""
        return bool(self.clusters) and all(c.cluster_wide and not c.unavailable for c in self.clusters.values())

    def namespaces(self) -> list[str]:
        """Every namespace the caller may read somewhere, sorted."""
        return sorted({ns for c in self.clusters.values() for ns in c.namespaces})

    def as_json(self) -> dict[str, dict[str, Any]]:
        """``{cluster: {"cluster_wide": bool, "namespaces": [...]}}``, plus ``"unavailable": true``
        on a cluster authz-cache could not ask."""
        out: dict[str, dict[str, Any]] = {}
        for name, c in self.clusters.items():
            out[name] = {"cluster_wide": c.cluster_wide, "namespaces": list(c.namespaces)}
            if c.unavailable:
                out[name]["unavailable"] = True
        return out

    def markdown(self, identity: Identity) -> str:
        groups = f"; groups {', '.join(f'`{g}`' for g in identity.groups)}" if identity.groups else ""
        lines = [f"**Your access** (`{identity.user}`{groups}):", ""]
        if not self.clusters:
            lines.append("- no cluster is configured")
        for name, c in self.clusters.items():
            if c.unavailable:
                what = "unknown right now: authorization for this cluster did not answer, so nothing of it is shown"
            elif c.cluster_wide:
                what = "cluster-wide"
            elif c.namespaces:
                shown = ", ".join(f"`{ns}`" for ns in c.namespaces[:_SHOWN_NAMESPACES])
                more = len(c.namespaces) - _SHOWN_NAMESPACES
                what = f"namespaces {shown}" + (f" and {more} more" if more > 0 else "")
            else:
                what = "nothing"
            lines.append(f"- **{name}**: {what}")
        lines += [
            "",
            "I show you only what these allow (your own Kubernetes permissions). "
            "After they change, say `refresh`.",
        ]
        return "\n".join(lines)


async def caller_access(gw: Gateway, identity: Identity) -> Access:
    """The caller's access per cluster, from authz-cache; 503 (``DependencyUnavailable``) when it
    does not answer."""
    req = ScopeRequest(user=identity.user, groups=identity.groups)
    wait = gw.settings.authz.request_timeout
    t0 = time.monotonic()
    try:
        reply = await request(gw.bus.nats, gw.subjects.authz_scope, req, ScopeReply, wait=wait, service="authz-cache",
                              hedge_after=gw.settings.authz.hedge_after)
    except BusError as exc:  # temporary (not running, no answer in time) or permanent (malformed): 503 both
        raise _unavailable(str(exc)) from exc
    if reply.user != identity.user:
        raise _unavailable("authz-cache answered for someone else")
    seconds = time.monotonic() - t0
    names = [c.name for c in gw.settings.clusters]
    names += sorted({*reply.clusters, *reply.errors} - set(names))
    clusters: dict[str, ClusterAccess] = {}
    for name in names:
        scope = reply.clusters.get(name)
        if scope is not None:
            clusters[name] = ClusterAccess(scope.cluster_wide, tuple(sorted(set(scope.namespaces))))
        else:
            # Failed in authz-cache, or configured here and unknown there: shown as unknown.
            clusters[name] = ClusterAccess(unavailable=True)
    return Access(clusters, seconds)


def _unavailable(why: str) -> DependencyUnavailable:
    return DependencyUnavailable(f"authorization is unavailable ({why}); try again shortly")
