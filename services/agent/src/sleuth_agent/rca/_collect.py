"""Collect: read pods, workloads and events of the target namespaces, then the details of each
failing workload (the pod, its events, current and previous logs) in parallel through the
scoped tools. Every call goes through the ``EvidenceLog``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import EventView, PodView, WorkloadView, items_of, log_text
from sleuth_common.mcp import ToolResult

__all__ = ["Collected", "Toolbox", "collect_details", "collect_namespaces"]

Progress = Callable[[str, str], Awaitable[None]]


class Toolbox(Protocol):
    """What the investigator needs from the tools of one cluster (``ClusterTools`` fits)."""

    async def call(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> ToolResult: ...

    def has_tool(self, name: str) -> bool: ...


@dataclass
class Collected:
    """What the namespace-wide reads returned, keyed by namespace."""

    pods: dict[str, list[PodView]] = field(default_factory=dict)
    workloads: dict[str, list[WorkloadView]] = field(default_factory=dict)
    events: dict[str, list[EventView]] = field(default_factory=dict)
    services: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    results: dict[tuple[str, str], ToolResult] = field(default_factory=dict)  # (tool, namespace)
    # Follow-ups' findings about a Service, by (namespace, name): (text, variables, cites)
    service_notes: dict[tuple[str, str], list[tuple[str, dict[str, str], list[tuple[Any, str, list[str]]]]]] = field(
        default_factory=dict
    )

    def observations(self) -> dict[tuple[str, str, str], WorkloadObservation]:
        """Pods grouped by owning workload, with the events about them."""
        out: dict[tuple[str, str, str], WorkloadObservation] = {}
        for ns, pods in self.pods.items():
            for pod in pods:
                kind, name = pod.workload
                obs = out.setdefault((ns, kind, name), WorkloadObservation(ns, kind, name))
                obs.pods.append(pod)
        for ns, workloads in self.workloads.items():
            for w in workloads:
                if w.kind == "ReplicaSet" or not w.name:
                    continue
                obs = out.setdefault((ns, w.kind, w.name), WorkloadObservation(ns, w.kind, w.name))
                obs.workload = w
        for ns, events in self.events.items():
            for ev in events:
                for (ons, _kind, name), obs in out.items():
                    if ons != ns:
                        continue
                    if (
                        ev.object_name == name
                        or ev.object_name in {p.name for p in obs.pods}
                        or (ev.object_name.startswith(name + "-") and ev.object_kind in ("ReplicaSet", "Job"))
                    ):
                        obs.events.append(ev)
        return out


async def _call(
    tools: Toolbox,
    log: EvidenceLog,
    tool: str,
    args: dict[str, Any],
    timeout: float,  # noqa: ASYNC109
) -> ToolResult:
    if not tools.has_tool(tool):
        # Not offered to this caller (or not by this server): nothing was read, nothing failed.
        return ToolResult(tool=tool, status="error", args=args, error=f"the server has no {tool} tool")
    return log.record(await tools.call(tool, args, timeout=timeout))


async def collect_namespaces(
    tools: Toolbox,
    log: EvidenceLog,
    namespaces: list[str],
    timeout: float,  # noqa: ASYNC109
) -> Collected:
    """list_pods, list_workloads and list_events for every namespace, in parallel."""
    got = Collected()
    jobs: list[tuple[str, str, Awaitable[ToolResult]]] = []
    for ns in namespaces:
        jobs.append(("list_pods", ns, _call(tools, log, "list_pods", {"namespace": ns}, timeout)))
        jobs.append(("list_workloads", ns, _call(tools, log, "list_workloads", {"namespace": ns}, timeout)))
        jobs.append(("list_events", ns, _call(tools, log, "list_events", {"namespace": ns}, timeout)))
        jobs.append(("list_services", ns, _call(tools, log, "list_services", {"namespace": ns}, timeout)))
    results = await asyncio.gather(*(j[2] for j in jobs))
    for (tool, ns, _), result in zip(jobs, results, strict=True):
        got.results[(tool, ns)] = result
        if not result.ok:
            continue
        if tool == "list_pods":
            got.pods[ns] = [PodView.parse(p) for p in items_of(result.data, "pods")]
        elif tool == "list_workloads":
            got.workloads[ns] = [WorkloadView.parse(w) for w in items_of(result.data, "workloads")]
        elif tool == "list_services":
            got.services[ns] = items_of(result.data, "services")
        else:
            got.events[ns] = [EventView.parse(e) for e in items_of(result.data, "events")]
    return got


@dataclass
class Details:
    pod: ToolResult | None = None
    events: ToolResult | None = None
    previous_log: ToolResult | None = None
    current_log: ToolResult | None = None


async def collect_details(
    tools: Toolbox,
    log: EvidenceLog,
    obs: WorkloadObservation,
    timeout: float,  # noqa: ASYNC109
    troubled: bool = True,
) -> Details:
    """The representative pod of a failing workload: the pod, its events, its logs."""
    pod, container = obs.representative()
    if pod is None:
        return Details()
    ns = obs.namespace
    calls: dict[str, Awaitable[ToolResult]] = {
        "pod": _call(tools, log, "get_pod", {"namespace": ns, "name": pod.name}, timeout),
        "events": _call(
            tools, log, "list_events", {"namespace": ns, "involved_object_name": pod.name}, timeout
        ),
    }
    # A waiting container has no current instance: its "current" log is the previous one again.
    started = container is not None and container.state in ("running", "terminated")
    if troubled and container is not None and (container.restart_count > 0 or container.last_reason):
        calls["previous_log"] = _call(
            tools,
            log,
            "pod_logs",
            {
                "namespace": ns,
                "name": pod.name,
                "container": container.name,
                "previous": True,
                "tail_lines": 200,
            },
            timeout,
        )
    if container is not None and started:
        calls["current_log"] = _call(
            tools,
            log,
            "pod_logs",
            {"namespace": ns, "name": pod.name, "container": container.name, "tail_lines": 200},
            timeout,
        )
    done = dict(zip(calls, await asyncio.gather(*calls.values()), strict=True))
    details = Details(**done)
    if details.events is not None and details.events.ok:
        seen = {(e.reason, e.message, e.object_name) for e in obs.events}
        for raw in items_of(details.events.data, "events"):
            ev = EventView.parse(raw)
            if (ev.reason, ev.message, ev.object_name) not in seen:
                obs.events.append(ev)
    if details.pod is not None and details.pod.ok and isinstance(details.pod.data, dict):
        fresh = PodView.parse(details.pod.data.get("pod", details.pod.data))
        if fresh.name == pod.name and (fresh.containers or fresh.init_containers):
            obs.pods = [fresh if p.name == pod.name else p for p in obs.pods]
    for key, previous in (("previous_log", True), ("current_log", False)):
        result = getattr(details, key)
        if result is not None and result.ok and container is not None:
            obs.logs[(pod.name, container.name, previous)] = log_text(result.data)
    return details
