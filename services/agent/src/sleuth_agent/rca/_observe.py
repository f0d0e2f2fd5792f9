"""Typed observations of one workload: its pods, the events about them, its logs, its controller
and what follow-ups found, reduced to ``Facts`` the signature matcher reads."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sleuth_agent.rca._records import ContainerView, EventView, PodView, WorkloadView
from sleuth_common.k8s import format_quantity, quantity_or_none

__all__ = [
    "Facts",
    "WorkloadObservation",
    "clip",
    "error_lines",
    "exception_lines",
    "missing_env_names",
    "next_memory_limit",
    "pull_cause",
]

_ERROR_LINE = re.compile(
    r"\b(error|err|fatal|exception|panic|traceback|refused|failed|failure|oomkilled|out of memory|killed|"
    r"memory limit|forbidden|denied|cannot|can't|could not|couldn't|unable|timed out|timeout|no such host|"
    r"no space left|not known|no reachable host|expired|undefined|not found|throttl\w*)\b",
    re.IGNORECASE,
)
# The final line of a stack trace: ``ValueError: bad``, ``pkg.mod.CustomError: x``, ``KeyError: 'X'``,
# ``java.lang.IllegalStateException: x``, ``ModuleNotFoundError: No module named 'x'``.
_EXCEPTION_LINE = re.compile(
    r"^(?:Exception in thread \S+ )?(?:[A-Za-z_$][\w$]*\.)*(?:[A-Z][\w$]*)?(?:Error|Exception|Exit|Interrupt|Fault|Failure)"
    r"(?::\s*\S.*|\s*)$"
)
_CAUSED_BY = re.compile(r"^Caused by:\s*(\S.*)$")
_GO_PANIC = re.compile(r"^(?:panic|fatal error):\s*\S.*$")
_FRAME = re.compile(
    r"^(?:\s+\S|File \"|at [\w$.<>]+\(|\.\.\. \d+ (?:more|common frames)|goroutine \d+ |\^+$|~+\^*$|"
    r"During handling of the above exception|The above exception was the direct cause|Traceback \(most recent)"
)
_INFO_JSON = re.compile(r'"level"\s*:\s*"(info|debug)"', re.IGNORECASE)
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z?\s+")


def _strip(line: str) -> str:
    return _TIMESTAMP.sub("", line).rstrip()


def error_lines(text: str, limit: int = 5) -> list[str]:
    """The last ``limit`` lines of a log that read like errors, timestamps stripped. The final
    line of a stack trace (``KeyError: 'X'``, ``Caused by: ...``) counts as an error line."""
    found = []
    for raw in text.splitlines():
        ln = _strip(raw).strip()
        if not ln or _INFO_JSON.search(ln):
            continue
        if _ERROR_LINE.search(ln) or _EXCEPTION_LINE.match(ln) or _CAUSED_BY.match(ln) or _GO_PANIC.match(ln):
            found.append(ln)
    return [ln[:300] for ln in found][-limit:]


def exception_lines(text: str, limit: int = 5) -> list[str]:
    """The lines that carry the real exception of each stack trace in a log, newest last.

    A Python traceback ends with ``ExceptionName: message`` after its indented frames; a Java
    trace's deepest ``Caused by:`` is its root cause; a Go crash starts with ``panic:`` (or
    ``fatal error:``). A lone ``SomeError: message`` line counts too. The first error-looking line
    before a traceback (``Exception in worker process``) is only its announcement."""
    lines = [_strip(ln) for ln in text.splitlines()]
    out: list[str] = []
    i = 0
    while i < len(lines):
        ln = lines[i].strip()
        if ln.startswith("Traceback (most recent call last)"):
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or _FRAME.match(lines[j]) or lines[j].startswith((" ", "\t"))):
                j += 1
            if j < len(lines) and _EXCEPTION_LINE.match(lines[j].strip()):
                out.append(lines[j].strip())
                # Chained exceptions: a later block in the same trace supersedes this one.
                k = j + 1
                while k < len(lines) and not lines[k].strip():
                    k += 1
                if k < len(lines) and lines[k].strip().startswith(("During handling", "The above exception")):
                    out.pop()
            i = j + 1
            continue
        if _GO_PANIC.match(ln):
            out.append(ln)
        elif _EXCEPTION_LINE.match(ln) and not ln.startswith("Exception in thread"):
            # A Java trace: the deepest "Caused by:" below it is the root cause.
            j, cause = i + 1, ""
            while j < len(lines) and (_FRAME.match(lines[j]) or _CAUSED_BY.match(lines[j].strip())):
                m = _CAUSED_BY.match(lines[j].strip())
                if m:
                    cause = m.group(1)
                j += 1
            out.append(cause or ln)
            i = j
            continue
        elif ln.startswith("Exception in thread"):
            j, cause = i + 1, ""
            while j < len(lines) and (_FRAME.match(lines[j]) or _CAUSED_BY.match(lines[j].strip())):
                m = _CAUSED_BY.match(lines[j].strip())
                if m:
                    cause = m.group(1)
                j += 1
            out.append(cause or ln)
            i = j
            continue
        i += 1
    out = [x[:300] for x in dict.fromkeys(out)]
    return out[-limit:]


_ENV_NAME = r"[A-Z][A-Z0-9_]{1,63}"
_MISSING_ENV = (
    # Python: os.environ["X"] raises KeyError: 'X'
    re.compile(rf"^KeyError: ['\"]({_ENV_NAME})['\"]\s*$"),
    re.compile(
        rf"(?:environment variable|env(?:ironment)? var(?:iable)?|\benv\b)s?:?\s+['\"`]?({_ENV_NAME})['\"`]?"
        r"\s+(?:is\s+|was\s+)?(?:not set|unset|undefined|missing|required|empty|not defined|not provided)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"(?:missing|required|undefined|unset)\s+(?:required\s+)?(?:environment variable|env(?:ironment)? var(?:iable)?|env|config(?:uration)?(?: key)?)s?"
        rf"[:=\s]+['\"`]?({_ENV_NAME})\b",
        re.IGNORECASE,
    ),
    re.compile(rf"required key ['\"]?({_ENV_NAME})['\"]? missing value"),
    re.compile(rf"\b({_ENV_NAME}) (?:environment variable )?(?:is )?(?:not set|undefined|unset|required|missing)\b"),
)


def missing_env_names(text: str) -> list[str]:
    """Environment variable names a log says are missing (``KeyError: 'X'`` from os.environ,
    ``environment variable X is not set``, ``missing required env: X``...), in order of first
    mention. Only upper-case names count: that is what environment variables look like."""
    names: list[str] = []
    environ_access = bool(re.search(r"os\.environ\[|getenv|process\.env|environ", text))
    for raw in text.splitlines():
        ln = _strip(raw).strip()
        for i, rx in enumerate(_MISSING_ENV):
            m = rx.search(ln)
            if not m:
                continue
            if i == 0 and not environ_access:
                continue  # a KeyError on a dict, not on the environment
            names.append(m.group(1))
            break
    return list(dict.fromkeys(names))


def clip(text: str, limit: int = 160) -> str:
    """Shorten ``text`` keeping its start and its end (the cause of a wrapped error is at its end)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    return f"{text[:head]} … {text[-(limit - head - 3):]}"


