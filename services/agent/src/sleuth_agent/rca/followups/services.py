"""Services: one that forwards to a port its pods do not serve (kept for the Service in
``Collected.service_notes``), and Services whose selector matches no pod."""

from __future__ import annotations

import json
import re
from typing import Any

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation, clip
from sleuth_agent.rca.followups._context import FollowUpContext
from sleuth_agent.rca.followups._shared import label_selects, parse_selector

__all__ = ["service_findings", "service_ports", "unserved_target_port"]


def _container_ports(pod: Any) -> list[tuple[str, str, str]]:
    """(container, port name, port number) declared by a pod, from kube-mcp's or the API's shape."""
    out: list[tuple[str, str, str]] = []
    if not isinstance(pod, dict):
        return out
    containers = pod.get("containers") or (pod.get("spec") or {}).get("containers") or []
    for c in containers:
        if not isinstance(c, dict):
            continue
        for p in c.get("ports") or []:
            if isinstance(p, dict):
                num = p.get("container_port", p.get("containerPort"))
                if num is not None:
                    out.append((str(c.get("name") or ""), str(p.get("name") or ""), str(num)))
    return out


async def service_ports(ctx: FollowUpContext, obs: WorkloadObservation, lines: list[str]) -> None:
    """A client's connection is refused by a Service (its ClusterIP or its name in the log):
    compare the Service's targetPort (and its Endpoints' port) with the containerPorts of the
    pods it selects. Nothing listening on the targetPort refuses every connection although
    the pods are Ready; the finding is kept for the Service (``Collected.service_notes``)."""
    text = " ".join(lines)
    for svc in ctx.got.services.get(obs.namespace, []):
        name = str(svc.get("name") or "")
        if not name or name == obs.name:
            continue
        ip = str(svc.get("cluster_ip") or "")
        ports = [p for p in svc.get("ports") or [] if isinstance(p, dict)]
        used: dict[str, Any] | None = None
        m = re.search(rf"(?<![\d.]){re.escape(ip)}:(\d+)", text) if ip and ip != "None" else None
        if m:
            used = next((p for p in ports if str(p.get("port")) == m.group(1)), None)
        elif re.search(rf"(?<![-\w.]){re.escape(name)}(?:\.{re.escape(obs.namespace)})?(?:\.svc(?:\.[\w.-]+)?)?(?::\d+)?(?![-\w])", text):
            mp = re.search(rf"(?<![-\w.]){re.escape(name)}(?:\.[\w.-]+)?:(\d+)", text)
            used = next((p for p in ports if mp and str(p.get("port")) == mp.group(1)), None) or (ports[0] if len(ports) == 1 else None)
        if used is None:
            continue
        sel = parse_selector(svc.get("selector"))
        if sel is None or sel.is_empty:
            continue
        selected = [q for q in ctx.got.pods.get(obs.namespace, []) if label_selects(sel, dict(q.labels))]
        if not selected:
            continue
        target = used.get("target_port", used.get("targetPort", used.get("port")))
        r = await ctx.read("get_pod", {"namespace": obs.namespace, "name": sorted(selected, key=lambda q: (not q.healthy, q.name))[0].name})
        if not r.ok or not isinstance(r.data, dict):
            continue
        declared = _container_ports(r.data.get("pod", r.data))
        if not declared:
            continue  # the pods declare no ports: nothing to compare with
        numeric = str(target).isdigit()
        served = any((str(pt) == str(target)) if numeric else (pn == str(target)) for _c, pn, pt in declared)
        if served:
            continue
        raw_eps = svc.get("endpoints")
        eps: dict[str, Any] = raw_eps if isinstance(raw_eps, dict) else {}
        ep_ports = ", ".join(str(x.get("port")) for x in (eps.get("ports") or []) if isinstance(x, dict))
        ready = len(eps.get("ready") or []) if eps else 0
        listen = ", ".join(f"{pt}" + (f" ({pn})" if pn else "") for _c, pn, pt in declared)
        pick = next((pt for _c, pn, pt in declared if pn and pn == used.get("name")), None) or next(
            (pt for _c, pn, pt in declared if pn in ("http", "web", "api", "grpc")), None
        ) or declared[0][2]
        wl = selected[0].workload
        note = (
            f"Service {name} (ClusterIP {ip}) sends port {used.get('port')} to targetPort {target}"
            + (f" (its Endpoints list port {ep_ports} on {ready} ready pod(s))" if ep_ports else "")
            + f", but the pods it selects ({wl[0]} {wl[1]}) declare containerPort {listen}: nothing listens on "
            f"{target}, so connections through the Service are refused although the pods are Ready. "
            f"The log of {obs.kind} {obs.name} shows it: {clip(lines[-1], 200)}"
        )
        patch = json.dumps(
            {"spec": {"ports": [{"port": used.get("port"), "targetPort": int(pick) if pick.isdigit() else pick}]}}, separators=(",", ":")
        )
        variables = {
            "service_target_port": str(target),
            "service_port": str(used.get("port")),
            "container_port": str(pick),
            "service_patch": f"kubectl patch service {name} -n {obs.namespace} -p '{patch}'",
            "client": f"{obs.kind} {obs.name}",
        }
        svc_result = ctx.got.results.get(("list_services", obs.namespace))
        cites: list[tuple[Any, str, list[str]]] = []
        if svc_result is not None:
            cites.append((svc_result, f"Service {name}: port {used.get('port')} → targetPort {target}", [f"targetPort {target}", *([f"endpoints port {ep_ports}"] if ep_ports else [])]))
        cites.append((r, f"pod {selected[0].name}: containerPort {listen}", [f"containerPort {listen}"]))
        ctx.got.service_notes.setdefault((obs.namespace, name), []).append((note, variables, cites))
        obs.derive(
            "dependency",
            f"The refused connections go to Service {name}, whose targetPort {target} is not a port its pods serve ({listen}).",
        )


