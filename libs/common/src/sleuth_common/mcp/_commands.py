"""The replayable ``kubectl`` equivalent of a kube-mcp tool call, so a person can run exactly
what Sleuth read (DESIGN §3: every evidence item carries its command)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

__all__ = ["kubectl_command"]

_WORKLOAD_KINDS = "deployments,statefulsets,daemonsets,jobs,cronjobs"


def _q(value: Any) -> str:
    return shlex.quote(str(value))


def _ns(args: Mapping[str, Any]) -> str:
    ns = args.get("namespace")
    return f" -n {_q(ns)}" if ns else " -A"


def kubectl_command(tool: str, args: Mapping[str, Any] | None) -> str:
    """The kubectl command that reads what ``tool`` read, or "" when there is none.

    The one table for kube-mcp's tools: kube-mcp quotes it in its error results, the investigators
    in their evidence."""
    a = dict(args or {})
    if tool == "list_pods":
        cmd = f"kubectl get pods{_ns(a)}"
        if a.get("label_selector"):
            cmd += f" -l {_q(a['label_selector'])}"
        if a.get("field_selector"):
            cmd += f" --field-selector {_q(a['field_selector'])}"
        return cmd + " -o wide"
    if tool == "get_pod":
        return f"kubectl get pod {_q(a.get('name', ''))}{_ns(a)} -o yaml"
    if tool == "pod_logs":
        cmd = f"kubectl logs {_q(a.get('name', ''))}{_ns(a)}"
        if a.get("container"):
            cmd += f" -c {_q(a['container'])}"
        if a.get("previous"):
            cmd += " --previous"
        if a.get("tail_lines"):
            cmd += f" --tail={int(a['tail_lines'])}"
        if a.get("since_seconds"):
            cmd += f" --since={int(a['since_seconds'])}s"
        return cmd
    if tool == "list_events":
        cmd = f"kubectl get events{_ns(a)}"
        selectors = []
        if a.get("involved_object_name"):
            selectors.append(f"involvedObject.name={a['involved_object_name']}")
        if a.get("involved_object_kind"):
            selectors.append(f"involvedObject.kind={a['involved_object_kind']}")
        types = a.get("types") or []
        if isinstance(types, list | tuple) and len(types) == 1:
            selectors.append(f"type={types[0]}")
        if selectors:
            cmd += f" --field-selector {_q(','.join(selectors))}"
        return cmd
    if tool == "list_workloads":
        kinds = a.get("kinds")
        kinds_arg = (
            ",".join(kinds) if isinstance(kinds, list | tuple) and kinds else (kinds or _WORKLOAD_KINDS)
        )
        return f"kubectl get {_q(kinds_arg)}{_ns(a)} -o wide"
    if tool == "list_services":
        return f"kubectl get services,endpoints{_ns(a)} -o wide"
    if tool == "list_pvcs":
        return f"kubectl get pvc{_ns(a)}"
    if tool == "list_quotas":
        return f"kubectl describe resourcequota,limitrange{_ns(a)}"
    if tool == "list_nodes":
        return "kubectl get nodes -o wide"
    if tool == "list_resources":
        cmd = f"kubectl get {_q(str(a.get('kind', '')).lower())}{_ns(a)}"
        if a.get("label_selector"):
            cmd += f" -l {_q(a['label_selector'])}"
        return cmd + " -o yaml"
    if tool == "list_storage":
        kinds = a.get("kinds")
        kinds_arg = ",".join(kinds) if isinstance(kinds, list | tuple) and kinds else (
            kinds or "persistentvolumes,storageclasses,ingressclasses")
        return f"kubectl get {_q(kinds_arg)}"
    if tool == "analyze_logs":
        tail = f" --tail={int(a['tail_lines'])}" if a.get("tail_lines") else ""
        if a.get("label_selector"):
            return f"kubectl logs{_ns(a)} -l {_q(a['label_selector'])} --all-containers --prefix --timestamps{tail}"
        kind = str(a.get("kind") or "deployment").lower()
        return (f"kubectl logs {_q(kind + '/' + str(a.get('workload', '')))}{_ns(a)} --all-pods --all-containers "
                f"--timestamps{tail}")
    if tool == "subgraph":
        return f"kubectl get all,ingress,hpa,pdb,networkpolicy,pvc{_ns(a)} -o wide"
    if tool == "get_resource":
        ns = f" -n {_q(a['namespace'])}" if a.get("namespace") else ""
        return f"kubectl get {_q(str(a.get('kind', '')).lower())} {_q(a.get('name', ''))}{ns} -o yaml"
    return ""