# Why an image pull failed, by kind. containerd wraps the cause: it is at the END of the message.
_PULL_CAUSES = (
    ("auth", re.compile(r"\b40[13] (?:Unauthorized|Forbidden)\b|\bunauthorized\b|authentication required|"
                        r"pull access denied|\bdenied: |insufficient_scope|no basic auth credentials", re.IGNORECASE)),
    ("rate_limited", re.compile(r"\b429 Too Many Requests\b|toomanyrequests", re.IGNORECASE)),
    # before not_found: containerd ends this one with ": not found" too
    ("platform", re.compile(r"no match for platform in manifest(?:: not found)?|exec format error", re.IGNORECASE)),
    ("not_found", re.compile(r"manifest unknown|\bnot found\b|404 Not Found|repository does not exist|name unknown",
                             re.IGNORECASE)),
    ("dns", re.compile(r"no such host|server misbehaving", re.IGNORECASE)),
    ("network", re.compile(r"i/o timeout|connection refused|context deadline exceeded|TLS handshake timeout|"
                           r"network is unreachable|no route to host", re.IGNORECASE)),
    ("tls", re.compile(r"x509: [^:]{0,80}", re.IGNORECASE)),
    ("invalid", re.compile(r"InvalidImageName|invalid reference format", re.IGNORECASE)),
)


