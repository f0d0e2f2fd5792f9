"""What the failing connections target (``network.network_targets``: a Service or a pod in
scope) and that target's state; a DNS failure is a fact of its own."""

from __future__ import annotations

import re
from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca.engine.graph import selector_of
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
        pod, _c = obs.representative()
        if pod is not None and pod.host_network and pod.dns_policy in ("", "ClusterFirst"):
            # hostNetwork pods with dnsPolicy ClusterFirst fall back to the node's resolv.conf:
            # cluster names (svc.cluster.local) do not resolve there.
            obs.derive(
                "dns_config",
                f"Its pods run with hostNetwork: true and dnsPolicy {pod.dns_policy or 'ClusterFirst'}, so they resolve "
                "through the node's own resolv.conf, where cluster Service names do not exist; hostNetwork pods need "
                "dnsPolicy: ClusterFirstWithHostNet.",
            )
    targets = network_targets(lines, obs.namespace, ctx.got.services, ctx.got.pods)  # type: ignore[arg-type]
    targets = [t for t in targets if not (t.kind == "Service" and t.name == obs.name)]
    if not targets:
        return
    obs.net_targets = targets
    t = targets[-1]
    obs.variables["net_kind"] = t.failure.kind.value
    if t.failure.host and t.failure.port:
        obs.variables.setdefault("endpoint", f"{t.failure.host}:{t.failure.port}")
    if t.kind == "Pod" and t.backends:
        kind, name = t.backends[0]
        obs.variables["target_ref"] = f"{kind}/{t.namespace}/{name}"
    else:
        obs.variables["target_ref"] = t.ref
    if t.failure.kind == NetKind.TLS and t.kind == "Service":
        await _served_certificate(ctx, obs, t.namespace, t.name)
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


_CERTISH = re.compile(r"tls|cert|ssl|https|x509|pki", re.IGNORECASE)


async def _served_certificate(ctx: FollowUpContext, obs: WorkloadObservation, namespace: str, service: str) -> None:
    """The Secret the peer's pods serve their certificate from (a mounted Secret named like one),
    read from one of the pods the Service selects. Only its name: Secrets are never read."""
    svc = next((s for s in ctx.got.services.get(namespace, []) if str(s.get("name")) == service), None)
    sel = selector_of((svc or {}).get("selector"))
    pods = [p for p in ctx.got.pods.get(namespace, []) if sel is not None and sel.matches(dict(p.labels))]
    if not pods:
        return
    r = await ctx.read("get_pod", {"namespace": namespace, "name": sorted(pods, key=lambda p: p.name)[0].name})
    if not r.ok or not isinstance(r.data, dict):
        return
    full = PodView.parse(r.data.get("pod", r.data))
    certs = sorted({src for _n, t, src in full.volumes if t == "secret" and _CERTISH.search(src)})
    if len(certs) == 1:
        obs.variables["tls_secret"] = certs[0]
        obs.derive("net_target", f"The pods behind Service {service} serve their certificate from Secret {certs[0]}.")
        obs.cites.append((r, f"pod {full.name}: mounts Secret {certs[0]}", [f"volume secret {certs[0]}"]))
