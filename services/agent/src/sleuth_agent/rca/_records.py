"""Typed views over what kube-mcp returns. kube-mcp's shaped records (``namespace``, ``name``,
``phase``, ``containers[...]``) and raw Kubernetes objects (``metadata``/``status``) are both
accepted, so the investigator does not break when a server returns either."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ContainerView", "EventView", "PodView", "WorkloadView", "items_of", "log_text"]


def _get(d: Any, *keys: str, default: Any = None) -> Any:
    """First present key, trying snake_case and camelCase spellings."""
    if not isinstance(d, dict):
        return default
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return default


def items_of(data: Any, *preferred: str) -> list[dict[str, Any]]:
    """The records of a list result: ``{"items": [...]}``, ``{"pods": [...]}``, or a bare list."""
    if isinstance(data, list):
        return [x for x in data if isinstance(x, dict)]
    if not isinstance(data, dict):
        return []
    for key in (*preferred, "items"):
        value = data.get(key)
        if isinstance(value, list):
            return [x for x in value if isinstance(x, dict)]
    for value in data.values():
        if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            return list(value)
    return []


def log_text(data: Any) -> str:
    """The log text of a ``pod_logs`` result (text, ``{"log": ...}``, ``{"lines": [...]}``)."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        for key in ("log", "logs", "text", "content", "output"):
            if isinstance(data.get(key), str):
                return data[key]
        lines = data.get("lines")
        if isinstance(lines, list):
            return "\n".join(str(x) for x in lines)
    return ""


@dataclass(frozen=True)
class ContainerView:
    name: str
    image: str = ""
    ready: bool = False
    restart_count: int = 0
    state: str = ""  # waiting | running | terminated
    reason: str = ""
    message: str = ""
    exit_code: int | None = None
    last_reason: str = ""
    last_exit_code: int | None = None
    memory_limit: str = ""
    memory_request: str = ""
    cpu_limit: str = ""
    cpu_request: str = ""
    last_message: str = ""
    last_finished: str = ""
    last_started: str = ""
    init: bool = False
    readiness_probe: dict[str, Any] = field(default_factory=dict)
    liveness_probe: dict[str, Any] = field(default_factory=dict)
    env_names: tuple[str, ...] = ()  # names only, never values
    env_from: tuple[tuple[str, str, str], ...] = ()  # (configmap|secret, name, prefix)
    startup_probe: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""  # when the current (running) state began
    env_refs: tuple[tuple[str, str, str, str], ...] = ()  # (env name, configmap|secret, object, key)

    @classmethod
    def parse(cls, c: dict[str, Any], spec: dict[str, Any] | None = None, init: bool = False) -> ContainerView:
        state = _get(c, "state", default={}) or {}
        kind, detail = "", {}
        if isinstance(state, dict):
            for k in ("waiting", "terminated", "running"):
                if isinstance(state.get(k), dict):
                    kind, detail = k, state[k]
                    break
            if not kind and isinstance(state.get("state"), str):
                kind, detail = state["state"], state
        elif isinstance(state, str):
            kind = state
        last = _get(c, "last_termination", "lastTermination", default=None)
        if last is None:
            last_state = _get(c, "last_state", "lastState", default={}) or {}
            last = last_state.get("terminated") if isinstance(last_state, dict) else None
        last = last if isinstance(last, dict) else {}
        res = _get(c, "resources", default=None) or _get(spec, "resources", default={}) or {}
        limits = _get(res, "limits", default={}) or {}
        requests = _get(res, "requests", default={}) or {}
        return cls(
            name=str(_get(c, "name", default="")),
            image=str(_get(c, "image", default="") or _get(spec, "image", default="")),
            ready=bool(_get(c, "ready", default=False)),
            restart_count=int(_get(c, "restart_count", "restartCount", "restarts", default=0) or 0),
            state=kind,
            reason=str(_get(detail, "reason", default="") or _get(c, "reason", default="") or ""),
            message=str(_get(detail, "message", default="") or ""),
            exit_code=_int(_get(detail, "exit_code", "exitCode")),
            last_reason=str(_get(last, "reason", default="") or ""),
            last_exit_code=_int(_get(last, "exit_code", "exitCode")),
            memory_limit=str(limits.get("memory", "") or ""),
            memory_request=str(requests.get("memory", "") or ""),
            cpu_limit=str(limits.get("cpu", "") or ""),
            cpu_request=str(requests.get("cpu", "") or ""),
            last_message=str(_get(last, "message", default="") or ""),
            last_finished=str(_get(last, "finished_at", "finishedAt", default="") or ""),
            last_started=str(_get(last, "started_at", "startedAt", default="") or ""),
            init=init,
            readiness_probe=_probe(_get(c, "readiness_probe", default=None) or _get(spec, "readinessProbe", default=None)),
            liveness_probe=_probe(_get(c, "liveness_probe", default=None) or _get(spec, "livenessProbe", default=None)),
            env_names=_env_names(_get(c, "env", default=None) or _get(spec, "env", default=None)),
            env_from=_env_from(_get(c, "env_from", default=None) or _get(spec, "envFrom", default=None)),
            startup_probe=_probe(_get(c, "startup_probe", default=None) or _get(spec, "startupProbe", default=None)),
            started_at=str(_get(detail, "started_at", "startedAt", default="") or "") if kind == "running" else "",
            env_refs=_env_refs(_get(c, "env", default=None) or _get(spec, "env", default=None)),
        )


