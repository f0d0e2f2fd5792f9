"""NetworkPolicies: a policy that selects the failing pods and allows no egress (or none to DNS),
or one that selects the pods behind a Service they call and does not admit them."""

from __future__ import annotations

import re

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView, items_of
from sleuth_agent.rca.followups._context import FollowUpContext
from sleuth_agent.rca.followups._shared import label_selects, parse_selector

__all__ = ["run"]

_DNS_TIMEOUT = re.compile(r"no servers could be reached|lookup .* i/o timeout|name resolution|resolve", re.IGNORECASE)


async def run(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView | None, lines: list[str]) -> None:
    if pod is None or not ctx.tools.has_tool("list_resources"):
        return
    r = await ctx.read("list_resources", {"kind": "networkpolicies", "namespace": obs.namespace})
    if not r.ok:
        return
    policies = items_of(r.data, "items")
    labels = dict(pod.labels)
    dns_problem = any(_DNS_TIMEOUT.search(ln) for ln in lines)
    for p in policies:
        sel = parse_selector(str(p.get("pod_selector") or "*"))
        if not label_selects(sel, labels):
            continue
        if "Egress" in (p.get("policy_types") or []):
            egress = p.get("egress") or []
            allows_dns = any(
                not rule.get("ports") or any(str(x).startswith("53/") for x in rule.get("ports") or [])
                for rule in egress
            )
            if not egress or (dns_problem and not allows_dns):
                what = "all egress" if not egress else "egress to DNS (port 53)"
                obs.derive(
                    "netpol",
                    f"NetworkPolicy {p.get('name')} selects the pods of {obs.resource} and allows no {what}, "
                    "so DNS lookups and outgoing connections are dropped.",
                )
                obs.cites.append((r, f"NetworkPolicy {p.get('name')} in {obs.namespace}", [f"{p.get('name')}: policyTypes={p.get('policy_types')}, egress rules={len(egress)}"]))
                obs.variables.update({"netpol_name": str(p.get("name")), "netpol_direction": "egress"})
                return
    # Ingress side: the Service the log names, its pods, the policies that select them.
    services = ctx.got.services.get(obs.namespace, [])
    text = " ".join(lines)
    for svc in services:
        name = str(svc.get("name"))
        if name == obs.name or not re.search(rf"(?<![-\w]){re.escape(name)}(?![-\w])", text):
            continue
        ssel = parse_selector(svc.get("selector"))
        targets = [q for q in ctx.got.pods.get(obs.namespace, []) if ssel and label_selects(ssel, dict(q.labels))]
        for p in policies:
            if "Ingress" not in (p.get("policy_types") or []):
                continue
            psel = parse_selector(str(p.get("pod_selector") or "*"))
            if not any(label_selects(psel, dict(q.labels)) for q in targets):
                continue
            admitted = False
            peers_text = []
            for rule in p.get("ingress") or []:
                peers = rule.get("peers") or []
                if not peers:
                    admitted = True
                for peer in peers:
                    ps = peer.get("pod_selector")
                    peers_text.append(ps or peer.get("namespace_selector") or peer.get("ip_block") or "?")
                    if ps is not None and peer.get("namespace_selector") is None and label_selects(parse_selector(ps), labels):
                        admitted = True
            if not admitted:
                mine = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "pod-template-hash")
                obs.derive(
                    "netpol",
                    f"NetworkPolicy {p.get('name')} selects the pods behind Service {name} and admits ingress only from "
                    f"pods matching {' or '.join(peers_text) or 'nothing'}; the pods of {obs.resource} have labels {mine}, "
                    "so their connections are dropped (they time out).",
                )
                obs.cites.append((r, f"NetworkPolicy {p.get('name')} in {obs.namespace}", [f"{p.get('name')}: ingress from {', '.join(peers_text)}"]))
                obs.variables.update({"netpol_name": str(p.get("name")), "netpol_direction": "ingress"})
                return
