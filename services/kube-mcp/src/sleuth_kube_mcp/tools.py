"""The MCP tools: names, descriptions written for a model, argument schemas, and the one place
where API errors become error results (never exceptions escaping to the client)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from sleuth_common.mcp import kubectl_command as kubectl_for
from sleuth_kube_mcp._identity import IdentityGate, Unauthenticated
from sleuth_kube_mcp._metrics import Metrics
from sleuth_kube_mcp._validate import ArgumentError, check_arguments
from sleuth_kube_mcp.analysis import analyze_logs, subgraph
from sleuth_kube_mcp.kube import Caller, KubeApiError, KubeUnavailable, UnsafePath
from sleuth_kube_mcp.reads import BadRequest, KubeReader

__all__ = ["CLUSTER_ADMIN_META_KEY", "TOOL_NAMES", "register_tools"]

log = logging.getLogger(__name__)

CLUSTER_ADMIN_META_KEY = "sleuth/cluster_admin_only"
TOOL_NAMES = (
    "list_pods",
    "get_pod",
    "pod_logs",
    "list_events",
    "list_workloads",
    "list_services",
    "list_pvcs",
    "list_quotas",
    "list_nodes",
    "get_resource",
    "list_resources",
    "list_storage",
    "analyze_logs",
    "subgraph",
)

Namespace = Annotated[str, Field(description="Kubernetes namespace to read, e.g. my-namespace.", min_length=1)]
PodName = Annotated[str, Field(description="Pod name, e.g. web-5d8f7c9b6-abcde.", min_length=1)]

_READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_JSON = "Returns JSON text."

DESCRIPTIONS = {
    "list_pods": (
        "List the pods of one namespace with their health: phase, kubectl-style status "
        "(CrashLoopBackOff, ImagePullBackOff, Pending, Completed...), node, ready count, restarts, owner "
        "(kind/name), conditions, start time, and per container: image, ready, restart_count, current "
        "state (waiting/running/terminated with reason, message, exit_code), last_termination (reason "
        "such as OOMKilled or Error, exit_code, finished_at) and resources (requests/limits). "
        "Use it first to find which pods are unhealthy and why. Narrow with label_selector "
        "(e.g. app.kubernetes.io/name=web) or field_selector (e.g. status.phase=Pending). "
        'Result: {"namespace", "count", "pods": [...], "omitted"?}. ' + _JSON
    ),
    "get_pod": (
        "Get one pod in detail: everything list_pods shows plus, per container, probes "
        "(liveness/readiness/startup), env var names with their sources (secret/configmap refs by name; "
        "literal values of secret-looking variables are redacted), env_from, ports, command/args and "
        "volume mounts; and for the pod: volumes (configmap/secret/pvc names), node selector, affinity, "
        "tolerations, service account, annotations. Use it when a pod's configuration may be the cause "
        "(missing ConfigMap or Secret, probe settings, scheduling constraints, limits). " + _JSON
    ),
    "pod_logs": (
        "Read a container's log lines (each prefixed with its RFC 3339 timestamp), newest last. "
        "previous=true reads the container instance that ran before the last restart: use it for "
        "crash-looping containers to see why they died (stack traces, connection errors). container "
        "defaults to the pod's default (first) container. tail_lines (default 200, max 5000) limits "
        "the lines; since_seconds limits to recent lines. "
        'Result: {"namespace", "pod", "container", "previous", "tail_lines", "lines": [...], '
        '"truncated": true when the byte limit cut older lines}. ' + _JSON
    ),
    "list_events": (
        "List the Kubernetes events of one namespace, newest first: type (Normal/Warning), reason "
        "(BackOff, Failed, FailedScheduling, Unhealthy, OOMKilling...), message, count, first/last "
        "timestamp, involved_object (kind, name) and source. Filter with involved_object_name "
        '(a pod, deployment... name), involved_object_kind and types (e.g. ["Warning"]). Use it to '
        "learn what the scheduler and kubelet said about a failing object (image pull errors, missing "
        'configmaps, insufficient resources, probe failures). Result: {"namespace", "count", '
        '"events": [...], "omitted"?}. ' + _JSON
    ),
    "list_workloads": (
        "List the workload controllers of one namespace: Deployments, StatefulSets, DaemonSets, "
        "ReplicaSets, Jobs and CronJobs (or only the kinds given), each with replicas "
        "(desired/current/ready/available/updated), conditions (e.g. Progressing=False "
        "ProgressDeadlineExceeded), label selector (usable as list_pods label_selector), images, "
        "container resources, owner, and job/cron details (succeeded/failed, schedule, last run). "
        'Use it to map pods to their owners and see rollouts that are stuck. Result: {"namespace", '
        '"count", "workloads": [...], "errors"?: [kinds that could not be read]}. ' + _JSON
    ),
    "list_services": (
        "List the Services of one namespace with type, cluster IP, ports (port, target_port), "
        "selector and endpoints: ready and not_ready addresses with the pod behind each. A Service "
        "with no ready endpoints sends traffic nowhere; compare its selector with the pods' labels. "
        'Result: {"namespace", "count", "services": [...]}. ' + _JSON
    ),
    "list_pvcs": (
        "List the PersistentVolumeClaims of one namespace with phase (Bound/Pending/Lost), storage "
        "class, requested size, capacity, bound volume and access modes. Use it when pods are Pending "
        'on volumes or fail to mount. Result: {"namespace", "count", "pvcs": [...]}. ' + _JSON
    ),
    "list_quotas": (
        "List the ResourceQuotas (hard limits, current usage, and at_limit: resources whose usage has "
        "reached the limit) and LimitRanges (default/min/max container requests and limits) of one "
        "namespace. Use it when pods cannot be created (exceeded quota) or to explain default limits. "
        'Result: {"namespace", "resource_quotas": [...], "limit_ranges": [...]}. ' + _JSON
    ),
    "list_nodes": (
        "CLUSTER-ADMIN ONLY (cluster-wide data; only callers with cluster-wide access may use it). "
        "List the cluster's nodes: Ready status, conditions (MemoryPressure, DiskPressure...), "
        "allocatable and capacity (cpu, memory, pods), taints, unschedulable, roles, zone, kubelet "
        "version. Use it for node problems and to compare pod requests with node capacity. "
        'Result: {"count", "nodes": [...]}. ' + _JSON
    ),
    "get_resource": (
        "Get any single Kubernetes object by kind and name, as the API returns it (metadata.managedFields "
        "removed; Secret data values replaced by <redacted>, keys kept). kind accepts the Kind, plural or "
        "short name (Deployment, deployments, deploy, cm, pvc, sc, hpa, netpol, ingress...) including "
        "custom resources. namespace is required for namespaced kinds and ignored for cluster-scoped "
        "ones (Node, StorageClass, PersistentVolume...). Use it for objects no other tool covers: "
        "ConfigMaps, HPAs, PDBs, NetworkPolicies, Ingresses, StorageClasses. " + _JSON
    ),
    "list_resources": (
        "List objects of one kind in one namespace, shaped for diagnosis: configmaps and secrets (names "
        "and keys only, never values), serviceaccounts, endpoints (ready/not-ready counts), hpa (target, "
        "min/max, metrics, conditions such as FailedGetResourceMetric), pdb (selector, disruptions "
        "allowed), networkpolicies (pod selector, policy types, ingress/egress peers and ports), ingresses "
        "(class, host/path -> service:port routes, TLS secret names), roles (rules) and rolebindings "
        "(role, subjects). Use it to check that referenced objects exist and how traffic and permissions "
        'are set up. Result: {"namespace", "kind", "count", "items": [...]}. ' + _JSON
    ),
    "list_storage": (
        "List cluster-scoped storage and routing classes: PersistentVolumes (phase, capacity, class, "
        "claim), StorageClasses (provisioner, default, binding mode, expansion) and IngressClasses. "
        "kinds narrows to some of persistentvolumes, storageclasses, ingressclasses. Use it when a PVC "
        "stays Pending (does its storage class exist?) or an Ingress names a class. Every record is "
        'marked cluster_scoped. Result: {"count", "items": [...]}. ' + _JSON
    ),
    "analyze_logs": (
        "Read the logs of a workload's pods together (unhealthy pods first; default 20 pods, 200 lines "
        "per container, current and previous instances, 4 MiB in all, 5 pods at a time, 10 s per pod) "
        "and group error and warning lines that differ only in timestamps, ids, UUIDs, hex, IPs and "
        "numbers into patterns, each with count, pods, example, first/last seen (from the log "
        "timestamps) and, given reference_time (e.g. the alert's start), the offset of first_seen from "
        "it. Says which log windows were full (first_seen may then be earlier) and lists every pod "
        "skipped and why. Timing is correlation, not cause. Pass workload (with kind for an exact "
        'selector) or label_selector. Result: {"namespace", "pods_read", "pods_skipped", "patterns": '
        '[...], "note"}. ' + _JSON
    ),
    "subgraph": (
        "The topology around one object of a namespace, as nodes with ids (Kind/namespace/name, or "
        "Kind/name for cluster-scoped ones such as Node, StorageClass, PersistentVolume) and edges: "
        "owner chains (owned-by), Service -> Pods (selects, with ready_endpoints), Ingress -> Service "
        "(routes-to), Pod -> Node (runs-on), Pod -> PVC/ConfigMap/Secret (mounts, env-from, pulls-with; "
        "missing=true when the referenced object does not exist), PVC -> PV/StorageClass, HPA -> target "
        "(scales), PDB -> Pods (protects), NetworkPolicy -> Pods (applies-to). hops (default 2) bounds "
        'the walk; budget (tokens, default 2000) trims it. Result: {"focus", "nodes", "edges"}. ' + _JSON
    ),
}

_PAGED = (
    " A list holds at most a server-set number of records; when the cluster has more, the result says "
    '"complete": false with a "note" (and "omitted" when the API server counted them): narrow the query '
    "rather than conclude from a partial list."
)
for _name in ("list_pods", "list_events", "list_workloads", "list_services", "list_pvcs", "list_nodes",
              "list_resources", "list_storage"):
    DESCRIPTIONS[_name] += _PAGED


def _text(payload: Any, is_error: bool = False) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload, separators=(",", ":"), default=str))],
        is_error=is_error,
    )


def error_result(tool: str, args: dict[str, Any], exc: Exception) -> CallToolResult:
    """The error result of a failed read: what the API said, and the kubectl command to replay it."""
    command = kubectl_for(tool, args)
    if isinstance(exc, KubeApiError):
        body: dict[str, Any] = {"error": exc.message, "code": exc.code, "reason": exc.reason}
    elif isinstance(exc, KubeUnavailable):
        body = {"error": f"unavailable: {exc}", "code": 0, "reason": "Unavailable"}
    else:
        body = {"error": str(exc), "code": 400, "reason": "BadRequest"}
    body["command"] = command
    return _text(body, is_error=True)


def register_tools(server: MCPServer, reader: KubeReader, metrics: Metrics, gate: IdentityGate) -> None:
    """Add the read-only tools of ``TOOL_NAMES`` to ``server``. Each call is checked
    (``_validate.check_arguments``) and then read as the identity ``gate`` finds on the request."""

    async def run(
        tool: str, args: dict[str, Any], ctx: Context, call: Callable[[Caller | None], Awaitable[Any]]
    ) -> CallToolResult:
        started = time.perf_counter()
        outcome = "ok"
        try:
            try:
                check_arguments(tool, args)
            except ArgumentError as e:
                raise BadRequest(str(e)) from e
            try:
                caller = gate.caller_for(ctx.headers or {})
            except Unauthenticated as e:
                outcome = "unauthenticated"
                metrics.tool_calls.labels(tool=tool, outcome=outcome).inc()
                return _text({"error": f"unauthenticated: {e}", "code": 401, "reason": "Unauthorized",
                              "command": kubectl_for(tool, args)}, is_error=True)
            if caller.impersonates:
                log.info("tool %s as %s", tool, caller.user, extra={"job_id": caller.job, "tool": tool})
            result = _text(await call(caller))
        except (KubeApiError, KubeUnavailable, BadRequest, UnsafePath) as e:
            outcome = (
                "unavailable"
                if isinstance(e, KubeUnavailable)
                else "bad_request"
                if isinstance(e, BadRequest | UnsafePath)
                else f"api_{e.code}"
            )
            log.info("tool %s failed: %s", tool, outcome)
            result = error_result(tool, args, e)
        metrics.tool_calls.labels(tool=tool, outcome=outcome).inc()
        metrics.tool_seconds.labels(tool=tool).observe(time.perf_counter() - started)
        return result

    def add(fn: Callable[..., Any], name: str, meta: dict[str, Any] | None = None) -> None:
        server.add_tool(
            fn,
            name=name,
            description=DESCRIPTIONS[name],
            annotations=_READ_ONLY,
            meta=meta,
            structured_output=False,
        )

    async def list_pods(
        namespace: Namespace,
        ctx: Context,
        label_selector: Annotated[
            str, Field(description="Label selector as for kubectl -l, e.g. app.kubernetes.io/name=api.")
        ] = "",
        field_selector: Annotated[
            str, Field(description="Field selector, e.g. status.phase=Pending or spec.nodeName=node-1.")
        ] = "",
    ) -> CallToolResult:
        args = {"namespace": namespace, "label_selector": label_selector, "field_selector": field_selector}
        return await run(
            "list_pods", args, ctx, lambda t: reader.list_pods(namespace, label_selector, field_selector, t)
        )

    async def get_pod(namespace: Namespace, name: PodName, ctx: Context) -> CallToolResult:
        args = {"namespace": namespace, "name": name}
        return await run("get_pod", args, ctx, lambda t: reader.get_pod(namespace, name, t))

    async def pod_logs(
        namespace: Namespace,
        name: PodName,
        ctx: Context,
        container: Annotated[
            str, Field(description="Container name; default: the pod's first container.")
        ] = "",
        previous: Annotated[
            bool, Field(description="Read the previous (crashed) instance of the container.")
        ] = False,
        tail_lines: Annotated[int, Field(description="Last N lines (max 5000).", ge=1, le=5000)] = 200,
        since_seconds: Annotated[
            int | None, Field(description="Only lines newer than this many seconds.", ge=1)
        ] = None,
    ) -> CallToolResult:
        args = {
            "namespace": namespace,
            "name": name,
            "container": container,
            "previous": previous,
            "tail_lines": tail_lines,
            "since_seconds": since_seconds,
        }
        return await run(
            "pod_logs",
            args,
            ctx,
            lambda t: reader.pod_logs(namespace, name, container, previous, tail_lines, since_seconds, t),
        )

    async def list_events(
        namespace: Namespace,
        ctx: Context,
        involved_object_name: Annotated[
            str, Field(description="Only events about the object with this name (pod, deployment, ...).")
        ] = "",
        involved_object_kind: Annotated[
            str, Field(description="Only events about objects of this kind, e.g. Pod.")
        ] = "",
        types: Annotated[
            list[Literal["Normal", "Warning"]] | None,
            Field(description='Only these event types, e.g. ["Warning"]; default both.'),
        ] = None,
    ) -> CallToolResult:
        args = {
            "namespace": namespace,
            "involved_object_name": involved_object_name,
            "involved_object_kind": involved_object_kind,
            "types": list(types or []),
        }
        return await run(
            "list_events",
            args,
            ctx,
            lambda t: reader.list_events(
                namespace, involved_object_name, involved_object_kind, list(types or []), t
            ),
        )

    async def list_workloads(
        namespace: Namespace,
        ctx: Context,
        kinds: Annotated[
            list[Literal["deployments", "statefulsets", "daemonsets", "replicasets", "jobs", "cronjobs"]]
            | None,
            Field(description="Only these kinds; default all six."),
        ] = None,
    ) -> CallToolResult:
        args = {"namespace": namespace, "kinds": list(kinds or [])}
        return await run(
            "list_workloads",
            args,
            ctx,
            lambda t: reader.list_workloads(namespace, list(kinds or []) or None, t),
        )

    async def list_services(namespace: Namespace, ctx: Context) -> CallToolResult:
        return await run(
            "list_services", {"namespace": namespace}, ctx, lambda t: reader.list_services(namespace, t)
        )

    async def list_pvcs(namespace: Namespace, ctx: Context) -> CallToolResult:
        return await run("list_pvcs", {"namespace": namespace}, ctx, lambda t: reader.list_pvcs(namespace, t))

    async def list_quotas(namespace: Namespace, ctx: Context) -> CallToolResult:
        return await run(
            "list_quotas", {"namespace": namespace}, ctx, lambda t: reader.list_quotas(namespace, t)
        )

    async def list_nodes(ctx: Context) -> CallToolResult:
        return await run("list_nodes", {}, ctx, lambda t: reader.list_nodes(t))

    async def get_resource(
        kind: Annotated[
            str,
            Field(
                description="Kind, plural or short name: Deployment, configmaps, cm, pvc, hpa...",
                min_length=1,
            ),
        ],
        name: Annotated[str, Field(description="Object name.", min_length=1)],
        ctx: Context,
        namespace: Annotated[
            str,
            Field(description="Namespace; required for namespaced kinds, ignored for cluster-scoped ones."),
        ] = "",
    ) -> CallToolResult:
        args = {"kind": kind, "name": name, "namespace": namespace}
        return await run("get_resource", args, ctx, lambda t: reader.get_resource(kind, name, namespace, t))

    async def list_resources(
        kind: Annotated[
            str,
            Field(
                description="configmaps, secrets, serviceaccounts, endpoints, hpa, pdb, networkpolicies, "
                "ingresses, roles or rolebindings (singular and short names work).",
                min_length=1,
            ),
        ],
        namespace: Namespace,
        ctx: Context,
        label_selector: Annotated[str, Field(description="Label selector as for kubectl -l.")] = "",
    ) -> CallToolResult:
        args = {"kind": kind, "namespace": namespace, "label_selector": label_selector}
        return await run(
            "list_resources", args, ctx, lambda t: reader.list_resources(kind, namespace, label_selector, t)
        )

    async def list_storage(
        ctx: Context,
        kinds: Annotated[
            list[str] | None,
            Field(description="Some of persistentvolumes, storageclasses, ingressclasses; default all."),
        ] = None,
    ) -> CallToolResult:
        args = {"kinds": list(kinds or [])}
        return await run(
            "list_storage", args, ctx, lambda t: reader.list_storage(list(kinds or []) or None, t)
        )

    async def analyze_logs_tool(
        namespace: Namespace,
        ctx: Context,
        workload: Annotated[str, Field(description="Workload (or pod-name prefix) whose pods to read.")] = "",
        kind: Annotated[
            str,
            Field(description="Kind of the workload: Deployment, StatefulSet, DaemonSet, ReplicaSet, Job."),
        ] = "",
        label_selector: Annotated[str, Field(description="Pods to read, as for kubectl -l.")] = "",
        reference_time: Annotated[
            str, Field(description="RFC 3339 time to measure first_seen offsets from (an alert's start).")
        ] = "",
        max_pods: Annotated[int, Field(description="Most pods to read.", ge=1, le=100)] = 20,
        tail_lines: Annotated[int, Field(description="Lines per container log.", ge=1, le=5000)] = 200,
    ) -> CallToolResult:
        args = {
            "namespace": namespace,
            "workload": workload,
            "kind": kind,
            "label_selector": label_selector,
            "reference_time": reference_time,
            "max_pods": max_pods,
            "tail_lines": tail_lines,
        }
        return await run(
            "analyze_logs",
            args,
            ctx,
            lambda t: analyze_logs(
                reader,
                namespace,
                workload,
                kind,
                label_selector,
                reference_time,
                max_pods=max_pods,
                tail_lines=tail_lines,
                caller=t,
            ),
        )

    async def subgraph_tool(
        namespace: Namespace,
        kind: Annotated[
            str, Field(description="Kind of the focus object (Deployment, Service, Pod...).", min_length=1)
        ],
        name: Annotated[str, Field(description="Name of the focus object.", min_length=1)],
        ctx: Context,
        hops: Annotated[
            int, Field(description="How many edges away from the focus to walk.", ge=0, le=5)
        ] = 2,
        budget: Annotated[
            int, Field(description="Approximate token budget of the result.", ge=200, le=20000)
        ] = 2000,
    ) -> CallToolResult:
        args = {"namespace": namespace, "kind": kind, "name": name, "hops": hops, "budget": budget}
        return await run(
            "subgraph", args, ctx, lambda t: subgraph(reader, namespace, kind, name, hops, budget, t)
        )

    add(list_pods, "list_pods")
    add(get_pod, "get_pod")
    add(pod_logs, "pod_logs")
    add(list_events, "list_events")
    add(list_workloads, "list_workloads")
    add(list_services, "list_services")
    add(list_pvcs, "list_pvcs")
    add(list_quotas, "list_quotas")
    add(list_nodes, "list_nodes", meta={CLUSTER_ADMIN_META_KEY: True})
    add(get_resource, "get_resource")
    add(list_resources, "list_resources")
    add(list_storage, "list_storage")
    add(analyze_logs_tool, "analyze_logs")
    add(subgraph_tool, "subgraph")
    _tidy_schemas(server)


def _tidy(schema: Any) -> Any:
    """Drop pydantic's "title" noise and turn ``anyOf: [X, null]`` (optional) into X."""
    if isinstance(schema, list):
        return [_tidy(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _tidy(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    any_of = out.get("anyOf")
    if isinstance(any_of, list):
        non_null = [s for s in any_of if s != {"type": "null"}]
        if len(non_null) == 1 and len(non_null) < len(any_of):
            out.pop("anyOf")
            out = non_null[0] | out
            if out.get("default", "") is None:
                out.pop("default")
    return out


def _tidy_schemas(server: MCPServer) -> None:
    for name in TOOL_NAMES:
        tool = server._tool_manager.get_tool(name)  # the SDK has no public setter for a tool's schema
        if tool is not None:
            tool.parameters = _tidy(tool.parameters)
            tool.parameters.setdefault("required", [])
            tool.parameters["additionalProperties"] = False