def _env_names(env: Any) -> tuple[str, ...]:
    if not isinstance(env, list):
        return ()
    return tuple(str(e.get("name")) for e in env if isinstance(e, dict) and e.get("name"))


def _env_refs(env: Any) -> tuple[tuple[str, str, str, str], ...]:
    """Variables set from a ConfigMap or Secret key, from kube-mcp's (``value_from``) or the API's
    (``valueFrom``) shape: (variable, configmap|secret, object name, key)."""
    out = []
    for e in env if isinstance(env, list) else []:
        if not isinstance(e, dict):
            continue
        vf = e.get("value_from") or e.get("valueFrom") or {}
        if not isinstance(vf, dict):
            continue
        cm = vf.get("config_map") or (vf.get("configMapKeyRef") or {}).get("name")
        sec = vf.get("secret") or (vf.get("secretKeyRef") or {}).get("name")
        key = vf.get("key") or (vf.get("configMapKeyRef") or vf.get("secretKeyRef") or {}).get("key") or ""
        if cm:
            out.append((str(e.get("name") or ""), "configmap", str(cm), str(key)))
        elif sec:
            out.append((str(e.get("name") or ""), "secret", str(sec), str(key)))
    return tuple(out)


def _env_from(env_from: Any) -> tuple[tuple[str, str, str], ...]:
    """envFrom sources as (configmap|secret, name, prefix), from kube-mcp's or the API's shape."""
    out = []
    for e in env_from if isinstance(env_from, list) else []:
        if not isinstance(e, dict):
            continue
        prefix = str(e.get("prefix") or "")
        if e.get("config_map") or isinstance(e.get("configMapRef"), dict):
            out.append(("configmap", str(e.get("config_map") or e["configMapRef"].get("name") or ""), prefix))
        elif e.get("secret") or isinstance(e.get("secretRef"), dict):
            out.append(("secret", str(e.get("secret") or e["secretRef"].get("name") or ""), prefix))
    return tuple(out)


def _probe(p: Any) -> dict[str, Any]:
    """A probe as kube-mcp shapes it (type, path, port, timeout_seconds...), from either shape."""
    if not isinstance(p, dict):
        return {}
    if "type" in p:
        return dict(p)
    for key, kind in (("httpGet", "http"), ("tcpSocket", "tcp"), ("exec", "exec"), ("grpc", "grpc")):
        if key in p:
            h = p[key] or {}
            return {
                "type": kind,
                "path": h.get("path"),
                "port": h.get("port"),
                "command": h.get("command"),
                "initial_delay_seconds": p.get("initialDelaySeconds", 0),
                "period_seconds": p.get("periodSeconds", 10),
                "timeout_seconds": p.get("timeoutSeconds", 1),
                "failure_threshold": p.get("failureThreshold", 3),
            }
    return {}


def _int(v: Any) -> int | None:
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None


_READ_ANNOTATIONS = ("kubernetes.io/limit-ranger",)


