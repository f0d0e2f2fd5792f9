"""Typed observations of one workload: its pods, the events about them, its logs, its controller
and what follow-ups found, reduced to ``Facts`` the signature matcher reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sleuth_agent.rca._records import ContainerView, EventView, PodView, WorkloadView

__all__ = ["Facts", "WorkloadObservation", "error_lines", "next_memory_limit"]

_ERROR_LINE = re.compile(
    r"\b(error|err|fatal|exception|panic|traceback|refused|failed|failure|oomkilled|out of memory|killed|"
    r"memory limit|forbidden|denied|cannot|can't|could not|couldn't|unable|timed out|timeout|no such host|"
    r"no space left|not known|no reachable host|expired|undefined|not found|throttl\w*)\b",
    re.IGNORECASE,
)
_INFO_JSON = re.compile(r'"level"\s*:\s*"(info|debug)"', re.IGNORECASE)
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z?\s+")


def error_lines(text: str, limit: int = 5) -> list[str]:
    """The last ``limit`` lines of a log that read like errors, timestamps stripped."""
    found = [
        _TIMESTAMP.sub("", ln).strip()
        for ln in text.splitlines()
        if _ERROR_LINE.search(ln) and not _INFO_JSON.search(ln)
    ]
    return [ln[:300] for ln in found if ln][-limit:]


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9, "k": 10**3}


def next_memory_limit(limit: str) -> str:
    """Double a memory quantity, keeping binary units readable (``256Mi`` → ``512Mi``)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]i?|k)?", limit.strip())
    if not m:
        return "<a higher limit>"
    value, unit = float(m.group(1)), m.group(2) or ""
    doubled = value * 2
    if unit == "" and doubled >= 2**20:
        return f"{int(doubled // 2**20)}Mi"
    if unit == "Mi" and doubled >= 1024 and doubled % 1024 == 0:
        return f"{int(doubled // 1024)}Gi"
    return f"{int(doubled) if doubled.is_integer() else doubled}{unit}"


@dataclass
class WorkloadObservation:
    """Everything collected about one workload (or a bare pod, or a Service) in one namespace."""

    namespace: str
    kind: str
    name: str
    pods: list[PodView] = field(default_factory=list)
    events: list[EventView] = field(default_factory=list)
    logs: dict[tuple[str, str, bool], str] = field(default_factory=dict)  # (pod, container, previous)
    workload: WorkloadView | None = None
    derived: dict[str, list[str]] = field(default_factory=dict)  # follow-up facts by kind
    alerts: list[str] = field(default_factory=list)  # "AlertName: description"
    named: bool = False  # the question or the alert names it
    quiet: bool = False  # its pods run and are ready: only current signals (logs, alerts) count
    cites: list[tuple[Any, str, list[str]]] = field(default_factory=list)  # (ToolResult, summary, highlights)
    variables: dict[str, str] = field(default_factory=dict)  # observed values for the templates

    @property
    def resource(self) -> str:
        if not self.namespace:
            return f"{self.kind}/{self.name}"
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def healthy(self) -> bool:
        return bool(self.pods) and all(p.healthy for p in self.pods)

    @property
    def unhealthy_pods(self) -> list[PodView]:
        bad = [p for p in self.pods if not p.healthy]
        return sorted(bad, key=lambda p: (-p.restarts, p.phase == "Failed", p.name))

    def representative(self) -> tuple[PodView | None, ContainerView | None]:
        """The pod and container that show the failure best."""
        pods = self.unhealthy_pods or sorted(self.pods, key=lambda p: (-p.restarts, p.name))
        if not pods:
            return None, None
        pod = pods[0]
        failed_init = [
            c for c in pod.init_containers if not c.ready and (c.restart_count or c.last_reason or c.state == "waiting")
        ]
        if failed_init and failed_init[0].reason not in ("", "PodInitializing"):
            return pod, failed_init[0]
        bad = [c for c in pod.containers if not c.ready] or list(pod.containers)
        bad.sort(key=lambda c: (-c.restart_count, c.name))
        return pod, (bad[0] if bad else None)

    def derive(self, key: str, value: str) -> None:
        vals = self.derived.setdefault(key, [])
        if value not in vals:
            vals.append(value)

    def facts(self) -> Facts:
        return Facts.of(self)


