"""Probes: the failing probe's spec, a probe failure of another container that has recovered, and
a liveness probe that kills a container which had not finished starting."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation, _strip
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca.followups._shared import LIVENESS_FAILED, when

__all__ = ["SlowStart", "probe_recovered", "probe_spec", "slow_start_kill"]


def probe_spec(obs: WorkloadObservation, container: Any, messages: list[str]) -> None:
    if container is None:
        return
    pod, _c = obs.representative()
    if pod is not None and any(LIVENESS_FAILED.search(m) for m in messages):
        slow = slow_start_kill(container, obs.logs.get((pod.name, container.name, True), ""))
        if slow is not None:
            obs.derive("probe", slow.text)
            obs.derive("liveness_kill", slow.text)
            obs.variables.update(slow.action(obs, container.name))
            obs.variables["stop_line"] = slow.line
    liveness = any("Liveness" in m or "liveness" in m for m in messages)
    probe = container.liveness_probe if liveness else container.readiness_probe
    kind = "liveness" if liveness else "readiness"
    if probe and "liveness_kill" not in obs.derived:
        where = f"{probe.get('path') or ''} on port {probe.get('port')}" if probe.get("type") == "http" else f"port {probe.get('port')}"
        obs.derive(
            "probe",
            f"Its {kind} probe checks {probe.get('type', '').upper()} {where} every {probe.get('period_seconds', 10)}s "
            f"with a {probe.get('timeout_seconds', 1)}s timeout ({probe.get('failure_threshold', 3)} failures allowed).",
        )
    obs.variables["probe_effect"] = (
        f"is restarted by the kubelet each time the liveness probe gives up ({container.restart_count} restarts), "
        f"last exit code {container.last_exit_code if container.last_exit_code is not None else '?'}"
        if liveness
        else "runs but is never marked ready, so its Service sends it no traffic"
    )


def probe_recovered(obs: WorkloadObservation, pod: PodView, failing: Any, messages: list[str]) -> None:
    """A probe failure whose target (the port in the kubelet's message) is the probe of
    another container that is ready now is history, such as a sidecar that was slow to start,
    not the cause of this failure."""
    ports: set[str] = set()
    for m in messages:
        if "probe failed" not in m.lower():
            continue
        found = re.search(r"(?:https?://|dial tcp )\[?[\w.:-]*?\]?:(\d{2,5})\b", m)
        if not found:
            return  # a probe failure we cannot place: keep it
        ports.add(found.group(1))
    owners = []
    for port in ports:
        owner = next(
            (
                c
                for c in pod.all_containers
                for p in (c.readiness_probe, c.liveness_probe, c.startup_probe)
                if p and str(p.get("port")) == port
            ),
            None,
        )
        if owner is None:
            return
        owners.append(owner)
    if owners and all(c.ready and (failing is None or c.name != failing.name) for c in owners):
        names = ", ".join(sorted({c.name for c in owners}))
        obs.derive(
            "probe_recovered",
            f"The failed probe (port {', '.join(sorted(ports))}) belongs to container {names}, which is ready now: "
            "that failure has recovered and does not explain this one.",
        )


# -- a liveness probe that kills a slow-starting container ---------------------------------------
_SIGTERM = re.compile(
    r"\bSIGTERM\b|\bsignal[: ]+(?:15|terminated)\b|received signal 15|shutdown signal|signal 15\b", re.IGNORECASE
)
# A line saying startup finished ("Started App in 41s", "listening on :8080", "server ready").
_STARTED = re.compile(
    r"\b(?:started|listening|serving|ready to accept|startup complete|server (?:is )?(?:up|running|ready))\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:not|yet|before|until|never|failed|unable)\b|n't\b", re.IGNORECASE)


class SlowStart:
    """A liveness probe that restarts a container which had not finished starting (DESIGN §3
    follow-up: restarts → last termination → probe spec)."""

    def __init__(self, probe: Mapping[str, Any], ran: float | None, log_span: float | None, line: str, exit_code: int | None) -> None:
        self.probe = dict(probe)
        self.delay = int(probe.get("initial_delay_seconds") or 0)
        self.threshold = int(probe.get("failure_threshold") or 3)
        self.period = int(probe.get("period_seconds") or 10)
        self.budget = self.delay + self.threshold * self.period
        self.ran, self.log_span, self.line, self.exit_code = ran, log_span, line, exit_code

    @property
    def text(self) -> str:
        p = self.probe
        where = f"{(p.get('type') or '').upper()} {p.get('path') or ''} on port {p.get('port')}".replace("  ", " ")
        out = (
            f"The liveness probe ({where.strip()}) starts after initialDelaySeconds={self.delay} and restarts the "
            f"container after failureThreshold={self.threshold} × periodSeconds={self.period}, so the app has about "
            f"{self.budget}s to answer, and there is no startupProbe."
        )
        ran = []
        if self.ran is not None:
            ran.append(f"lasted {self.ran:.0f}s")
        if self.exit_code is not None:
            ran.append(f"ended with exit code {self.exit_code}" + (" (SIGTERM)" if self.exit_code == 143 else ""))
        if ran:
            out += " Its last run " + " and ".join(ran) + "."
        span = f" {self.log_span:.0f}s after its first log line" if self.log_span is not None else ""
        out += f" Its previous log shows it was still starting{span} when it was stopped: \"{self.line[:160]}\"."
        return out

    def action(self, obs: WorkloadObservation, container: str) -> dict[str, str]:
        seen = max(self.budget, int(self.ran or 0), int(self.log_span or 0))
        window = max(2 * seen, self.budget + 60)
        threshold = -(-window // self.period)
        p = self.probe
        handler: dict[str, Any]
        if p.get("type") == "http":
            handler = {"httpGet": {"path": p.get("path") or "/", "port": p.get("port")}}
        elif p.get("type") == "tcp":
            handler = {"tcpSocket": {"port": p.get("port")}}
        elif p.get("type") == "grpc":
            handler = {"grpc": {"port": p.get("port")}}
        else:
            handler = {"exec": {"command": p.get("command") or []}}
        startup = {**handler, "periodSeconds": self.period, "failureThreshold": threshold}
        patch = {"spec": {"template": {"spec": {"containers": [{"name": container, "startupProbe": startup}]}}}}
        return {
            "probe_action_text": (
                f"Give {container} time to start before liveness applies: add a startupProbe with the same check "
                f"(periodSeconds={self.period}, failureThreshold={threshold}, up to {threshold * self.period}s of startup, "
                f"against about {self.budget}s now), or raise the liveness initialDelaySeconds from {self.delay} to "
                f"{window}; keep the liveness probe itself as it is."
            ),
            "probe_action_command": (
                f"kubectl patch {obs.kind.lower()}/{obs.name} -n {obs.namespace} --type=strategic -p "
                f"'{json.dumps(patch, separators=(',', ':'))}'"
            ),
        }


_UPTIME = 3600.0  # seconds: a container that ran longer than this had started


def slow_start_kill(container: Any, previous_log: str) -> SlowStart | None:
    """A container stopped by the kubelet (exit 143/137 or SIGTERM in its log) whose previous log
    shows startup in progress and never finished, with a liveness probe and no startupProbe."""
    probe = getattr(container, "liveness_probe", None) or {}
    if not probe or getattr(container, "startup_probe", None):
        return None
    lines = [ln for ln in previous_log.splitlines() if ln.strip()]
    if not lines:
        return None
    stop = max((i for i, ln in enumerate(lines) if _SIGTERM.search(ln)), default=None)
    exit_code = container.last_exit_code
    if stop is None and exit_code not in (137, 143):
        return None
    before = lines[: stop if stop is not None else len(lines)]
    if not before:
        return None  # stopped before it logged anything: nothing shows a slow start
    if any(_STARTED.search(ln) and not _NEGATED.search(ln) for ln in before):
        return None  # it finished starting: the probe fails for another reason
    last = lines[stop] if stop is not None else lines[-1]
    first_t, last_t = when(lines[0]), when(last)
    span = last_t - first_t if first_t is not None and last_t is not None and last_t >= first_t else None
    started, finished = when(container.last_started or ""), when(container.last_finished or "")
    ran = finished - started if started is not None and finished is not None and finished >= started else None
    if (ran is not None and ran > _UPTIME) or (span is not None and span > _UPTIME):
        return None  # a run that long was up and serving: that is an uptime, not a start-up
    delay = int(probe.get("initial_delay_seconds") or 0)
    longest = max(x for x in (ran, span, 0.0) if x is not None)
    if delay and longest and longest < delay:
        return None  # stopped before liveness even began probing: something else stopped it
    return SlowStart(probe, ran, span, _strip(last).strip(), exit_code)
