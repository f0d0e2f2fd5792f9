"""NetworkPolicies: a policy that selects the failing pods and allows no egress (or none to DNS),
or one that selects the pods behind a Service they call and does not admit them."""

from __future__ import annotations

import re

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView, items_of
from sleuth_agent.rca.engine.network import NetKind, classify_all
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
    # Egress is the union of every Egress policy that selects the pod (policies only add allowances):
    # the traffic is dropped when none of their rules admits the port it goes to.
    egress_policies = [
        p for p in policies
        if "Egress" in (p.get("policy_types") or []) and label_selects(parse_selector(str(p.get("pod_selector") or "*")), labels)
    ]
    ports = sorted({"53"} if dns_problem else set()) or _ports_in(lines)
    rules = [rule for p in egress_policies for rule in p.get("egress") or []]
    blocked = [port for port in ports if not any(_admits(rule, port) for rule in rules)]
    # the port is not known: blocked when the policies admit nothing but DNS (or nothing at all)
    dns_only = all(rule.get("ports") and all(str(x).split("/")[0] == "53" for x in rule["ports"]) for rule in rules)
    if egress_policies and (blocked or (not ports and dns_only)):
        # The fix belongs in the policy written for this workload's egress (the one with rules,
        # most specific selector first); with none, in the policy that denies everything.
        ranked = sorted(egress_policies, key=lambda p: (_blame_order(p), str(p.get("name"))))
        p = ranked[0]
        egress = p.get("egress") or []
        if not egress:
            what = "no egress at all"
        elif blocked == ["53"]:
            what = "no egress to DNS (port 53)"
        else:
            allowed = sorted({str(x) for rule in egress for x in rule.get("ports") or []})
            what = f"egress only to {', '.join(allowed) or 'the peers it lists'}, not to port {', '.join(blocked)}"
        others = [str(q.get("name")) for q in egress_policies if q is not p]
        obs.derive(
            "netpol",
            f"NetworkPolicy {p.get('name')} selects the pods of {obs.resource} and allows {what}"
            + (f" (with {', '.join(others)}, which add{'s' if len(others) == 1 else ''} nothing for it)" if others else "")
            + ", so those connections are dropped.",
        )
        obs.cites.append((r, f"NetworkPolicy {p.get('name')} in {obs.namespace}", [f"{q.get('name')}: policyTypes={q.get('policy_types')}, egress rules={len(q.get('egress') or [])}, ports={sorted({str(x) for rule in q.get('egress') or [] for x in rule.get('ports') or []})}" for q in egress_policies][:4]))
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


def _ports_in(lines: list[str]) -> list[str]:
    """The remote ports the failing connections go to (the network taxonomy's endpoints)."""
    return sorted({f.port for f in classify_all(lines) if f.port and f.kind != NetKind.DNS})


def _blame_order(p: dict) -> int:
    """Where the fix belongs: the policy written for this workload (rules, a selector of its own),
    else the policy that denies everything, else a namespace-wide allowance."""
    specific = str(p.get("pod_selector") or "*") != "*"
    if p.get("egress"):
        return 0 if specific else 2
    return 1


def _admits(rule: dict, port: str) -> bool:
    """Does one egress rule admit TCP/UDP ``port`` (a rule without ports admits every port)?"""
    rule_ports = rule.get("ports") or []
    return not rule_ports or any(str(x).split("/")[0] in (port, "*") for x in rule_ports)