@dataclass
class Facts:
    waiting_reason: list[str] = field(default_factory=list)
    waiting_message: list[str] = field(default_factory=list)
    termination_reason: list[str] = field(default_factory=list)
    last_termination_reason: list[str] = field(default_factory=list)
    termination_message: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)
    pod_reason: list[str] = field(default_factory=list)
    pod_message: list[str] = field(default_factory=list)
    event_reason: list[str] = field(default_factory=list)
    event_message: list[str] = field(default_factory=list)
    condition_message: list[str] = field(default_factory=list)
    workload_condition: list[str] = field(default_factory=list)  # "Type=Status Reason: message"
    workload_kind: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    alert: list[str] = field(default_factory=list)
    derived: dict[str, list[str]] = field(default_factory=dict)
    max_restarts: int = 0
    init_failed: bool = False

    def values(self, key: str) -> list[str]:
        if key == "termination_reason":
            return self.termination_reason + self.last_termination_reason
        if key.startswith("derived."):
            return list(self.derived.get(key.split(".", 1)[1], []))
        return list(getattr(self, key))

    @classmethod
    def of(cls, obs: WorkloadObservation) -> Facts:
        f = cls()
        f.workload_kind.append(obs.kind)
        if obs.quiet:
            # Past terminations and old events of pods that are fine now are history, not a cause.
            for (_pod, _container, previous), text in obs.logs.items():
                if not previous:
                    f.log.extend(error_lines(text, limit=20))
            f.alert.extend(obs.alerts)
            f.derived = {k: list(v) for k, v in obs.derived.items()}
            return f
        for pod in obs.unhealthy_pods or obs.pods:
            f.phase.append(pod.phase)
            if pod.reason:
                f.pod_reason.append(pod.reason)
            if pod.message:
                f.pod_message.append(pod.message)
            for ctype, status, reason, message in pod.conditions:
                if status != "True" and message:
                    f.condition_message.append(message)
                if reason and ctype == "PodScheduled" and status != "True":
                    f.waiting_reason.append(reason)
            for c in pod.all_containers:
                f.max_restarts = max(f.max_restarts, c.restart_count)
                if c.init and c.restart_count and not c.ready:
                    f.init_failed = True
                if c.state == "waiting" and c.reason:
                    f.waiting_reason.append(c.reason)
                    if c.message:
                        f.waiting_message.append(c.message)
                if c.state == "terminated":
                    if c.reason:
                        f.termination_reason.append(c.reason)
                    if c.exit_code is not None:
                        f.exit_codes.append(c.exit_code)
                    if c.message:
                        f.termination_message.append(c.message)
                if c.last_reason:
                    f.last_termination_reason.append(c.last_reason)
                if c.last_message:
                    f.termination_message.append(c.last_message)
                if c.last_exit_code is not None:
                    f.exit_codes.append(c.last_exit_code)
        for ev in obs.events:
            if ev.type == "Normal" and ev.reason not in ("BackOff", "Killing", "TaintManagerEviction"):
                continue
            f.event_reason.append(ev.reason)
            if ev.message:
                f.event_message.append(ev.message)
        if obs.workload is not None:
            for ctype, status, reason, message in obs.workload.conditions:
                f.workload_condition.append(f"{ctype}={status} {reason}: {message}")
            if obs.workload.paused:
                f.workload_condition.append("Paused=True DeploymentPaused: the Deployment is paused")
        for (_pod, _container, _previous), text in sorted(obs.logs.items(), key=lambda kv: not kv[0][2]):
            f.log.extend(error_lines(text, limit=20))
        f.alert.extend(obs.alerts)
        f.derived = {k: list(v) for k, v in obs.derived.items()}
        return f