@dataclass(frozen=True)
class PodView:
    namespace: str
    name: str
    phase: str = ""
    containers: tuple[ContainerView, ...] = ()
    owner_kind: str = ""
    owner_name: str = ""
    conditions: tuple[tuple[str, str, str, str], ...] = ()  # (type, status, reason, message)
    node: str = ""
    reason: str = ""  # pod-level status reason (Evicted, NodeLost...)
    message: str = ""
    deleting: bool = False
    init_containers: tuple[ContainerView, ...] = ()
    volumes: tuple[tuple[str, str, str], ...] = ()  # (volume name, type, source name)
    node_selector: tuple[tuple[str, str], ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    service_account: str = ""
    image_pull_secrets: tuple[str, ...] | None = None  # None: the record does not say (list_pods)
    ready_since: str = ""  # lastTransitionTime of the Ready condition when it is True
    ip: str = ""  # status.podIP
    host_network: bool = False
    dns_policy: str = ""  # "" when the record does not say (ClusterFirst is the API's default)
    annotations: tuple[tuple[str, str], ...] = ()  # only the ones the investigator reads (limit-ranger)

    @classmethod
    def parse(cls, p: dict[str, Any]) -> PodView:
        meta = _get(p, "metadata", default={}) or {}
        status = _get(p, "status", default={}) if isinstance(_get(p, "status"), dict) else {}
        spec = _get(p, "spec", default={}) or {}
        specs = {c.get("name"): c for c in _get(spec, "containers", default=[]) or [] if isinstance(c, dict)}
        raw = _get(p, "containers", default=None)
        if not (
            isinstance(raw, list)
            and raw
            and isinstance(raw[0], dict)
            and ("state" in raw[0] or "ready" in raw[0])
        ):
            raw = _get(status, "containerStatuses", "container_statuses", default=None) or raw or []
        if not raw:
            raw = [{"name": n} for n in specs]  # not started yet: the spec is all there is
        containers = tuple(
            ContainerView.parse(c, specs.get(c.get("name"))) for c in raw if isinstance(c, dict)
        )
        init_specs = {
            c.get("name"): c for c in _get(spec, "initContainers", default=[]) or [] if isinstance(c, dict)
        }
        init_raw = _get(p, "init_containers", default=None) or _get(
            status, "initContainerStatuses", default=None
        ) or []
        inits = tuple(
            ContainerView.parse(c, init_specs.get(c.get("name")), init=True)
            for c in init_raw
            if isinstance(c, dict)
        )
        volumes = []
        for v in _get(p, "volumes", default=None) or _get(spec, "volumes", default=[]) or []:
            if not isinstance(v, dict):
                continue
            if "type" in v:
                volumes.append((str(v.get("name", "")), str(v.get("type", "")), str(v.get("source", "") or "")))
                continue
            for key, label, src in (
                ("configMap", "config_map", "name"),
                ("secret", "secret", "secretName"),
                ("persistentVolumeClaim", "pvc", "claimName"),
            ):
                if key in v:
                    volumes.append((str(v.get("name", "")), label, str((v[key] or {}).get(src, ""))))
        selector = _get(p, "node_selector", default=None) or _get(spec, "nodeSelector", default={}) or {}
        labels = _get(p, "labels", default=None) or _get(meta, "labels", default={}) or {}
        owner = _get(p, "owner", default=None)
        okind = oname = ""
        if isinstance(owner, dict):
            okind, oname = str(owner.get("kind", "")), str(owner.get("name", ""))
        elif isinstance(owner, str) and "/" in owner:
            okind, _, oname = owner.partition("/")
            okind, oname = okind, oname.split("/")[-1]
        else:
            refs = _get(meta, "ownerReferences", default=[]) or []
            if refs and isinstance(refs[0], dict):
                okind, oname = str(refs[0].get("kind", "")), str(refs[0].get("name", ""))
        conds_raw = _get(p, "conditions", default=None) or _get(status, "conditions", default=[]) or []
        conds = tuple(
            (
                str(c.get("type", "")),
                str(c.get("status", "")),
                str(c.get("reason", "") or ""),
                str(c.get("message", "") or ""),
            )
            for c in conds_raw
            if isinstance(c, dict)
        )
        return cls(
            namespace=str(_get(p, "namespace", default="") or _get(meta, "namespace", default="")),
            name=str(_get(p, "name", default="") or _get(meta, "name", default="")),
            phase=str(_get(p, "phase", default="") or _get(status, "phase", default="")),
            containers=containers,
            owner_kind=okind,
            owner_name=oname,
            conditions=conds,
            node=str(
                _get(p, "node", "node_name", "nodeName", default="") or _get(spec, "nodeName", default="")
            ),
            reason=str(_get(p, "reason", default="") or _get(status, "reason", default="") or ""),
            message=str(_get(p, "message", default="") or _get(status, "message", default="") or ""),
            deleting=str(_get(p, "status", default="")) == "Terminating"
            or bool(_get(meta, "deletionTimestamp", default=None)),
            init_containers=inits,
            volumes=tuple(volumes),
            node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
            labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())) if isinstance(labels, dict) else (),
            service_account=str(
                _get(p, "service_account", default="") or _get(spec, "serviceAccountName", default="") or ""
            ),
            image_pull_secrets=_pull_secrets(p, spec),
            ip=str(_get(p, "pod_ip", "ip", default="") or _get(status, "podIP", default="") or ""),
            host_network=bool(_get(p, "host_network", default=None) or _get(spec, "hostNetwork", default=False)),
            dns_policy=str(_get(p, "dns_policy", default="") or _get(spec, "dnsPolicy", default="") or ""),
            annotations=tuple(
                (str(k), str(v))
                for k, v in sorted((_get(p, "annotations", default=None) or _get(meta, "annotations", default={}) or {}).items())
                if k in _READ_ANNOTATIONS
            ),
            ready_since=next(
                (
                    str(c.get("last_transition") or c.get("lastTransitionTime") or c.get("last_transition_time") or "")
                    for c in conds_raw
                    if isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
                ),
                "",
            ),
        )

    @property
    def restarts(self) -> int:
        return sum(c.restart_count for c in self.containers)

    @property
    def healthy(self) -> bool:
        if self.phase == "Succeeded":
            return True
        if self.phase != "Running" or self.deleting:
            return False
        return all(c.ready for c in self.containers) if self.containers else False

    @property
    def all_containers(self) -> tuple[ContainerView, ...]:
        return self.init_containers + self.containers

    @property
    def workload(self) -> tuple[str, str]:
        """(kind, name) of the owning workload, ReplicaSets and Jobs folded into their parents."""
        kind, name = self.owner_kind, self.owner_name
        if kind == "ReplicaSet":
            m = re.match(r"^(.*)-[a-z0-9]{6,10}$", name)
            return ("Deployment", m.group(1) if m else name)
        if kind == "Job":
            return ("Job", name)
        if kind:
            return (kind, name)
        return ("Pod", self.name)