def pull_cause(message: str) -> tuple[str, str]:
    """(kind, phrase) of an image pull failure: the cause found LAST in the message (the
    innermost error containerd wrapped), with the segment that carries it; ("", "") if none."""
    text = " ".join(message.split())
    best: tuple[int, str, int] | None = None
    for kind, rx in _PULL_CAUSES:
        for m in rx.finditer(text):
            if best is None or m.end() > best[0]:
                best = (m.end(), kind, m.start())
    if best is None:
        return "", ""
    end, kind, start = best
    seg_start = text.rfind(": ", 0, start)
    seg_start = 0 if seg_start < 0 else seg_start + 2
    segment = text[seg_start:].strip().rstrip("'\"")
    if len(segment) < 30 and seg_start > 0:
        prev = text.rfind(": ", 0, seg_start - 2)
        segment = text[(prev + 2 if prev >= 0 else 0) :].strip().rstrip("'\"")
    if len(segment) > 80:
        # A long segment is mostly a URL or a reference: keep the cause and where it came from.
        url = re.search(r"https?://([^/\s:]+)", segment)
        segment = text[start:end] + (f" from {url.group(1)}" if url else "")
    return kind, segment


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9, "k": 10**3}


def next_memory_limit(limit: str) -> str:
    """Double a memory quantity, keeping binary units readable (``256Mi`` → ``512Mi``)."""
    q = quantity_or_none(limit)
    if q is None or q <= 0:
        return "<a higher limit>"
    return format_quantity(q * 2, binary=not limit.strip().endswith(("k", "M", "G", "T")))


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
    rollout: Any = None  # followups.changes.RolloutChange: what the newest rollout changed
    net_targets: list[Any] = field(default_factory=list)  # followups.network.NetTarget
    pods_unread: bool = False  # its namespace's pod list was cut at the tools' listing limit

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
        # An init container that is still running (it never restarted, so nothing failed yet)
        # holds the pod in Init: its current log says what it waits for.
        initialising = any(t == "Initialized" and st != "True" for t, st, _r, _m in pod.conditions) or (
            bool(pod.containers) and all(c.state == "waiting" and c.reason == "PodInitializing" for c in pod.containers)
        )
        stuck_init = [c for c in pod.init_containers if c.state == "running" and not c.ready]
        if initialising and stuck_init:
            return pod, stuck_init[0]
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
    exception: list[str] = field(default_factory=list)  # the final exception line of each stack trace
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
            f._add_logs(text for (_pod, _container, previous), text in obs.logs.items() if not previous)
        else:
            for pod in obs.unhealthy_pods or obs.pods:
                f._add_pod(pod)
            f._add_events(obs.events)
            if obs.workload is not None:
                f._add_workload(obs.workload)
            f._add_logs(text for _key, text in sorted(obs.logs.items(), key=lambda kv: not kv[0][2]))
        f.alert.extend(obs.alerts)
        f.derived = {k: list(v) for k, v in obs.derived.items()}
        return f

    def _add_pod(self, pod: PodView) -> None:
        self.phase.append(pod.phase)
        if pod.reason:
            self.pod_reason.append(pod.reason)
        if pod.message:
            self.pod_message.append(pod.message)
        for ctype, status, reason, message in pod.conditions:
            if status != "True" and message:
                self.condition_message.append(message)
            if reason and ctype == "PodScheduled" and status != "True":
                self.waiting_reason.append(reason)
        for c in pod.all_containers:
            self._add_container(c)

    def _add_container(self, c: ContainerView) -> None:
        self.max_restarts = max(self.max_restarts, c.restart_count)
        if c.init and c.restart_count and not c.ready:
            self.init_failed = True
        if c.state == "waiting" and c.reason:
            self.waiting_reason.append(c.reason)
            if c.message:
                self.waiting_message.append(c.message)
        if c.state == "terminated":
            if c.reason:
                self.termination_reason.append(c.reason)
            if c.exit_code is not None:
                self.exit_codes.append(c.exit_code)
            if c.message:
                self.termination_message.append(c.message)
        if c.last_reason:
            self.last_termination_reason.append(c.last_reason)
        if c.last_message:
            self.termination_message.append(c.last_message)
        if c.last_exit_code is not None:
            self.exit_codes.append(c.last_exit_code)

    def _add_events(self, events: list[EventView]) -> None:
        for ev in events:
            if ev.type == "Normal" and ev.reason not in ("BackOff", "Killing", "TaintManagerEviction", "JobAlreadyActive"):
                continue
            self.event_reason.append(ev.reason)
            if ev.message:
                self.event_message.append(ev.message)

    def _add_workload(self, workload: WorkloadView) -> None:
        for ctype, status, reason, message in workload.conditions:
            self.workload_condition.append(f"{ctype}={status} {reason}: {message}")
        if workload.paused:
            self.workload_condition.append("Paused=True DeploymentPaused: the Deployment is paused")

    def _add_logs(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.log.extend(error_lines(text, limit=20))
            self.exception.extend(reversed(exception_lines(text)))  # newest first
