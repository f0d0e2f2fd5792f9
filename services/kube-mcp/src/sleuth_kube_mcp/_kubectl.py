"""The kubectl command a person would run to read what a tool read (quoted in error results)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

__all__ = ["kubectl_for"]


def _q(v: Any) -> str:
    return shlex.quote(str(v))


def kubectl_for(tool: str, args: Mapping[str, Any]) -> str:
    ns = f" -n {_q(args['namespace'])}" if args.get("namespace") else ""
    if tool == "list_pods":
        cmd = f"kubectl get pods{ns}"
        if args.get("label_selector"):
            cmd += f" -l {_q(args['label_selector'])}"
        if args.get("field_selector"):
            cmd += f" --field-selector {_q(args['field_selector'])}"
        return cmd + " -o wide"
    if tool == "get_pod":
        return f"kubectl get pod {_q(args.get('name', ''))}{ns} -o yaml"
    if tool == "pod_logs":
        cmd = f"kubectl logs {_q(args.get('name', ''))}{ns}"
        if args.get("container"):
            cmd += f" -c {_q(args['container'])}"
        if args.get("previous"):
            cmd += " --previous"
        if args.get("tail_lines"):
            cmd += f" --tail={int(args['tail_lines'])}"
        if args.get("since_seconds"):
            cmd += f" --since={int(args['since_seconds'])}s"
        return cmd + " --timestamps"
    if tool == "list_events":
        sel = []
        if args.get("involved_object_name"):
            sel.append(f"involvedObject.name={args['involved_object_name']}")
        if args.get("involved_object_kind"):
            sel.append(f"involvedObject.kind={args['involved_object_kind']}")
        types = args.get("types") or []
        if len(types) == 1:
            sel.append(f"type={types[0]}")
        cmd = f"kubectl get events{ns}"
        if sel:
            cmd += f" --field-selector {_q(','.join(sel))}"
        return cmd + " --sort-by=.lastTimestamp"
    if tool == "list_workloads":
        kinds = args.get("kinds") or [
            "deployments",
            "statefulsets",
            "daemonsets",
            "replicasets",
            "jobs",
            "cronjobs",
        ]
        return f"kubectl get {_q(','.join(kinds))}{ns} -o wide"
    if tool == "list_services":
        return f"kubectl get services,endpoints{ns} -o wide"
    if tool == "list_pvcs":
        return f"kubectl get pvc{ns}"
    if tool == "list_quotas":
        return f"kubectl describe resourcequota,limitrange{ns}"
    if tool == "list_nodes":
        return "kubectl get nodes -o wide"
    if tool == "get_resource":
        return f"kubectl get {_q(str(args.get('kind', '')).lower())} {_q(args.get('name', ''))}{ns} -o yaml"
    if tool == "list_resources":
        cmd = f"kubectl get {_q(str(args.get('kind', '')).lower())}{ns}"
        if args.get("label_selector"):
            cmd += f" -l {_q(args['label_selector'])}"
        return cmd + " -o yaml"
    if tool == "list_storage":
        kinds = args.get("kinds") or ["persistentvolumes", "storageclasses", "ingressclasses"]
        return f"kubectl get {_q(','.join(kinds))}"
    if tool == "analyze_logs":
        sel = args.get("label_selector") or (
            f"<selector of {args.get('kind') or 'workload'} {args.get('workload')}>"
        )
        return f"kubectl logs{ns} -l {_q(sel)} --all-containers --prefix --timestamps --tail={int(args.get('tail_lines') or 200)}"
    if tool == "subgraph":
        return f"kubectl get all,ingress,hpa,pdb,networkpolicy,pvc,configmap{ns} -o wide"
    return ""
