"""An init container that keeps waiting for a dependency holds the pod in Init."""

from __future__ import annotations

import re
from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca.followups._context import FollowUpContext
from sleuth_agent.rca.followups._shared import when

__all__ = ["run"]

_WAITING = re.compile(
    r"\bwaiting for\b|\bstill waiting\b|connection refused|ECONNREFUSED|timed out|\btimeout\b|no route to host|"
    r"unreachable|not (?:yet )?(?:ready|available|reachable)|retrying|could not connect|couldn't connect|"
    r"failed to connect|\bdown\b|no response",
    re.IGNORECASE,
)
_HOST_PORT = re.compile(
    r"\b((?:\d{1,3}\.){3}\d{1,3}:\d{2,5}|(?=[-a-z0-9.]*[a-z])[a-z0-9][-a-z0-9.]*[a-z0-9]:\d{2,5})\b", re.IGNORECASE
)


def _strip_ts(line: str) -> str:
    """A log line without its leading timestamps (the kubelet's and the app's own)."""
    line = line.strip()
    for _ in range(2):
        line = re.sub(r"^\[?\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]?\s*", "", line)
    return line


def run(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView, container: Any) -> None:
    """An init container still running (pod not initialised) whose current log keeps saying it
    waits for, or cannot connect to, a host: that dependency is what holds the pod in Init."""
    text = obs.logs.get((pod.name, container.name, False), "")
    waits = [ln for ln in (_strip_ts(x) for x in text.splitlines()) if ln and _WAITING.search(ln)]
    if len(waits) < 3:
        return
    hosts = [m.group(1) for ln in waits for m in [_HOST_PORT.search(ln)] if m]
    endpoint = max(set(hosts), key=hosts.count) if hosts else ""
    stamps = [t for t in (when(x) for x in text.splitlines() if x.strip()) if t is not None]
    span = (max(stamps) - min(stamps)) if len(stamps) >= 2 else None
    line = waits[-1][:200]
    where = endpoint or "its dependency"
    dep = ""
    if endpoint:
        host = endpoint.rsplit(":", 1)[0]
        parts = host.split(".")
        if len(parts) >= 2 and (len(parts) == 2 or parts[2] == "svc"):
            dep_ns = parts[1]
            dep = f" That is Service {parts[0]} in namespace {dep_ns}"
            if dep_ns != obs.namespace and dep_ns not in ctx.got.pods:
                dep += ", which this investigation did not read (outside the namespaces asked about or your access)"
            dep += ": check that its pods are running and ready and that its endpoints are populated."
    lasted = f" over {span / 60:.0f} min" if span is not None and span >= 60 else ""
    text_out = (
        f"Init container {container.name} of pod {pod.name} is still running and has not finished "
        f"(no restarts): its current log says {len(waits)} times{lasted} that it is waiting for {where} "
        f'(last: "{line}"), so the app containers never start.{dep}'
    )
    for r in ctx.log.results:
        a = r.args or {}
        if r.tool == "pod_logs" and r.ok and a.get("name") == pod.name and a.get("container") == container.name and not a.get("previous"):
            obs.cites.append((r, f"current log of init container {container.name} ({len(text.splitlines())} lines)", [line]))
            break
    obs.derive("init_wait", text_out)
    obs.derive("dependency", text_out)
    obs.variables.update({"init_wait": text_out, "dependency_line": line, "init_container": container.name})
    if endpoint:
        obs.variables["endpoint"] = endpoint
