"""Pod logs as the kubelet serves them: container choice, previous, sinceSeconds, tailLines, timestamps."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sleuth_common.k8s import parse_time, split_log_timestamp

from ._loader import Logs
from ._status import ApiError, bad_request

Obj = dict[str, Any]

_PULL_REASONS = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull"}


def _int_param(params: Mapping[str, str], name: str) -> int | None:
    raw = params.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise bad_request(f'invalid value for {name}: "{raw}"') from exc


def _container(pod: Obj, requested: str) -> str:
    spec = pod.get("spec") or {}
    names = [c.get("name", "") for c in spec.get("containers") or []]
    init = [c.get("name", "") for c in spec.get("initContainers") or []]
    ephemeral = [c.get("name", "") for c in spec.get("ephemeralContainers") or []]
    pod_name = pod["metadata"]["name"]
    if not requested:
        if len(names) == 1:
            return names[0]
        message = f"a container name must be specified for pod {pod_name}, choose one of: [{' '.join(names)}]"
        if init:
            message += f" or one of the init containers: [{' '.join(init)}]"
        raise bad_request(message)
    if requested not in names + init + ephemeral:
        raise bad_request(f"container {requested} is not valid for pod {pod_name}")
    return requested


def _waiting_reason(pod: Obj, container: str) -> str | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            if cs.get("name") == container:
                waiting = (cs.get("state") or {}).get("waiting")
                if waiting is None:
                    return None
                reason = waiting.get("reason") or "ContainerCreating"
                return "trying and failing to pull image" if reason in _PULL_REASONS else reason
    return "ContainerCreating" if status.get("phase", "Pending") == "Pending" else None


def pod_log(logs: Logs, pod: Obj, params: Mapping[str, str], now: datetime) -> str:
    """The log text for one request, or ApiError with the API server's wording."""
    ns, pod_name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
    container = _container(pod, params.get("container", ""))
    previous = params.get("previous", "").lower() == "true"
    text = logs.text(ns, pod_name, container, previous)
    if text is None:
        if previous:
            raise bad_request(f'previous terminated container "{container}" in pod "{pod_name}" not found')
        waiting = _waiting_reason(pod, container)
        if waiting is not None:
            raise bad_request(f'container "{container}" in pod "{pod_name}" is waiting to start: {waiting}')
        return ""
    lines = text.splitlines()
    cutoff: datetime | None = None
    since_seconds = _int_param(params, "sinceSeconds")
    if since_seconds is not None:
        if since_seconds < 1:
            raise ApiError(422, "Invalid", "PodLogOptions \"\" is invalid: sinceSeconds: Invalid value: "
                           f"{since_seconds}: must be greater than 0")
        cutoff = now - timedelta(seconds=since_seconds)
    elif params.get("sinceTime"):
        cutoff = parse_time(params["sinceTime"])
    entries: list[tuple[str, str]] = []  # (line with timestamp, line without)
    for line in lines:
        ts, rest = split_log_timestamp(line)
        if ts is None:
            entries.append((line, line))
            continue
        if cutoff is not None and ts < cutoff:
            continue
        entries.append((line, rest))
    tail = _int_param(params, "tailLines")
    if tail is not None and tail >= 0:
        entries = entries[-tail:] if tail else []
    keep_ts = params.get("timestamps", "").lower() == "true"
    out = "".join((full if keep_ts else bare) + "\n" for full, bare in entries)
    limit = _int_param(params, "limitBytes")
    if limit is not None and limit > 0:
        out = out.encode()[:limit].decode(errors="ignore")
    return out
