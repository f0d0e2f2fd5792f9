"""What the failing connections target (``network.network_targets``: a Service or a pod in
scope) and that target's state; a DNS failure is a fact of its own."""

from __future__ import annotations

from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca.engine.network import NetKind, classify_all
from sleuth_agent.rca.followups._context import FollowUpContext
from sleuth_agent.rca.followups.network import network_targets

__all__ = ["run"]


async def run(ctx: FollowUpContext, obs: WorkloadObservation, facts: Any) -> None:
    """What the failing connections target (a Service or a pod in scope) and its state; a
    DNS failure (also a resolver that refuses or times out on port 53) is a fact of its own."""
    lines = [*facts.log, *facts.event_message]
    dns = [f for f in classify_all(lines) if f.kind == NetKind.DNS]
    if dns:
        obs.derive("dns", dns[-1].line)
        if dns[-1].host:
            obs.variables.setdefault("dns_host", dns[-1].host)
    targets = network_targets(lines, obs.namespace, ctx.got.services, ctx.got.pods)  # type: ignore[arg-type]
    targets = [t for t in targets if not (t.kind == "Service" and t.name == obs.name)]
    if not targets:
        return
    obs.net_targets = targets
    t = targets[-1]
    if t.kind == "Pod" and t.backends:
        kind, name = t.backends[0]
        obs.variables["target_ref"] = f"{kind}/{t.namespace}/{name}"
    else:
        obs.variables["target_ref"] = t.ref
    what = {"refused": "are refused", "timeout": "time out", "unreachable": "find no route", "reset": "are reset", "tls": "fail the TLS handshake", "http_5xx": "get HTTP 5xx"}[t.failure.kind.value]
    if t.kind == "Service":
        state = (
            "it has no ready endpoints" if t.ready_endpoints == 0
            else f"it has {t.ready_endpoints} ready endpoint(s)" if t.ready_endpoints is not None else "its endpoints are unknown"
        )
        back = ", ".join(f"{k} {n}" for k, n in t.backends)
        if back:
            state += f"; it selects the pods of {back}" + (" (not all ready)" if t.backends_ready is False else "")
        obs.derive("net_target", f"The connections {what} at Service {t.name} ({state}).")
    else:
        obs.derive("net_target", f"The connections {what} at pod {t.name}" + (" (not ready)." if t.backends_ready is False else "."))
