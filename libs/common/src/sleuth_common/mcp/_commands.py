"""The replayable ``kubectl`` equivalent of a kube-mcp tool call, so a person can run exactly
what Sleuth read (DESIGN §3: every evidence item carries its command)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["kubectl_command"]

_WORKLOAD_KINDS = "deployments,statefulsets,daemonsets,jobs,cronjobs"
_STORAGE_KINDS = "persistentvolumes,storageclasses,ingressclasses"


def _q(value: Any) -> str:
    return shlex.quote(str(value))


def _ns(args: Mapping[str, Any]) -> str:
    ns = args.get("namespace")
    return f" -n {_q(ns)}" if ns else " -A"


def _list_pods(a: Mapping[str, Any]) -> str:
    cmd = f"kubectl get pods{_ns(a)}"
    if a.get("label_selector"):
        cmd += f" -l {_q(a['label_selector'])}"
    if a.get("field_selector"):
        cmd += f" --field-selector {_q(a['field_selector'])}"
    return cmd + " -o wide"


def _pod_logs(a: Mapping[str, Any]) -> str:
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


def _list_events(a: Mapping[str, Any]) -> str:
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


def _kinds_arg(a: Mapping[str, Any], default: str) -> Any:
    """The ``kinds`` argument as kubectl's comma list: a list joined, a string as given, else ``default``."""
    kinds = a.get("kinds")
    return ",".join(kinds) if isinstance(kinds, list | tuple) and kinds else (kinds or default)


def _list_resources(a: Mapping[str, Any]) -> str:
    cmd = f"kubectl get {_q(str(a.get('kind', '')).lower())}{_ns(a)}"
    if a.get("label_selector"):
        cmd += f" -l {_q(a['label_selector'])}"
    return cmd + " -o yaml"


def _analyze_logs(a: Mapping[str, Any]) -> str:
    tail = f" --tail={int(a['tail_lines'])}" if a.get("tail_lines") else ""
    if a.get("label_selector"):
        return f"kubectl logs{_ns(a)} -l {_q(a['label_selector'])} --all-containers --prefix --timestamps{tail}"
    kind = str(a.get("kind") or "deployment").lower()
    return (f"kubectl logs {_q(kind + '/' + str(a.get('workload', '')))}{_ns(a)} --all-pods --all-containers "
            f"--timestamps{tail}")


def _get_resource(a: Mapping[str, Any]) -> str:
    ns = f" -n {_q(a['namespace'])}" if a.get("namespace") else ""
    return f"kubectl get {_q(str(a.get('kind', '')).lower())} {_q(a.get('name', ''))}{ns} -o yaml"


_COMMANDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "list_pods": _list_pods,
    "get_pod": lambda a: f"kubectl get pod {_q(a.get('name', ''))}{_ns(a)} -o yaml",
    "pod_logs": _pod_logs,
    "list_events": _list_events,
    "list_workloads": lambda a: f"kubectl get {_q(_kinds_arg(a, _WORKLOAD_KINDS))}{_ns(a)} -o wide",
    "list_services": lambda a: f"kubectl get services,endpoints{_ns(a)} -o wide",
    "list_pvcs": lambda a: f"kubectl get pvc{_ns(a)}",
    "list_quotas": lambda a: f"kubectl describe resourcequota,limitrange{_ns(a)}",
    "list_nodes": lambda a: "kubectl get nodes -o wide",
    "list_resources": _list_resources,
    "list_storage": lambda a: f"kubectl get {_q(_kinds_arg(a, _STORAGE_KINDS))}",
    "analyze_logs": _analyze_logs,
    "subgraph": lambda a: f"kubectl get all,ingress,hpa,pdb,networkpolicy,pvc{_ns(a)} -o wide",
    "get_resource": _get_resource,
}


def kubectl_command(tool: str, args: Mapping[str, Any] | None) -> str:
    """The kubectl command that reads what ``tool`` read, or "" when there is none.

    The one table for kube-mcp's tools: kube-mcp quotes it in its error results, the investigators
    in their evidence."""
    command = _COMMANDS.get(tool)
    return command(dict(args or {})) if command else ""