def _pull_secrets(p: dict[str, Any], spec: Any) -> tuple[str, ...] | None:
    """imagePullSecrets by name; ``None`` when the record cannot say (a list_pods summary)."""
    if "image_pull_secrets" in p:
        return tuple(str(x) for x in p.get("image_pull_secrets") or [])
    if isinstance(spec, dict) and spec:
        return tuple(
            str(x.get("name")) for x in spec.get("imagePullSecrets") or [] if isinstance(x, dict) and x.get("name")
        )
    if any(k in p for k in ("restart_policy", "service_account", "volumes", "tolerations")):  # kube-mcp's get_pod record leaves out empty fields
        return ()
    return None


@dataclass(frozen=True)
class EventView:
    namespace: str
    type: str
    reason: str
    message: str
    object_kind: str = ""
    object_name: str = ""
    count: int = 1
    last_seen: str = ""  # lastTimestamp (or eventTime / firstTimestamp), "" when the record has none
    first_seen: str = ""  # firstTimestamp (or eventTime), "" when the record has none

    @classmethod
    def parse(cls, e: dict[str, Any]) -> EventView:
        meta = _get(e, "metadata", default={}) or {}
        io = _get(e, "involved_object", "involvedObject", "object", "regarding", default={}) or {}
        if isinstance(io, str):
            kind, _, name = io.partition("/")
            io = {"kind": kind, "name": name.split("/")[-1]}
        return cls(
            namespace=str(_get(e, "namespace", default="") or _get(meta, "namespace", default="")),
            type=str(_get(e, "type", default="") or ""),
            reason=str(_get(e, "reason", default="") or ""),
            message=str(_get(e, "message", "note", default="") or ""),
            object_kind=str(_get(e, "involved_object_kind", default="") or _get(io, "kind", default="")),
            object_name=str(_get(e, "involved_object_name", default="") or _get(io, "name", default="")),
            count=int(_get(e, "count", default=1) or 1),
            last_seen=str(
                _get(e, "last_timestamp", "lastTimestamp", "event_time", "eventTime", "first_timestamp", "firstTimestamp", default="")
                or _get(_get(e, "series", default={}) or {}, "lastObservedTime", default="")
                or ""
            ),
            first_seen=str(_get(e, "first_timestamp", "firstTimestamp", "first_seen", "event_time", "eventTime", default="") or ""),
        )


