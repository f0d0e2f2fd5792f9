"""Typed observations of one workload: its pods, the events about them and their logs,
reduced to ``Facts`` the signature matcher reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sleuth_agent.rca._records import ContainerView, EventView, PodView

__all__ = ["Facts", "WorkloadObservation", "error_lines", "next_memory_limit"]

_ERROR_LINE = re.compile(
    r"\b(error|fatal|exception|panic|traceback|refused|failed|oomkilled|out of memory|killed|memory limit)\b",
    re.IGNORECASE,
)
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z?\s+")


def error_lines(text: str, limit: int = 5) -> list[str]:
    """The last ``limit`` lines of a log that read like errors, timestamps stripped."""
    found = [_TIMESTAMP.sub("", ln).strip() for ln in text.splitlines() if _ERROR_LINE.search(ln)]
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
    """Everything collected about one workload in one namespace."""

    namespace: str
    kind: str
    name: str
    pods: list[PodView] = field(default_factory=list)
    events: list[EventView] = field(default_factory=list)
    logs: dict[tuple[str, str, bool], str] = field(default_factory=dict)  # (pod, container, previous)

    @property
    def resource(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def healthy(self) -> bool:
        return bool(self.pods) and all(p.healthy for p in self.pods)

    @property
    def unhealthy_pods(self) -> list[PodView]:
        bad = [p for p in self.pods if not p.healthy]
        return sorted(bad, key=lambda p: (-p.restarts, p.name))

    def representative(self) -> tuple[PodView | None, ContainerView | None]:
        """The pod and container that show the failure best."""
        pods = self.unhealthy_pods or self.pods
        if not pods:
            return None, None
        pod = pods[0]
        bad = [c for c in pod.containers if not c.ready] or list(pod.containers)
        bad.sort(key=lambda c: (-c.restart_count, c.name))
        return pod, (bad[0] if bad else None)

    def facts(self) -> Facts:
        return Facts.of(self)


@dataclass
class Facts:
    waiting_reason: list[str] = field(default_factory=list)
    waiting_message: list[str] = field(default_factory=list)
    termination_reason: list[str] = field(default_factory=list)
    last_termination_reason: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)
    event_reason: list[str] = field(default_factory=list)
    event_message: list[str] = field(default_factory=list)
    condition_message: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    max_restarts: int = 0

    def values(self, key: str) -> list[str]:
        if key == "termination_reason":
            return self.termination_reason + self.last_termination_reason
        return list(getattr(self, key))

    @classmethod
    def of(cls, obs: WorkloadObservation) -> Facts:
        f = cls()
        for pod in obs.unhealthy_pods or obs.pods:
            f.phase.append(pod.phase)
            for ctype, status, reason, message in pod.conditions:
                if status != "True" and message:
                    f.condition_message.append(message)
                if reason and ctype == "PodScheduled" and status != "True":
                    f.waiting_reason.append(reason)
            for c in pod.containers:
                f.max_restarts = max(f.max_restarts, c.restart_count)
                if c.state == "waiting" and c.reason:
                    f.waiting_reason.append(c.reason)
                    if c.message:
                        f.waiting_message.append(c.message)
                if c.state == "terminated":
                    if c.reason:
                        f.termination_reason.append(c.reason)
                    if c.exit_code is not None:
                        f.exit_codes.append(c.exit_code)
                if c.last_reason:
                    f.last_termination_reason.append(c.last_reason)
                if c.last_exit_code is not None:
                    f.exit_codes.append(c.last_exit_code)
        for ev in obs.events:
            if ev.type == "Normal" and ev.reason not in ("BackOff", "Killing"):
                continue
            f.event_reason.append(ev.reason)
            if ev.message:
                f.event_message.append(ev.message)
        for (_pod, _container, _previous), text in sorted(obs.logs.items(), key=lambda kv: not kv[0][2]):
            f.log.extend(error_lines(text, limit=20))
        return f
