"""Per-kind table rows, ported from kubectl's `pkg/printers/internalversion/printers.go`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sleuth_common.k8s import LabelSelector, SelectorError, parse_time

from ._timefmt import human_duration, since

Obj = dict[str, Any]
Row = Callable[[Obj, datetime], list[Any]]


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0


def _g(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return default if obj is None else obj


def _name(obj: Obj) -> str:
    return _g(obj, "metadata", "name", default="")


def _age(obj: Obj, now: datetime) -> str:
    return since(_g(obj, "metadata", "creationTimestamp"), now)


NAME = Column("Name", format="name", description="Name must be unique within a namespace.")
AGE = Column("Age", description="CreationTimestamp is a timestamp representing the server time when this "
                                "object was created.")


def _wide(*names: str) -> list[Column]:
    return [Column(n, priority=1) for n in names]


# -- pods -----------------------------------------------------------------------------------------

def _restartable_init(spec_init: dict[str, Obj], name: str) -> bool:
    return _g(spec_init.get(name, {}), "restartPolicy") == "Always"


def _terminated_reason(term: Obj, prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + term["reason"]
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def pod_row(pod: Obj, now: datetime) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    containers = spec.get("containers") or []
    total, ready, restarts = len(containers), 0, 0
    last_restart: datetime | None = None
    reason = status.get("reason") or status.get("phase") or ""
    conditions = status.get("conditions") or []
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions):
        reason = "SchedulingGated"
    spec_init = {c.get("name"): c for c in spec.get("initContainers") or []}
    total += sum(1 for c in spec_init.values() if c.get("restartPolicy") == "Always")

    def note_restart(cs: Obj, acc: datetime | None) -> datetime | None:
        finished = parse_time(_g(cs, "lastState", "terminated", "finishedAt"))
        return finished if finished and (acc is None or finished > acc) else acc

    initializing = False
    sidecar_restarts, sidecar_last = 0, None
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        last_restart = note_restart(cs, last_restart)
        sidecar = _restartable_init(spec_init, cs.get("name"))
        if sidecar:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            sidecar_last = note_restart(cs, sidecar_last)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term and term.get("exitCode", 0) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if term:
            reason = _terminated_reason(term, "Init:")
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec_init)}"
        initializing = True
        break

    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions)
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, sidecar_last
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = note_restart(cs, last_restart)
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif term:
                reason = _terminated_reason(term)
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            reason = "Running" if pod_ready else "NotReady"

    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Succeeded", "Failed"):
            reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    ips = status.get("podIPs") or []
    ip = (ips[0].get("ip") if ips else None) or status.get("podIP") or "<none>"
    gates = spec.get("readinessGates") or []
    gates_text = "<none>"
    if gates:
        by_type = {c.get("type"): c.get("status") for c in conditions}
        gates_text = f"{sum(1 for g in gates if by_type.get(g.get('conditionType')) == 'True')}/{len(gates)}"
    return [meta.get("name", ""), f"{ready}/{total}", reason, restarts_text, _age(pod, now),
            ip, spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", gates_text]


POD_COLUMNS = [
    NAME,
    Column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", description="The aggregate status of the containers in this pod."),
    Column("Restarts", description="The number of times the containers in this pod have been restarted "
                                   "and when the last container in this pod has restarted."),
    AGE,
    Column("IP", priority=1, description="IP address allocated to the pod. Routable at least within the cluster."),
    Column("Node", priority=1, description="NodeName is a request to schedule this pod onto a specific node."),
    Column("Nominated Node", priority=1, description="nominatedNodeName is set when this pod preempts other pods."),
    Column("Readiness Gates", priority=1, description="If specified, all readiness gates will be evaluated."),
]


# -- workloads ------------------------------------------------------------------------------------

def _template_cols(obj: Obj) -> list[str]:
    cs = _g(obj, "spec", "template", "spec", "containers", default=[])
    return [",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs),
            format_selector(_g(obj, "spec", "selector"))]


def format_selector(sel: Any, none: str = "<none>") -> str:
    """`metav1.FormatLabelSelector`: the selector as the API server prints it (requirements by
    key), `none` when it selects nothing or everything, `<error>` when it is not valid."""
    if not sel:
        return none
    try:
        return str(LabelSelector.from_dict(sel).canonical()) or none
    except SelectorError:
        return "<error>"


def _st(obj: Obj, key: str) -> int:
    return int(_g(obj, "status", key, default=0))


def _replicas(obj: Obj) -> int:
    return int(_g(obj, "spec", "replicas", default=1))


def deployment_row(o: Obj, now: datetime) -> list[Any]:
    return [_name(o), f"{_st(o, 'readyReplicas')}/{_replicas(o)}", _st(o, "updatedReplicas"),
            _st(o, "availableReplicas"), _age(o, now), *_template_cols(o)]


def replicaset_row(o: Obj, now: datetime) -> list[Any]:
    return [_name(o), _replicas(o), _st(o, "replicas"), _st(o, "readyReplicas"), _age(o, now), *_template_cols(o)]


def statefulset_row(o: Obj, now: datetime) -> list[Any]:
    return [_name(o), f"{_st(o, 'readyReplicas')}/{_replicas(o)}", _age(o, now), *_template_cols(o)[:2]]


def daemonset_row(o: Obj, now: datetime) -> list[Any]:
    node_sel = _g(o, "spec", "template", "spec", "nodeSelector", default={})
    return [_name(o), _st(o, "desiredNumberScheduled"), _st(o, "currentNumberScheduled"), _st(o, "numberReady"),
            _st(o, "updatedNumberScheduled"), _st(o, "numberAvailable"),
            ",".join(f"{k}={v}" for k, v in sorted(node_sel.items())) or "<none>", _age(o, now),
            *_template_cols(o)]


def _condition_true(o: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in _g(o, "status", "conditions", default=[]))


def job_row(o: Obj, now: datetime) -> list[Any]:
    status = "Running"
    for cond in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if _condition_true(o, cond):
            status = cond
            break
    completions = _g(o, "spec", "completions")
    comp_text = f"{_st(o, 'succeeded')}/{completions}" if completions is not None else f"{_st(o, 'succeeded')}/1"
    start, end = parse_time(_g(o, "status", "startTime")), parse_time(_g(o, "status", "completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    return [_name(o), status, comp_text, duration, _age(o, now), *_template_cols(o)]


def cronjob_row(o: Obj, now: datetime) -> list[Any]:
    tmpl = {"spec": _g(o, "spec", "jobTemplate", "spec", default={})}
    last = _g(o, "status", "lastScheduleTime")
    return [_name(o), _g(o, "spec", "schedule", default=""), _g(o, "spec", "timeZone", default="<none>"),
            "True" if _g(o, "spec", "suspend") else "False", len(_g(o, "status", "active", default=[])),
            since(last, now) if last else "<none>", _age(o, now), *_template_cols(tmpl)]


WORKLOAD_COLUMNS = _wide("Containers", "Images", "Selector")


# -- everything else ------------------------------------------------------------------------------

def service_row(o: Obj, now: datetime) -> list[Any]:
    spec = o.get("spec") or {}
    stype = spec.get("type") or "ClusterIP"
    external = "<none>"
    if stype == "LoadBalancer":
        ingress = _g(o, "status", "loadBalancer", "ingress", default=[])
        ips = [i.get("ip") or i.get("hostname") for i in ingress] + list(spec.get("externalIPs") or [])
        external = ",".join(x for x in ips if x) or "<pending>"
    elif stype == "ExternalName":
        external = spec.get("externalName") or "<none>"
    elif spec.get("externalIPs"):
        external = ",".join(spec["externalIPs"])
    ports = []
    for p in spec.get("ports") or []:
        node_port = f":{p['nodePort']}" if p.get("nodePort") else ""
        ports.append(f"{p.get('port')}{node_port}/{p.get('protocol') or 'TCP'}")
    selector = spec.get("selector") or {}
    return [_name(o), stype, spec.get("clusterIP") or "<none>", external, ",".join(ports) or "<none>",
            _age(o, now), ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"]


def event_row(o: Obj, now: datetime) -> list[Any]:
    first = since(o.get("firstTimestamp"), now) if o.get("firstTimestamp") else since(o.get("eventTime"), now)
    last = since(o.get("lastTimestamp"), now) if o.get("lastTimestamp") else first
    count = int(o.get("count") or 0)
    if o.get("series"):
        last = since(_g(o, "series", "lastObservedTime"), now)
        count = int(_g(o, "series", "count", default=0))
    elif count == 0:
        count = 1
    ref = o.get("involvedObject") or {}
    kind = str(ref.get("kind") or "").lower()
    target = f"{kind}/{ref['name']}" if ref.get("name") else kind
    src = o.get("source") or {}
    component = src.get("component") or o.get("reportingComponent") or ""
    host = src.get("host") or o.get("reportingInstance") or ""
    source = f"{component}, {host}" if host else component
    return [last, o.get("type", ""), o.get("reason", ""), target, ref.get("fieldPath", ""), source,
            str(o.get("message") or "").strip(), first, count, _name(o)]


def namespace_row(o: Obj, now: datetime) -> list[Any]:
    return [_name(o), _g(o, "status", "phase", default="Active"), _age(o, now)]


def node_row(o: Obj, now: datetime) -> list[Any]:
    conds = {c.get("type"): c.get("status") for c in _g(o, "status", "conditions", default=[])}
    ready = conds.get("Ready")
    status = "Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"
    if _g(o, "spec", "unschedulable"):
        status += ",SchedulingDisabled"
    labels = _g(o, "metadata", "labels", default={})
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k)
    roles += [v for k, v in labels.items() if k == "kubernetes.io/role" and v]
    addrs = {a.get("type"): a.get("address") for a in _g(o, "status", "addresses", default=[])}
    info = _g(o, "status", "nodeInfo", default={})
    return [_name(o), status, ",".join(roles) or "<none>", _age(o, now), info.get("kubeletVersion", ""),
            addrs.get("InternalIP") or "<none>", addrs.get("ExternalIP") or "<none>",
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


def configmap_row(o: Obj, now: datetime) -> list[Any]:
    return [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o, now)]


def secret_row(o: Obj, now: datetime) -> list[Any]:
    return [_name(o), o.get("type") or "Opaque", len(o.get("data") or {}) + len(o.get("stringData") or {}),
            _age(o, now)]


_ACCESS = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def pvc_row(o: Obj, now: datetime) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    modes = ",".join(_ACCESS.get(m, m) for m in status.get("accessModes") or [])
    return [_name(o), status.get("phase") or "Pending", spec.get("volumeName", ""),
            _g(status, "capacity", "storage", default=""), modes, spec.get("storageClassName") or "<unset>",
            spec.get("volumeAttributesClassName") or "<unset>", _age(o, now), spec.get("volumeMode") or "Filesystem"]


def hpa_row(o: Obj, now: datetime) -> list[Any]:
    ref = _g(o, "spec", "scaleTargetRef", default={})
    targets = []
    current = {(_g(m, "resource", "name")): _g(m, "resource", "current", "averageUtilization")
               for m in _g(o, "status", "currentMetrics", default=[]) if m.get("type") == "Resource"}
    for m in _g(o, "spec", "metrics", default=[]):
        if m.get("type") == "Resource":
            name = _g(m, "resource", "name", default="")
            target = _g(m, "resource", "target", "averageUtilization")
            cur = current.get(name)
            targets.append(f"{name}: {'<unknown>' if cur is None else f'{cur}%'}/{target}%")
    return [_name(o), f"{ref.get('kind', '')}/{ref.get('name', '')}", ", ".join(targets) or "<none>",
            _g(o, "spec", "minReplicas", default=1), _g(o, "spec", "maxReplicas", default=0),
            _g(o, "status", "currentReplicas", default=0), _age(o, now)]


def _n(name: str, kind: str = "string") -> Column:
    return Column(name, type=kind)


PRINTERS: dict[str, tuple[list[Column], Row]] = {
    "pods": (POD_COLUMNS, pod_row),
    "deployments": ([NAME, _n("Ready"), _n("Up-to-date", "integer"), _n("Available", "integer"), AGE,
                     *WORKLOAD_COLUMNS], deployment_row),
    "replicasets": ([NAME, _n("Desired", "integer"), _n("Current", "integer"), _n("Ready", "integer"), AGE,
                     *WORKLOAD_COLUMNS], replicaset_row),
    "statefulsets": ([NAME, _n("Ready"), AGE, *_wide("Containers", "Images")], statefulset_row),
    "daemonsets": ([NAME, *(_n(c, "integer") for c in ("Desired", "Current", "Ready", "Up-to-date", "Available")),
                    _n("Node Selector"), AGE, *WORKLOAD_COLUMNS], daemonset_row),
    "jobs": ([NAME, _n("Status"), _n("Completions"), _n("Duration"), AGE, *WORKLOAD_COLUMNS], job_row),
    "cronjobs": ([NAME, _n("Schedule"), _n("Timezone"), _n("Suspend"), _n("Active", "integer"),
                  _n("Last Schedule"), AGE, *WORKLOAD_COLUMNS], cronjob_row),
    "services": ([NAME, _n("Type"), _n("Cluster-IP"), _n("External-IP"), _n("Port(s)"), AGE, *_wide("Selector")],
                 service_row),
    "events": ([_n("Last Seen"), _n("Type"), _n("Reason"), _n("Object"), *_wide("Subobject", "Source"),
                _n("Message"), Column("First Seen", priority=1), Column("Count", type="integer", priority=1),
                Column("Name", priority=1)], event_row),
    "horizontalpodautoscalers": ([NAME, _n("Reference"), _n("Targets"), _n("MinPods", "integer"),
                                  _n("MaxPods", "integer"), _n("Replicas", "integer"), AGE], hpa_row),
    "namespaces": ([NAME, _n("Status"), AGE], namespace_row),
    "nodes": ([NAME, _n("Status"), _n("Roles"), AGE, _n("Version"),
               *_wide("Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime")], node_row),
    "configmaps": ([NAME, _n("Data", "integer"), AGE], configmap_row),
    "secrets": ([NAME, _n("Type"), _n("Data", "integer"), AGE], secret_row),
    "persistentvolumeclaims": ([NAME, _n("Status"), _n("Volume"), _n("Capacity"), _n("Access Modes"),
                                _n("StorageClass"), _n("VolumeAttributesClass"), AGE, *_wide("VolumeMode")],
                               pvc_row),
}
