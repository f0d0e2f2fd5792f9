"""A Toolbox over a snapshot directory, for fast unit tests of the investigator. It answers
with raw Kubernetes objects (kube-mcp may shape records differently; the investigator reads
both) and applies the real scope filter, like ScopedMcpClient does."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from sleuth_common.config import ClusterSettings
from sleuth_common.mcp import ToolResult, kubectl_command
from sleuth_common.scope import Scope, check_arguments, filter_result, pinned_by_arguments

TOOLS = {"list_pods", "get_pod", "pod_logs", "list_events", "list_workloads", "list_nodes", "get_resource"}
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet"}


def load_objects(snapshot: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((snapshot / "cluster").glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if not doc:
                continue
            out.extend(doc.get("items", []) if doc.get("kind", "").endswith("List") else [doc])
    return out


class SnapshotTools:
    def __init__(self, snapshot: Path, scope: Scope, broken: set[str] | None = None) -> None:
        self.snapshot = snapshot
        self.scope = scope
        self.objects = load_objects(snapshot)
        self.broken = broken or set()
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def has_tool(self, name: str) -> bool:
        return name in TOOLS

    def _of(self, kind: str, ns: str | None) -> list[dict[str, Any]]:
        return [
            o for o in self.objects if o["kind"] == kind and (not ns or o["metadata"].get("namespace") == ns)
        ]

    async def call(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> ToolResult:
        args = {k: v for k, v in (args or {}).items() if v is not None}
        self.calls.append((tool, args))
        base = {"tool": tool, "args": args, "command": kubectl_command(tool, args), "cluster": "demo"}
        refusal = check_arguments(tool, args, self.scope)
        if refusal:
            return ToolResult(status="denied", error=refusal.message, **base)
        if tool in self.broken:
            return ToolResult(status="error", error="unavailable: boom", **base)
        ns = args.get("namespace")
        if tool == "list_pods":
            data: Any = {"items": self._of("Pod", ns)}
        elif tool == "get_pod":
            data = next(iter(p for p in self._of("Pod", ns) if p["metadata"]["name"] == args["name"]), {})
        elif tool == "list_events":
            evs = self._of("Event", ns)
            if args.get("involved_object_name"):
                evs = [e for e in evs if e["involvedObject"].get("name") == args["involved_object_name"]]
            data = {"items": evs}
        elif tool == "list_workloads":
            data = {
                "items": [
                    o
                    for o in self.objects
                    if o["kind"] in WORKLOAD_KINDS and o["metadata"].get("namespace") == ns
                ]
            }
        elif tool == "pod_logs":
            suffix = ".previous.log" if args.get("previous") else ".log"
            f = self.snapshot / "logs" / ns / args["name"] / f"{args.get('container')}{suffix}"
            data = f.read_text() if f.exists() else ""
        elif tool == "get_resource":
            found = [o for o in self._of(args["kind"], ns) if o["metadata"]["name"] == args["name"]]
            if not found:
                return ToolResult(status="error", error=f'{args["kind"]} "{args["name"]}" not found', **base)
            data = found[0]
        else:
            data = {"items": self._of("Node", None)}
        text = data if isinstance(data, str) else json.dumps(data)
        out = filter_result(text, self.scope, pinned=pinned_by_arguments(tool, args, self.scope))
        if out.outcome == "withheld":
            return ToolResult(status="withheld", error=out.reason, **base)
        shown = out.data if isinstance(out.data, str) else json.dumps(out.data)
        return ToolResult(status="ok", data=out.data, text=shown, removed=out.removed, **base)


def factory(snapshot: Path, broken: set[str] | None = None, seen: list[SnapshotTools] | None = None):
    @contextlib.asynccontextmanager
    async def make(cluster: ClusterSettings, scope: Scope) -> AsyncIterator[SnapshotTools]:
        tools = SnapshotTools(snapshot, scope, broken)
        if seen is not None:
            seen.append(tools)
        yield tools

    return make