@dataclass(frozen=True)
class WorkloadView:
    namespace: str
    kind: str
    name: str
    replicas: int | None = None
    ready: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    conditions: tuple[tuple[str, str, str, str], ...] = ()
    paused: bool = False
    updated: int | None = None
    owner_kind: str = ""
    owner_name: str = ""
    failed: int = 0
    selector: str = ""

    @classmethod
    def parse(cls, w: dict[str, Any]) -> WorkloadView:
        meta = _get(w, "metadata", default={}) or {}
        status = _get(w, "status", default={}) if isinstance(_get(w, "status"), dict) else {}
        reps = _get(w, "replicas", default=None)
        spec = _get(w, "spec", default={}) if isinstance(_get(w, "spec"), dict) else {}
        desired = ready = updated = None
        if isinstance(reps, dict):
            desired, ready, updated = _int(reps.get("desired")), _int(reps.get("ready")), _int(reps.get("updated"))
        else:
            desired = _int(reps if reps is not None else spec.get("replicas"))
            ready = _int(_get(status, "readyReplicas", default=None))
            updated = _int(_get(status, "updatedReplicas", default=None))
        conds_raw = _get(w, "conditions", default=None) or _get(status, "conditions", default=[]) or []
        conds = tuple(
            (str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason", "") or ""), str(c.get("message", "") or ""))
            for c in conds_raw
            if isinstance(c, dict)
        )
        owner = _get(w, "owner", default=None)
        if not isinstance(owner, dict):
            refs = _get(meta, "ownerReferences", default=[]) or []
            owner = refs[0] if refs and isinstance(refs[0], dict) else {}
        job = _get(w, "job", default={}) or {}
        sel = _get(w, "selector", default="") or _get(spec, "selector", default="")
        return cls(
            namespace=str(_get(w, "namespace", default="") or _get(meta, "namespace", default="")),
            kind=str(_get(w, "kind", default="")),
            name=str(_get(w, "name", default="") or _get(meta, "name", default="")),
            replicas=desired,
            ready=ready,
            conditions=conds,
            paused=bool(_get(w, "paused", default=False) or spec.get("paused", False)),
            updated=updated,
            owner_kind=str(owner.get("kind", "")),
            owner_name=str(owner.get("name", "")),
            failed=int(job.get("failed", 0) or _get(status, "failed", default=0) or 0) if isinstance(job, dict) else 0,
            selector=sel if isinstance(sel, str) else "",
            extra=_controller_fields(w, spec, status),
        )


def _controller_fields(w: dict[str, Any], spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """The controller settings the investigator reasons with (kube-mcp's record or a raw object):
    Job activeDeadlineSeconds/backoffLimit, CronJob concurrencyPolicy/startingDeadlineSeconds/
    suspend/active jobs, StatefulSet podManagementPolicy/partition, Deployment progress deadline."""
    job = _get(w, "job", default=None) or {}
    cron = _get(w, "cron", default=None) or {}
    raw_cron = spec.get("jobTemplate") is not None
    out: dict[str, Any] = {
        "active_deadline_seconds": job.get("active_deadline_seconds", spec.get("activeDeadlineSeconds") if not raw_cron else None),
        "backoff_limit": job.get("backoff_limit", spec.get("backoffLimit") if not raw_cron else None),
        "start_time": job.get("start_time", status.get("startTime")),
        "concurrency_policy": cron.get("concurrency_policy", spec.get("concurrencyPolicy")),
        "starting_deadline_seconds": cron.get("starting_deadline_seconds", spec.get("startingDeadlineSeconds")),
        "suspend": cron.get("suspend", spec.get("suspend")),
        "active_jobs": cron.get("active_jobs") or [a.get("name") for a in status.get("active") or [] if isinstance(a, dict)],
        "last_schedule_time": cron.get("last_schedule_time", status.get("lastScheduleTime")),
        "last_successful_time": cron.get("last_successful_time", status.get("lastSuccessfulTime")),
        "pod_management_policy": _get(w, "pod_management_policy", default=None) or spec.get("podManagementPolicy"),
        "partition": _get(w, "partition", default=None)
        if _get(w, "partition", default=None) is not None
        else ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition"),
        "progress_deadline_seconds": _get(w, "progress_deadline_seconds", default=None) or spec.get("progressDeadlineSeconds"),
    }
    return {k: v for k, v in out.items() if v not in (None, [], "")}