def service_findings(
    got: Collected,
    namespaces: list[str],
    wanted: set[tuple[str, str]],
    log: EvidenceLog,
    named: set[tuple[str, str]] | None = None,
) -> list[WorkloadObservation]:
    """Services (named, or named in a failing workload's logs) whose selector matches no pod.
    ``named``: the ones the question or alert names (all of ``wanted`` when not given); the others
    were reached through a caller's failing connections and rank as its cause, not above it."""
    out = []
    for ns in namespaces:
        r = got.results.get(("list_services", ns))
        for svc in got.services.get(ns, []):
            name = str(svc.get("name"))
            if (ns, name) not in wanted and (ns, name) not in got.service_notes:
                continue
            sel = parse_selector(svc.get("selector"))
            if sel is None or sel.is_empty:
                continue  # no selector: endpoints are managed by hand
            notes = got.service_notes.get((ns, name))
            if notes:
                obs = WorkloadObservation(ns, "Service", name, named=named is None or (ns, name) in named)
                for note, variables, cites in notes[:1]:
                    obs.derive("service_port", note)
                    obs.variables.update(variables)
                    obs.cites.extend(cites)
                out.append(obs)
                continue
            eps = svc.get("endpoints") or {}
            ready = eps.get("ready") if isinstance(eps, dict) else None
            if ready:
                continue
            pods = got.pods.get(ns, [])
            matching = [p for p in pods if label_selects(sel, dict(p.labels))]
            if matching:
                continue  # pods exist but are not ready: their own failure is the cause
            sel_text = str(sel)
            keys = {r.key for r in sel.requirements}
            near = [p for p in pods if any(r.key in dict(p.labels) and r.matches(dict(p.labels)) for r in sel.requirements)]
            hint = ""
            if near:
                lab = ",".join(f"{k}={v}" for k, v in sorted(dict(near[0].labels).items()) if k in keys)
                hint = f" The closest pods ({near[0].workload[0]} {near[0].workload[1]}) have {lab}."
            obs = WorkloadObservation(ns, "Service", name, named=named is None or (ns, name) in named)
            obs.derive(
                "service",
                f"Service {name} in {ns} selects {sel_text}, but no pod has those labels, so it has no ready endpoints "
                f"and its traffic goes nowhere.{hint}",
            )
            if r is not None:
                obs.cites.append((r, f"Service {name}: selector {sel_text}, 0 ready endpoints", [f"selector {sel_text}", "endpoints: none"]))
            out.append(obs)
    return out


async def unserved_target_port(ctx: FollowUpContext, namespace: str, svc: dict[str, Any]) -> None:
    """A Service the question is about whose pods are Ready but that has no ready endpoints: its
    ``targetPort`` (a name, or a number) is not a port the pods declare, so the endpoints controller
    has nothing to route to. Kept for the Service (``Collected.service_notes``)."""
    name = str(svc.get("name") or "")
    sel = parse_selector(svc.get("selector"))
    if not name or sel is None or sel.is_empty or (namespace, name) in ctx.got.service_notes:
        return
    eps = svc.get("endpoints") if isinstance(svc.get("endpoints"), dict) else None
    if eps is None or eps.get("ready"):
        return
    selected = [q for q in ctx.got.pods.get(namespace, []) if label_selects(sel, dict(q.labels))]
    if not selected or not all(q.healthy for q in selected):
        return
    r = await ctx.read("get_pod", {"namespace": namespace, "name": sorted(q.name for q in selected)[0]})
    if not r.ok or not isinstance(r.data, dict):
        return
    declared = _container_ports(r.data.get("pod", r.data))
    if not declared:
        return
    for port in [p for p in svc.get("ports") or [] if isinstance(p, dict)]:
        target = str(port.get("target_port", port.get("targetPort", port.get("port"))))
        served = any((pt == target) if target.isdigit() else (pn == target) for _c, pn, pt in declared)
        if served:
            continue
        listen = ", ".join(f"{pt}" + (f" ({pn})" if pn else "") for _c, pn, pt in declared)
        wl = selected[0].workload
        kind = "named port" if not target.isdigit() else "port"
        note = (
            f"Service {name} sends port {port.get('port')} to targetPort {target}, but the pods it selects "
            f"({wl[0]} {wl[1]}, all Ready) declare no {kind} {target} (they declare {listen}), so it has no ready "
            "endpoints and every request through it fails."
        )
        pick = next((pt for _c, pn, pt in declared if pn), declared[0][2])
        patch = json.dumps({"spec": {"ports": [{"port": port.get("port"), "targetPort": int(pick) if pick.isdigit() else pick}]}}, separators=(",", ":"))
        variables = {
            "service_target_port": target, "service_port": str(port.get("port")), "container_port": str(pick),
            "service_patch": f"kubectl patch service {name} -n {namespace} -p '{patch}'", "client": f"{wl[0]} {wl[1]}",
        }
        listed = ctx.got.results.get(("list_services", namespace))
        cites: list[tuple[Any, str, list[str]]] = []
        if listed is not None:
            cites.append((listed, f"Service {name}: port {port.get('port')} → targetPort {target}, 0 ready endpoints", [f"targetPort {target}", "endpoints: none ready"]))
        cites.append((r, f"pod {selected[0].name}: containerPort {listen}", [f"containerPort {listen}"]))
        ctx.got.service_notes.setdefault((namespace, name), []).append((note, variables, cites))
        return
