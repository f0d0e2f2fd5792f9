"""Collect what the rules read, through the same scoped tools as an investigation (every read as
the asker, every result through the scope filter): per namespace in scope the workloads, pods,
PodDisruptionBudgets, HPAs and PVCs; then each object the rules judge by its pod template in
full; then PVC usage when a Prometheus-style tool answers. A kind the asker may not list is
absent from ``Inventory.listed`` for that namespace (and a note says so), never an error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sleuth_agent.rca._collect import Toolbox
from sleuth_agent.report._model import TEMPLATE_KINDS, Inventory, K8sObject
from sleuth_common.k8s import parse_time
from sleuth_common.mcp import ToolResult
from sleuth_common.messages import NotChecked

__all__ = ["Reads", "collect"]

Progress = Callable[[str, str], Awaitable[None]]

WORKLOAD_KINDS = {
    "deployments": "Deployment", "statefulsets": "StatefulSet", "daemonsets": "DaemonSet",
    "replicasets": "ReplicaSet", "jobs": "Job", "cronjobs": "CronJob",
}
PVC_USAGE_QUERY = "kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes"
_PROMQL_TOOLS = ("execute_query", "query_prometheus", "prometheus_query", "promql_query", "query")
_PLURAL = {
    "PodDisruptionBudget": "PodDisruptionBudgets", "HorizontalPodAutoscaler": "HorizontalPodAutoscalers",
    "PersistentVolumeClaim": "PersistentVolumeClaims", "Pod": "Pods",
}
_TIME_KEYS = {"created", "start_time", "completion_time", "last_transition", "last_schedule_time",
              "last_successful_time", "started_at", "finished_at"}


@dataclass
class Reads:
    """Bookkeeping of the calls (counts only, never data), and what could not be read."""

    calls: int = 0
    removed: int = 0
    withheld: int = 0
    denied: int = 0
    failed: dict[str, dict[str, str]] = field(default_factory=dict)  # kind → namespace → reason
    not_checked: list[NotChecked] = field(default_factory=list)
    omitted: int = 0
    uncounted: int = 0  # lists cut at the listing limit whose rest the API server did not count
    missing_tools: set[str] = field(default_factory=set)

    def note(self, result: ToolResult, kind: str, namespace: str) -> None:
        """Count one call; a failed list of ``kind`` leaves ``namespace`` out for it."""
        self.calls += result.calls
        self.removed += result.removed
        if result.status == "withheld":
            self.withheld += 1
        elif result.status == "denied":
            self.denied += 1
        if not result.ok and kind:
            self.failed.setdefault(kind, {})[namespace] = _reason(result)
        elif isinstance(result.data, Mapping) and isinstance(result.data.get("omitted"), int):
            self.omitted += int(result.data["omitted"])
        elif isinstance(result.data, Mapping) and result.data.get("complete") is False:
            self.uncounted += 1

    def notes(self, cluster: str) -> list[str]:
        out = []
        for kind, by_ns in sorted(self.failed.items()):
            plural = _PLURAL.get(kind, kind + "s")
            reasons = sorted(set(by_ns.values()))
            out.append(f"{plural} could not be listed in {', '.join(sorted(by_ns))} on {cluster} "
                       f"({'; '.join(reasons)}): none of them is in this report")
        for tool in sorted(self.missing_tools):
            out.append(f"The tools of {cluster} offer no {tool}: what it reads is not in this report")
        if self.omitted:
            out.append(f"{self.omitted} object(s) on {cluster} were over the tools' listing limit and not checked")
        if self.uncounted:
            out.append(f"{self.uncounted} list(s) on {cluster} held more than the tools' listing limit: "
                       "the objects past it were not checked")
        if self.removed:
            out.append(f"{self.removed} record(s) from namespaces outside your access were hidden")
        if self.withheld:
            out.append(f"{self.withheld} result(s) could not be checked against your access and were withheld")
        return out


def _reason(result: ToolResult) -> str:
    text = f"{result.reason} {result.error}".lower()
    if "forbidden" in text or "403" in text:
        return "your access does not allow it"
    if result.status == "denied":
        return "outside your access"
    if result.status == "withheld":
        return "withheld: could not be checked against your access"
    return "the read failed" + (": unavailable" if "unavailable" in text else "")


class _Reader:
    def __init__(self, tools: Toolbox, reads: Reads, timeout: float, concurrency: int) -> None:
        self.tools, self.reads, self.timeout = tools, reads, timeout
        self._slots = asyncio.Semaphore(concurrency)

    async def call(self, tool: str, args: dict[str, Any], kind: str, namespace: str) -> ToolResult | None:
        if not self.tools.has_tool(tool):
            self.reads.missing_tools.add(tool)
            return None
        async with self._slots:
            result = await self.tools.call(tool, args, timeout=self.timeout)
        self.reads.note(result, kind, namespace)
        return result


def _items(result: ToolResult | None, key: str) -> list[Mapping[str, Any]] | None:
    if result is None or not result.ok or not isinstance(result.data, Mapping):
        return None
    value = result.data.get(key, result.data.get("items"))
    return [x for x in value if isinstance(x, Mapping)] if isinstance(value, list) else []


def _obj(kind: str, ns: str, rec: Mapping[str, Any]) -> K8sObject:
    return K8sObject(kind=kind, namespace=str(rec.get("namespace") or ns), name=str(rec.get("name") or ""), record=rec)


async def _namespace(reader: _Reader, inv: Inventory, ns: str) -> None:
    """The lists of one namespace, in parallel."""
    calls = {
        "workloads": reader.call("list_workloads", {"namespace": ns}, "", ns),
        "pods": reader.call("list_pods", {"namespace": ns}, "Pod", ns),
        "pdbs": reader.call("list_resources", {"kind": "pdb", "namespace": ns}, "PodDisruptionBudget", ns),
        "hpas": reader.call("list_resources", {"kind": "hpa", "namespace": ns}, "HorizontalPodAutoscaler", ns),
        "pvcs": reader.call("list_pvcs", {"namespace": ns}, "PersistentVolumeClaim", ns),
    }
    got = dict(zip(calls, await asyncio.gather(*calls.values()), strict=True))
    result = got["workloads"]
    workloads = _items(result, "workloads")
    if result is not None and workloads is not None:
        # kinds the asker may not list come back as "errors" beside the others
        failed = {str(e.get("kind")) for e in (result.data.get("errors") or []) if isinstance(e, Mapping)}
        for plural, kind in WORKLOAD_KINDS.items():
            if plural in failed:
                reader.reads.failed.setdefault(kind, {})[ns] = "your access does not allow it"
            else:
                inv.mark_listed(kind, ns)
        for rec in workloads:
            if rec.get("kind") in WORKLOAD_KINDS.values():
                inv.add(_obj(str(rec["kind"]), ns, rec))
    elif result is not None:
        # list_workloads failed as a whole: every workload kind is missing here.
        reason = _reason(result)
        for kind in WORKLOAD_KINDS.values():
            if kind != "ReplicaSet":
                reader.reads.failed.setdefault(kind, {})[ns] = reason
    for key, kind, field_name in (("pods", "Pod", "pods"), ("pdbs", "PodDisruptionBudget", "items"),
                                  ("hpas", "HorizontalPodAutoscaler", "items"), ("pvcs", "PersistentVolumeClaim", "pvcs")):
        records = _items(got[key], field_name)
        if records is None:
            continue
        inv.mark_listed(kind, ns)
        for rec in records:
            inv.add(_obj(kind, ns, rec))


async def _full(reader: _Reader, inv: Inventory, obj: K8sObject) -> K8sObject:
    """One judged object read in full (its pod template); a failure makes it "not checked"."""
    args = {"kind": obj.kind, "name": obj.name, "namespace": obj.namespace}
    result = await reader.call("get_resource", args, "", obj.namespace)
    data = result.data if result is not None and result.ok and isinstance(result.data, Mapping) else None
    if data is not None and (data.get("metadata") or {}).get("name") == obj.name:
        return K8sObject(obj.kind, obj.namespace, obj.name, obj.record, data)
    why = _reason(result) if result is not None else "get_resource is not offered"
    reader.reads.not_checked.append(NotChecked(cluster=inv.cluster, namespace=obj.namespace, kind=obj.kind,
                                               name=obj.name, reason=f"could not be read in full ({why})"))
    return obj


def _promql_tool(tools: Toolbox) -> str:
    listed = getattr(tools, "tools", None) or []
    for info in listed:
        name = str(getattr(info, "name", ""))
        props = (getattr(info, "input_schema", {}) or {}).get("properties") or {}
        text = f"{name} {getattr(info, 'description', '')}".lower()
        if "query" in props and ("promql" in text or "prometheus" in text) and name in _PROMQL_TOOLS:
            return name
    return ""


def _vector(data: Any) -> list[Mapping[str, Any]]:
    """The samples of a Prometheus instant query (the HTTP API's JSON, or its ``data`` part)."""
    if isinstance(data, Mapping):
        if isinstance(data.get("result"), list):
            return [s for s in data["result"] if isinstance(s, Mapping)]
        return _vector(data.get("data"))
    return []


async def _pvc_usage(reader: _Reader, tools: Toolbox, inv: Inventory) -> None:
    tool = _promql_tool(tools)
    if not tool:
        inv.metrics_note = "no Prometheus tool is configured for this cluster, so volume usage is unknown"
        return
    result = await reader.call(tool, {"query": PVC_USAGE_QUERY}, "", "")
    if result is None or not result.ok:
        inv.metrics_note = f"the volume usage query failed ({_reason(result) if result else 'no tool'})"
        return
    usage: dict[tuple[str, str], float] = {}
    for sample in _vector(result.data):
        metric = sample.get("metric") or {}
        value = sample.get("value")
        try:
            used = float(value[1]) if isinstance(value, list | tuple) and len(value) > 1 else None
        except (TypeError, ValueError):
            used = None
        ns, claim = metric.get("namespace"), metric.get("persistentvolumeclaim")
        if used is not None and ns and claim:
            usage[(str(ns), str(claim))] = used
    inv.pvc_usage = usage


def _latest(records: list[Mapping[str, Any]]) -> datetime | None:
    """The latest timestamp the records carry: a lower bound on "now" that holds for a snapshot
    replayed long after it was taken (as the investigator's reference time)."""
    best: datetime | None = None
    stack: list[Any] = list(records)
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for k, v in item.items():
                if isinstance(v, Mapping | list):
                    stack.append(v)
                elif k in _TIME_KEYS and isinstance(v, str):
                    t = parse_time(v)
                    if t is not None and (best is None or t > best):
                        best = t
        elif isinstance(item, list):
            stack.extend(item)
    return best


async def collect(
    tools: Toolbox,
    inv: Inventory,
    reads: Reads,
    *,
    timeout: float = 10.0,  # noqa: ASYNC109
    concurrency: int = 8,
    progress: Progress | None = None,
) -> None:
    """Fill ``inv`` (kept by the caller, so a run that overruns its deadline still reports what
    was read) for every namespace of ``inv.namespaces``."""
    reader = _Reader(tools, reads, timeout, concurrency)
    if progress:
        await progress("collecting", f"listing workloads, pods, PDBs, HPAs and PVCs in {len(inv.namespaces)} namespace(s)")
    await asyncio.gather(*(_namespace(reader, inv, ns) for ns in inv.namespaces))
    judged = [(kind, i) for kind in TEMPLATE_KINDS for i, o in enumerate(inv.objects.get(kind, ())) if not o.owned]
    if progress:
        await progress("collecting", f"reading {len(judged)} object(s) in full")

    async def full(kind: str, i: int) -> None:
        # in place, as each read lands: a run cut by its deadline keeps what it read
        inv.objects[kind][i] = await _full(reader, inv, inv.objects[kind][i])

    await asyncio.gather(*(full(kind, i) for kind, i in judged))
    await _pvc_usage(reader, tools, inv)
    inv.now = _latest([o.record for objs in inv.objects.values() for o in objs])
