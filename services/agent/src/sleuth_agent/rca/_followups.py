"""Follow-ups in code (DESIGN §3): once the first reads show a symptom, read what explains it.

Pending → scheduling events → quota → PVC → StorageClass; restarts → last termination → limits;
readiness failures → probe spec → endpoints; network errors in logs → Services → NetworkPolicies;
FailedCreate → quota; NodeNotReady → the node (only with cluster-wide access; otherwise the
answer says the node is outside the caller's access). Each follow-up adds ``derived`` facts,
template variables and citable results to the observation; a follow-up whose read fails leaves
the observation as it was (the failure is recorded as unavailable by the EvidenceLog).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sleuth_agent.rca._collect import Collected, Toolbox, _call
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import (
    WorkloadObservation,
    clip,
    missing_env_names,
    next_memory_limit,
    pull_cause,
)
from sleuth_agent.rca._records import PodView, items_of
from sleuth_agent.rca.engine.graph import selector_of
from sleuth_agent.rca.engine.network import NetKind, classify_all
from sleuth_agent.rca.followups.changes import rollout_changes
from sleuth_agent.rca.followups.network import network_targets
from sleuth_common.k8s import LabelSelector, cpu_millicores, format_quantity, quantity_or_none

__all__ = ["FollowUps", "label_selects", "parse_selector", "service_findings"]

_NET_ERROR = re.compile(
    r"timed out|timeout|no servers could be reached|connection refused|ECONNREFUSED|Couldn't connect|"
    r"Failed to connect|no route to host|no such host|could not resolve|name resolution",
    re.IGNORECASE,
)
_REFUSED = re.compile(r"connection refused|ECONNREFUSED", re.IGNORECASE)
_DNS_TIMEOUT = re.compile(r"no servers could be reached|lookup .* i/o timeout|name resolution|resolve", re.IGNORECASE)
_QUOTA = re.compile(
    r"exceeded quota|failed quota|must specify (limits|requests)|(?:maximum|minimum) \S+ usage per (?:Container|Pod)|"
    r"limit to request ratio per",
    re.IGNORECASE,
)
_LIMIT_RANGE = re.compile(r"(maximum|minimum) (\S+) usage per (Container|Pod) is (\S+?),? but (limit|request) is (\S+?)[\],.]*(?:\s|$)", re.IGNORECASE)


def parse_selector(text: Any) -> LabelSelector | None:
    """A selector as kube-mcp writes it (``*`` selects everything, set-based operators included);
    ``None`` (selects nothing) when there is none: a Service without a selector has no pods."""
    return selector_of(text)


def label_selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    return selector is not None and selector.matches(labels)


def _registry(image: str) -> str:
    """The registry host of an image reference (docker.io when it names none)."""
    first, sep, _rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def _quantity_double(q: str) -> str:
    return next_memory_limit(q) if q else "<larger>"


def _cpu_double(q: str) -> str:
    value = quantity_or_none(q)
    if value is None or value <= 0:
        return "<a higher limit>"
    return format_quantity(value * 2, binary=False)


class FollowUps:
    """Follow-up reads for one cluster run; list results are read once per namespace."""

    def __init__(self, tools: Toolbox, log: EvidenceLog, got: Collected, timeout: float, cluster_wide: bool) -> None:
        self.tools = tools
        self.log = log
        self.got = got
        self.timeout = timeout
        self.cluster_wide = cluster_wide
        self._cache: dict[tuple[str, str], Any] = {}
        self._binding_modes: dict[str, str] = {}
        self._provisioners: dict[str, str] = {}
        self._default_class = ""

    async def _read(self, tool: str, args: dict[str, Any]) -> Any:
        key = (tool, repr(sorted(args.items())))
        if key not in self._cache:
            self._cache[key] = await _call(self.tools, self.log, tool, args, self.timeout)
        return self._cache[key]

    async def run(self, obs: WorkloadObservation) -> None:
        facts = obs.facts()
        pod, container = obs.representative()
        if container is not None:
            obs.variables.update(
                {
                    "cpu_limit": container.cpu_limit or "none",
                    "cpu_limit_next": _cpu_double(container.cpu_limit) if container.cpu_limit else "<a limit>",
                    "cpu_request": container.cpu_request or "none",
                }
            )
            if container.cpu_limit:
                obs.derive("cpu_limit", container.cpu_limit)
        if pod is not None:
            obs.variables["node"] = pod.node or "(not scheduled)"
            obs.variables["node_selector"] = ",".join(f"{k}={v}" for k, v in pod.node_selector) or "none"
        text = " ".join(facts.event_message + facts.condition_message + facts.workload_condition)
        if pod is not None and any(t == "pvc" for _n, t, _s in pod.volumes):
            await self._pvc(obs, pod)
        if _QUOTA.search(text):
            await self._quota(obs)
        if "NodeNotReady" in facts.event_reason or (pod is not None and pod.deleting):
            await self._node(obs, pod)
        if "Evicted" in facts.pod_reason:
            await self._eviction_node(obs)
        if any("probe failed" in m or _LIVENESS_FAILED.search(m) for m in facts.event_message):
            self._probe(obs, container, facts.event_message)
            if pod is not None:
                self._probe_recovered(obs, pod, container, facts.event_message)
        if any(_NET_ERROR.search(line) for line in facts.log):
            await self._network(obs, pod, facts.log)
        if any(_REFUSED.search(line) for line in facts.log):
            await self._service_ports(obs, [ln for ln in facts.log if _REFUSED.search(ln)])
        if container is not None:
            await self._env(obs, container)
        await self._network_targets(obs, facts)
        if pod is not None and container is not None:
            await self._injected_limits(obs, pod, container)
        if obs.kind == "Deployment" and not obs.quiet and obs.pods:
            change = await rollout_changes(self._read, obs.namespace, obs.name, self.got.results.get(("list_workloads", obs.namespace)))
            if change is not None:
                obs.rollout = change
        if obs.quiet and container is not None and obs.kind in ("Deployment", "StatefulSet"):
            await self._hpa_saturation(obs, container)
        if pod is not None and container is not None and container.init and container.state == "running":
            self._init_wait(obs, pod, container)
        pulls = [m for m in facts.event_message + facts.waiting_message if "pull" in m.lower() or "image" in m.lower()]
        if pod is not None and container is not None and (
            {"ErrImagePull", "ImagePullBackOff"} & set(facts.waiting_reason) or any("Failed to pull" in m for m in pulls)
        ):
            await self._image_pull(obs, pod, container, pulls)

    # -- network targets ---------------------------------------------------------------------
    async def _network_targets(self, obs: WorkloadObservation, facts: Any) -> None:
        """What the failing connections target (a Service or a pod in scope) and its state; a
        DNS failure (also a resolver that refuses or times out on port 53) is a fact of its own."""
        lines = [*facts.log, *facts.event_message]
        dns = [f for f in classify_all(lines) if f.kind == NetKind.DNS]
        if dns:
            obs.derive("dns", dns[-1].line)
            if dns[-1].host:
                obs.variables.setdefault("dns_host", dns[-1].host)
        targets = network_targets(lines, obs.namespace, self.got.services, self.got.pods)
        targets = [t for t in targets if not (t.kind == "Service" and t.name == obs.name)]
        if not targets:
            return
        obs.net_targets = targets
        t = targets[-1]
        if t.kind == "Pod" and t.backends:
            kind, name = t.backends[0]
            obs.variables["target_ref"] = f"{kind}/{t.namespace}/{name}"
        else:
            obs.variables["target_ref"] = t.ref
        what = {"refused": "are refused", "timeout": "time out", "unreachable": "find no route", "reset": "are reset", "tls": "fail the TLS handshake", "http_5xx": "get HTTP 5xx"}[t.failure.kind.value]
        if t.kind == "Service":
            state = (
                "it has no ready endpoints" if t.ready_endpoints == 0
                else f"it has {t.ready_endpoints} ready endpoint(s)" if t.ready_endpoints is not None else "its endpoints are unknown"
            )
            back = ", ".join(f"{k} {n}" for k, n in t.backends)
            if back:
                state += f"; it selects the pods of {back}" + (" (not all ready)" if t.backends_ready is False else "")
            obs.derive("net_target", f"The connections {what} at Service {t.name} ({state}).")
        else:
            obs.derive("net_target", f"The connections {what} at pod {t.name}" + (" (not ready)." if t.backends_ready is False else "."))

    # -- limits set by admission -------------------------------------------------------------
    async def _injected_limits(self, obs: WorkloadObservation, pod: PodView, container: Any) -> None:
        """The LimitRanger admission plugin records the limits it set on the pod
        (``kubernetes.io/limit-ranger``): then a LimitRange's default is where the limit came from."""
        note = dict(pod.annotations).get("kubernetes.io/limit-ranger", "")
        if not note or "memory limit" not in note or container.name not in note:
            return
        obs.variables["limit_source"] = "LimitRange"
        r = await self._read("list_quotas", {"namespace": obs.namespace})
        if r.ok and isinstance(r.data, dict):
            owners = [
                str(lr.get("name")) for lr in r.data.get("limit_ranges") or []
                if any("memory" in (item.get("default") or {}) for item in lr.get("limits") or [])
            ]
            if len(owners) == 1:
                obs.variables["limit_range"] = owners[0]
                obs.derive("limit_source", f"LimitRange {owners[0]} set this memory limit as its default ({note}); the pod spec sets none.")
                obs.cites.append((r, f"LimitRange {owners[0]} in {obs.namespace}", [f"default memory limit: {container.memory_limit}", note[:160]]))

    # -- image pulls ---------------------------------------------------------------------------
    async def _image_pull(self, obs: WorkloadObservation, pod: PodView, container: Any, messages: list[str]) -> None:
        """Name the cause at the end of the pull error; for a refused pull (401/403), say whether
        the pod has imagePullSecrets and whether a sibling pulling from the same registry has one."""
        kind, phrase = "", ""
        for m in messages:
            kind, phrase = pull_cause(m)
            if kind:
                break
        registry = _registry(container.image)
        obs.variables.update({"registry": registry, "pull_cause": phrase or "see the pull events"})
        template = "spec.template.spec" if obs.kind in ("Deployment", "StatefulSet", "DaemonSet", "Job") else "spec"
        if kind == "auth":
            mine = pod.image_pull_secrets
            sibling, secrets = await self._sibling_pull_secrets(obs, pod, registry)
            if mine is None:
                have = "Whether the pod has imagePullSecrets could not be read."
            elif mine:
                have = f"The pod uses imagePullSecrets {', '.join(mine)}, which {registry} does not accept (wrong or expired credentials)."
            else:
                have = "The pod spec has no imagePullSecrets, so the node pulls anonymously."
            if sibling and secrets:
                have += f" {sibling} in {obs.namespace} pulls from {registry} with imagePullSecrets {', '.join(secrets)}."
            obs.derive("pull", have)
            if mine == () and secrets:
                obs.variables["pull_action_text"] = (
                    f"The registry {registry} refused the pull ({phrase}) and the pod has no pull credentials: "
                    f"add the imagePullSecret {secrets[0]} that {sibling} uses to the {obs.kind}."
                )
                patch = json.dumps({"imagePullSecrets": [{"name": secrets[0]}]}, separators=(",", ":"))
            elif mine:
                obs.variables["pull_action_text"] = (
                    f"The registry {registry} refused the pull ({phrase}): renew the credentials in the secret "
                    f"{mine[0]} (or grant its identity pull access to the repository)."
                )
                patch = ""
            else:
                obs.variables["pull_action_text"] = (
                    f"The registry {registry} refused the pull ({phrase}): create a docker-registry secret with "
                    f"credentials for {registry} and add it to the {obs.kind} as an imagePullSecret (or grant the "
                    "nodes' identity pull access)."
                )
                patch = '{"imagePullSecrets":[{"name":"<pull-secret>"}]}'
            if patch and template != "spec":
                body = patch
                for part in reversed(template.split(".")):
                    body = f'{{"{part}":{body}}}'
                obs.variables["pull_action_command"] = f"kubectl patch {obs.kind.lower()}/{obs.name} -n {obs.namespace} -p '{body}'"
            else:
                obs.variables["pull_action_command"] = (
                    f"kubectl create secret docker-registry <pull-secret> -n {obs.namespace} --docker-server={registry} "
                    "--docker-username=<user> --docker-password=<password>"
                )
        elif kind == "not_found":
            obs.variables["pull_action_text"] = (
                f"The image {container.image} does not exist in {registry} ({phrase}): fix the repository or tag."
            )
        elif kind in ("dns", "network", "tls"):
            obs.variables["pull_action_text"] = (
                f"The node cannot reach the registry {registry} ({phrase}): check the registry host name, the nodes' "
                "DNS and egress (proxy, firewall, certificates)."
            )
            obs.variables["pull_action_command"] = f"kubectl get events -n {obs.namespace} --field-selector involvedObject.name={pod.name}"
        elif kind == "rate_limited":
            obs.variables["pull_action_text"] = (
                f"The registry {registry} is rate-limiting pulls ({phrase}): authenticate the pulls or mirror the image."
            )

    async def _sibling_pull_secrets(self, obs: WorkloadObservation, pod: PodView, registry: str) -> tuple[str, tuple[str, ...]]:
        """A pod of another workload in the namespace that pulls from the same registry, and its
        imagePullSecrets (read with get_pod: list_pods does not show them)."""
        for other in self.got.pods.get(obs.namespace, []):
            if other.workload == pod.workload or not other.healthy:
                continue
            if not any(_registry(c.image) == registry for c in other.containers):
                continue
            r = await self._read("get_pod", {"namespace": obs.namespace, "name": other.name})
            if not r.ok or not isinstance(r.data, dict):
                return "", ()
            fresh = PodView.parse(r.data.get("pod", r.data))
            secrets = fresh.image_pull_secrets or ()
            if secrets:
                obs.cites.append((r, f"pod {other.name} ({other.workload[0]} {other.workload[1]}): imagePullSecrets {', '.join(secrets)}", [f"image registry {registry}", f"imagePullSecrets: {', '.join(secrets)}"]))
            return f"{other.workload[0]} {other.workload[1]}", secrets
        return "", ()

    # -- Ready pods that are slow: an HPA at its maximum with CPU at the limit ------------------
    async def _hpa_saturation(self, obs: WorkloadObservation, container: Any) -> None:
        """Pods Running and Ready but slow: the HPA that scales the workload is at maxReplicas and
        its CPU utilisation (of the request) puts each pod at its CPU limit, so the pods are
        throttled and cannot be scaled out further."""
        if not self.tools.has_tool("list_resources"):
            return
        r = await self._read("list_resources", {"kind": "horizontalpodautoscalers", "namespace": obs.namespace})
        if not r.ok:
            return
        hpa = next((h for h in items_of(r.data, "items") if str(h.get("target")) == f"{obs.kind}/{obs.name}"), None)
        if hpa is None:
            return
        name = str(hpa.get("name"))
        full = await self._read("get_resource", {"kind": "HorizontalPodAutoscaler", "name": name, "namespace": obs.namespace})
        spec = (full.data.get("spec") or {}) if full.ok and isinstance(full.data, dict) else {}
        status = (full.data.get("status") or {}) if full.ok and isinstance(full.data, dict) else {}
        top = hpa.get("max_replicas") or spec.get("maxReplicas")
        current = hpa.get("current_replicas") or status.get("currentReplicas")
        conds = hpa.get("conditions") or status.get("conditions") or []
        limited = next((c for c in conds if c.get("type") == "ScalingLimited" and c.get("status") == "True"), None)
        util = None
        for m in status.get("currentMetrics") or []:
            res = m.get("resource") or {}
            if res.get("name") == "cpu":
                util = (res.get("current") or {}).get("averageUtilization")
        target = next((m.get("target") for m in hpa.get("metrics") or [] if m.get("resource") == "cpu"), None)
        at_max = top is not None and current is not None and int(current) >= int(top)
        if not (at_max or limited) or util is None:
            return
        req, lim = _millicores(container.cpu_request), _millicores(container.cpu_limit)
        if req is None:
            return
        used = req * float(util) / 100
        text = (
            f"HorizontalPodAutoscaler {name} is at maxReplicas ({current}/{top})"
            + (f", {limited.get('reason')}" if limited else "")
            + f", with CPU at {util}% of the {container.cpu_request} request"
            + (f" (target {target}%)" if target else "")
            + f", about {used:.0f}m per pod"
        )
        if lim is not None and used >= 0.9 * lim:
            text += (
                f": that is the container's {container.cpu_limit} CPU limit, so {container.name} is CPU-throttled and "
                "the HPA cannot add pods: requests queue and get slow while every pod stays Ready."
            )
            obs.derive("cpu_saturated", text)
        else:
            obs.derive("hpa_maxed", text + ".")
        slow = [e for e in obs.events if e.type == "Warning" and e.reason == "Unhealthy"]
        if slow:
            obs.derive("cpu_saturated" if "cpu_saturated" in obs.derived else "hpa_maxed",
                       f"{sum(e.count for e in slow)} readiness/liveness probe failure(s) recorded: \"{clip(slow[0].message, 140)}\".")
        obs.variables["cpu_saturation"] = " ".join(obs.derived.get("cpu_saturated", [text]))
        obs.cites.append((full if full.ok else r, f"HorizontalPodAutoscaler {name}: {current}/{top} replicas, CPU {util}%",
                          [f"maxReplicas {top}", f"cpu {util}% of request {container.cpu_request}", *([f"{limited.get('reason')}: {clip(str(limited.get('message', '')), 120)}"] if limited else [])]))

    # -- an init container that waits for a dependency ---------------------------------------
    def _init_wait(self, obs: WorkloadObservation, pod: PodView, container: Any) -> None:
        """An init container still running (pod not initialised) whose current log keeps saying it
        waits for, or cannot connect to, a host: that dependency is what holds the pod in Init."""
        text = obs.logs.get((pod.name, container.name, False), "")
        waits = [ln for ln in (_strip_ts(x) for x in text.splitlines()) if ln and _WAITING.search(ln)]
        if len(waits) < 3:
            return
        hosts = [m.group(1) for ln in waits for m in [_HOST_PORT.search(ln)] if m]
        endpoint = max(set(hosts), key=hosts.count) if hosts else ""
        stamps = [t for t in (_when(x) for x in text.splitlines() if x.strip()) if t is not None]
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
                if dep_ns != obs.namespace and dep_ns not in self.got.pods:
                    dep += ", which this investigation did not read (outside the namespaces asked about or your access)"
                dep += ": check that its pods are running and ready and that its endpoints are populated."
        lasted = f" over {span / 60:.0f} min" if span is not None and span >= 60 else ""
        text_out = (
            f"Init container {container.name} of pod {pod.name} is still running and has not finished "
            f"(no restarts): its current log says {len(waits)} times{lasted} that it is waiting for {where} "
            f'(last: "{line}"), so the app containers never start.{dep}'
        )
        for r in self.log.results:
            a = r.args or {}
            if r.tool == "pod_logs" and r.ok and a.get("name") == pod.name and a.get("container") == container.name and not a.get("previous"):
                obs.cites.append((r, f"current log of init container {container.name} ({len(text.splitlines())} lines)", [line]))
                break
        obs.derive("init_wait", text_out)
        obs.derive("dependency", text_out)
        obs.variables.update({"init_wait": text_out, "dependency_line": line, "init_container": container.name})
        if endpoint:
            obs.variables["endpoint"] = endpoint

    # -- environment ---------------------------------------------------------------------------
    async def _env(self, obs: WorkloadObservation, container: Any) -> None:
        """A log says an environment variable is missing: does the container's env, or a
        ConfigMap/Secret it loads with envFrom, define it? Names and keys only, never values."""
        wanted: list[str] = []
        for (_pod, cname, _previous), text in obs.logs.items():
            if cname == container.name:
                wanted.extend(missing_env_names(text))
        wanted = list(dict.fromkeys(wanted))[:3]
        if not wanted:
            return
        name = wanted[0]
        obs.variables["env_name"] = name
        if name in container.env_names:
            obs.derive("env_present", f"Container {container.name} sets {name} in its env.")
            return
        described: list[str] = []
        unreadable: list[str] = []
        for kind, source, prefix in container.env_from:
            if prefix and not name.startswith(prefix):
                described.append(f"{kind} {source} (prefix {prefix})")
                continue
            key = name[len(prefix) :]
            api_kind = "ConfigMap" if kind == "configmap" else "Secret"
            r = await self._read("get_resource", {"kind": api_kind, "name": source, "namespace": obs.namespace})
            if not r.ok:
                if "NotFound" in r.error or '"code":404' in r.error or "not found" in r.error.lower():
                    described.append(f"{api_kind} {source} (which does not exist)")
                else:
                    unreadable.append(f"{api_kind} {source}")
                continue
            data = r.data if isinstance(r.data, dict) else {}
            keys = sorted({*(data.get("data") or {}), *(data.get("binaryData") or data.get("binary_data") or {})})
            shown = ", ".join(keys[:12]) + (", ..." if len(keys) > 12 else "")
            if key in keys:
                obs.derive("env_present", f"{api_kind} {source}, loaded by {container.name} with envFrom, has the key {key}.")
                obs.cites.append((r, f"{api_kind} {source}: has key {key}", [f"keys: {shown}"]))
                return
            described.append(f"{api_kind} {source} (keys: {shown or 'none'})")
            obs.cites.append((r, f"{api_kind} {source}: {len(keys)} key(s), no {key}", [f"keys: {shown or 'none'}"]))
        env = ", ".join(container.env_names) or "no variables"
        obs.variables["env_sources"] = ", ".join(
            [*(f"{k} {n}" for k, n, _p in container.env_from)]
        ) or "none"
        where = f"its env sets {env}"
        if described:
            where += "; its envFrom loads " + "; ".join(described)
        if unreadable:
            obs.derive(
                "env_unconfirmed",
                f"The log says environment variable {name} is missing; {where}. "
                f"{', '.join(unreadable)} could not be read with your access, so whether it defines {name} is unknown.",
            )
            return
        obs.derive("env_missing", f"Nothing defines {name} for container {container.name}: {where}.")

    # -- storage -----------------------------------------------------------------------------
    async def _pvc(self, obs: WorkloadObservation, pod: PodView) -> None:
        r = await self._read("list_pvcs", {"namespace": obs.namespace})
        if not r.ok:
            return
        claims = {str(c.get("name")): c for c in items_of(r.data, "pvcs")}
        for vol, kind, source in pod.volumes:
            if kind != "pvc":
                continue
            claim = claims.get(source)
            if claim is None:
                obs.derive("pvc", f'PersistentVolumeClaim {source} (volume {vol}) does not exist in {obs.namespace}; the pod stays Pending')
                obs.variables.setdefault("pvc", source)
                continue
            phase = str(claim.get("phase") or "")
            size = str(claim.get("capacity") or claim.get("requested") or "")
            sc = str(claim.get("storage_class") or "")
            obs.variables.update({"pvc": source, "pvc_size": size or "?", "pvc_size_next": _quantity_double(size)})
            if phase == "Bound":
                obs.derive("volume", f"Volume {vol} is PersistentVolumeClaim {source}: {size}, StorageClass {sc or 'default'}.")
                obs.cites.append((r, f"PersistentVolumeClaim {source}: Bound, {size}", [f"{source}: {size}", f"storageClassName={sc}"]))
                stranded = pod.deleting or any(e.reason == "NodeNotReady" for e in obs.events)
                if stranded:
                    await self._node_local(obs, pod, source, sc, str(claim.get("volume") or claim.get("volume_name") or ""))
                continue
            about = [e for e in self.got.events.get(obs.namespace, []) if e.object_name == source]
            why = [e.message for e in about if e.type == "Warning"]
            text = f"PersistentVolumeClaim {source} is {phase or 'not bound'} (StorageClass {sc or 'default'}, {size or '?'} requested)"
            if why:
                text += f": {why[0]}"
            classes = await self._storage_classes()
            waits = any(
                e.reason == "WaitForFirstConsumer" or "waiting for first consumer" in e.message.lower() for e in about
            ) or self._binding_modes.get(sc or self._default_class, "") == "WaitForFirstConsumer"
            failed = any(e.reason in ("ProvisioningFailed", "ExternalProvisioning") and e.type == "Warning" for e in about)
            if phase == "Pending" and waits and not why and not failed:
                # The claim is provisioned once its pod is scheduled: it waits for the pod, not the reverse.
                obs.derive(
                    "pvc_wait",
                    f"PersistentVolumeClaim {source} is Pending only because StorageClass {sc or 'default'} binds on "
                    "first consumer (WaitForFirstConsumer): its volume is created once the pod is scheduled, so the "
                    "pod's scheduling failure is the cause, not the storage.",
                )
                obs.cites.append((r, f"PersistentVolumeClaim {source}: Pending (WaitForFirstConsumer)", [f"{source}: Pending", f"storageClassName={sc}", "waiting for first consumer to be created before binding"]))
                continue
            if classes is not None:
                names = [c.split(" ")[0] for c in classes]
                obs.variables["storage_classes"] = ", ".join(classes) or "none"
                if sc and sc not in names:
                    text += f". StorageClass {sc} does not exist; the cluster has: {', '.join(classes) or 'none'}"
            obs.derive("pvc", text + ".")
            obs.cites.append((r, f"PersistentVolumeClaim {source}: {phase}", [f"{source}: {phase}", f"storageClassName={sc}", *why[:1]]))

    async def _node_local(self, obs: WorkloadObservation, pod: PodView, claim: str, sc: str, volume: str) -> None:
        """Is the claim's volume tied to one node (a local or hostPath PV, node affinity on the PV,
        or a StorageClass of local volumes)? Then a replacement pod cannot run anywhere else."""
        why = ""
        if volume:
            r = await self._read("get_resource", {"kind": "PersistentVolume", "name": volume})
            if r.ok and isinstance(r.data, dict):
                spec = r.data.get("spec") or {}
                terms = ((spec.get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms") or []
                hosts = [
                    str(v)
                    for t in terms
                    for e in t.get("matchExpressions") or []
                    if e.get("key") == "kubernetes.io/hostname"
                    for v in e.get("values") or []
                ]
                if "local" in spec or "hostPath" in spec or hosts:
                    kind = "a local volume" if "local" in spec else "a hostPath volume" if "hostPath" in spec else "a volume"
                    why = f"PersistentVolume {volume} is {kind}" + (f" pinned to node {', '.join(hosts)}" if hosts else "")
                    obs.cites.append((r, f"PersistentVolume {volume}: node-local", [why]))
        if not why and sc:
            await self._storage_classes()
            prov = self._provisioners.get(sc, "")
            if prov == "kubernetes.io/no-provisioner" or re.search(r"local|hostpath|topolvm", prov, re.IGNORECASE):
                why = f"StorageClass {sc} (provisioner {prov}) provides node-local volumes"
            elif not prov and re.search(r"local|hostpath", sc, re.IGNORECASE):
                why = (
                    f"StorageClass {sc} looks like node-local storage by its name (its provisioner and the "
                    "PersistentVolume could not be read)"
                )
        if why:
            obs.derive(
                "node_local",
                f"{why}: claim {claim} holds data on that node, so a replacement pod can only start once the node "
                "is back (or the data is restored elsewhere and the claim recreated).",
            )
            obs.variables["local_pv_note"] = (
                f" Its claim {claim} is node-local ({why}): the new pod cannot start on another node until the node "
                "returns or the claim is recreated."
            )

    async def _storage_classes(self) -> list[str] | None:
        if not self.tools.has_tool("list_storage"):
            return None
        r = await self._read("list_storage", {"kinds": ["storageclasses"]})
        if not r.ok:
            return None
        out = []
        for c in items_of(r.data, "items"):
            out.append(f"{c.get('name')}{' (default)' if c.get('default') else ''}")
            self._binding_modes[str(c.get("name"))] = str(c.get("volume_binding_mode") or "")
            self._provisioners[str(c.get("name"))] = str(c.get("provisioner") or "")
            if c.get("default"):
                self._default_class = str(c.get("name"))
        self._storage_result = r
        return out

    # -- quota -------------------------------------------------------------------------------
    async def _quota(self, obs: WorkloadObservation) -> None:
        r = await self._read("list_quotas", {"namespace": obs.namespace})
        if not r.ok or not isinstance(r.data, dict):
            return
        hl = []
        for q in r.data.get("resource_quotas") or []:
            hard, used = q.get("hard") or {}, q.get("used") or {}
            parts = [f"{k} {used.get(k, '0')}/{v}" for k, v in sorted(hard.items())]
            full = q.get("at_limit") or []
            text = f"ResourceQuota {q.get('name')} (used/hard): {', '.join(parts)}"
            if full:
                text += f"; at its limit: {', '.join(full)}"
            obs.derive("quota", text + ".")
            hl.append(text[:160])
        for lr in r.data.get("limit_ranges") or []:
            parts = []
            for item in lr.get("limits") or []:
                bounds = [
                    f"{word} {', '.join(f'{k}={v}' for k, v in sorted((item.get(key) or {}).items()))}"
                    for key, word in (("max", "max"), ("min", "min"), ("default", "default limit"), ("default_request", "default request"))
                    if item.get(key)
                ]
                if bounds:
                    parts.append(f"{item.get('type')}: {'; '.join(bounds)}")
            if parts:
                text = f"LimitRange {lr.get('name')}: " + " | ".join(parts)
                obs.derive("quota", text + ".")
                hl.append(text[:200])
        if hl:
            obs.cites.append((r, f"resource quotas and limit ranges in {obs.namespace}", hl))
        messages = " ".join(obs.facts().workload_condition + obs.facts().event_message)
        m = _LIMIT_RANGE.search(messages)
        if m:
            bound, resource, per, allowed, which, asked = m.groups()
            obs.variables.update({"lr_bound": bound.lower(), "lr_resource": resource, "lr_per": per, "lr_allowed": allowed, "lr_which": which, "lr_value": asked})
            owners = [
                str(lr.get("name")) for lr in r.data.get("limit_ranges") or []
                if any(item.get("type") == per and resource in (item.get(bound.lower()) or {}) for item in lr.get("limits") or [])
            ]
            if len(owners) == 1:
                obs.variables["lr_name"] = owners[0]
        # A past termination of a pod that runs again now is history: the new pods are never created.
        for p in obs.pods:
            for c in p.containers:
                if p.healthy and c.last_reason:
                    limit = f" at its {c.memory_limit} memory limit" if c.memory_limit and c.last_reason == "OOMKilled" else ""
                    obs.derive(
                        "quota",
                        f"Pod {p.name} (ReplicaSet {p.owner_name}) was {c.last_reason}{limit} earlier and is running again: "
                        "that is history (likely why the resources were changed), not what blocks the new pods.",
                    )
                    break

    # -- nodes -------------------------------------------------------------------------------
    async def _node(self, obs: WorkloadObservation, pod: PodView | None) -> None:
        node = pod.node if pod else ""
        if not node:
            return
        if not (self.cluster_wide and self.tools.has_tool("list_nodes")):
            obs.derive(
                "node_access",
                f"Node {node}'s own status is outside your access (nodes are readable only with cluster-wide "
                "access), so this rests on the pod's events.",
            )
            return
        r = await self._read("list_nodes", {})
        if not r.ok:
            return
        for n in items_of(r.data, "nodes"):
            if n.get("name") != node:
                continue
            ready = str(n.get("ready", "Unknown"))
            if ready != "True":
                cond = next((c for c in n.get("conditions") or [] if c.get("type") == "Ready"), {})
                text = f"Node {node} is not ready: Ready={ready} ({cond.get('reason', '')}: {cond.get('message', '')})."
                obs.derive("node", text)
                obs.cites.append((r, f"node {node}: Ready={ready}", [text[:160]]))

    async def _eviction_node(self, obs: WorkloadObservation) -> None:
        """Evicted pods: the node that evicted them, its pressure conditions, taints and the
        kubelet's EvictionThresholdMet events (cluster-wide callers); otherwise name the node."""
        counts: dict[str, int] = {}
        for p in obs.pods:
            if p.reason == "Evicted" and p.node:
                counts[p.node] = counts.get(p.node, 0) + 1
        if not counts:
            return
        node = max(counts, key=lambda n: (counts[n], n))
        evicted = sum(counts.values())
        on = (
            f"The evicted pod ran on node {node}" if evicted == 1
            else f"All {evicted} evicted pods ran on node {node}" if counts[node] == evicted
            else f"{counts[node]} of the {evicted} evicted pods ran on node {node}"
        )
        obs.variables["node"] = node
        if not (self.cluster_wide and self.tools.has_tool("list_nodes")):
            obs.derive("eviction_node", f"{on}; the node's own status is outside your access (nodes are readable only with cluster-wide access).")
            return
        r = await self._read("list_nodes", {})
        if not r.ok:
            obs.derive("eviction_node", f"{on}.")
            return
        rec = next((n for n in items_of(r.data, "nodes") if n.get("name") == node), None)
        if rec is None:
            obs.derive("eviction_node", f"{on}, which no longer exists.")
            return
        pressure = [
            f"{c.get('type')}=True" + (f" ({c.get('message')})" if c.get("message") else "")
            for c in rec.get("conditions") or []
            if str(c.get("type", "")).endswith("Pressure") and c.get("status") == "True"
        ]
        taints = [f"{t.get('key')}:{t.get('effect')}" for t in rec.get("taints") or []]
        alloc = (rec.get("allocatable") or {}).get("memory")
        text = f"{on}: " + ("; ".join(pressure) if pressure else "no pressure condition is set on it now")
        if taints:
            text += f"; taints {', '.join(taints)}"
        if alloc:
            text += f"; allocatable memory {alloc}"
        hl = [clip(x, 160) for x in [*pressure, *(["taints: " + ", ".join(taints)] if taints else [])]]
        obs.cites.append((r, f"node {node}: " + (", ".join(x.split(" (")[0] for x in pressure) or "no pressure now"), hl or [f"node {node}"]))
        ev = await self._read("list_events", {"namespace": "default", "involved_object_name": node})
        if ev.ok:
            from sleuth_agent.rca._records import EventView

            kubelet = [
                e for e in (EventView.parse(x) for x in items_of(ev.data, "events"))
                if e.object_name == node and (e.reason in ("EvictionThresholdMet", "NodeHasInsufficientMemory", "NodeHasDiskPressure") or "reclaim" in e.message.lower())
            ]
            if kubelet:
                e = kubelet[0]
                text += f"; the kubelet reported {e.reason}: \"{clip(e.message, 160)}\"" + (f" ({e.count} times)" if e.count > 1 else "")
                obs.cites.append((ev, f"events of node {node}", [f"{x.reason}: {clip(x.message, 160)}" for x in kubelet[:3]]))
        obs.derive("eviction_node", text + ".")

    # -- probes ------------------------------------------------------------------------------
    def _probe(self, obs: WorkloadObservation, container: Any, messages: list[str]) -> None:
        if container is None:
            return
        pod, _c = obs.representative()
        if pod is not None and any(_LIVENESS_FAILED.search(m) for m in messages):
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

    def _probe_recovered(self, obs: WorkloadObservation, pod: PodView, failing: Any, messages: list[str]) -> None:
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

    # -- a Service that forwards to a port its pods do not serve -------------------------------
    async def _service_ports(self, obs: WorkloadObservation, lines: list[str]) -> None:
        """A client's connection is refused by a Service (its ClusterIP or its name in the log):
        compare the Service's targetPort (and its Endpoints' port) with the containerPorts of the
        pods it selects. Nothing listening on the targetPort refuses every connection although
        the pods are Ready; the finding is kept for the Service (``Collected.service_notes``)."""
        text = " ".join(lines)
        for svc in self.got.services.get(obs.namespace, []):
            name = str(svc.get("name") or "")
            if not name or name == obs.name:
                continue
            ip = str(svc.get("cluster_ip") or "")
            ports = [p for p in svc.get("ports") or [] if isinstance(p, dict)]
            used: dict[str, Any] | None = None
            m = re.search(rf"(?<![\d.]){re.escape(ip)}:(\d+)", text) if ip and ip != "None" else None
            if m:
                used = next((p for p in ports if str(p.get("port")) == m.group(1)), None)
            elif re.search(rf"(?<![-\w.]){re.escape(name)}(?:\.{re.escape(obs.namespace)})?(?:\.svc(?:\.[\w.-]+)?)?(?::\d+)?(?![-\w])", text):
                mp = re.search(rf"(?<![-\w.]){re.escape(name)}(?:\.[\w.-]+)?:(\d+)", text)
                used = next((p for p in ports if mp and str(p.get("port")) == mp.group(1)), None) or (ports[0] if len(ports) == 1 else None)
            if used is None:
                continue
            sel = parse_selector(svc.get("selector"))
            if sel is None or sel.is_empty:
                continue
            selected = [q for q in self.got.pods.get(obs.namespace, []) if label_selects(sel, dict(q.labels))]
            if not selected:
                continue
            target = used.get("target_port", used.get("targetPort", used.get("port")))
            r = await self._read("get_pod", {"namespace": obs.namespace, "name": sorted(selected, key=lambda q: (not q.healthy, q.name))[0].name})
            if not r.ok or not isinstance(r.data, dict):
                continue
            declared = _container_ports(r.data.get("pod", r.data))
            if not declared:
                continue  # the pods declare no ports: nothing to compare with
            numeric = str(target).isdigit()
            served = any((str(pt) == str(target)) if numeric else (pn == str(target)) for _c, pn, pt in declared)
            if served:
                continue
            eps = svc.get("endpoints") if isinstance(svc.get("endpoints"), dict) else {}
            ep_ports = ", ".join(str(x.get("port")) for x in (eps.get("ports") or []) if isinstance(x, dict))
            ready = len(eps.get("ready") or []) if eps else 0
            listen = ", ".join(f"{pt}" + (f" ({pn})" if pn else "") for _c, pn, pt in declared)
            pick = next((pt for _c, pn, pt in declared if pn and pn == used.get("name")), None) or next(
                (pt for _c, pn, pt in declared if pn in ("http", "web", "api", "grpc")), None
            ) or declared[0][2]
            wl = selected[0].workload
            note = (
                f"Service {name} (ClusterIP {ip}) sends port {used.get('port')} to targetPort {target}"
                + (f" (its Endpoints list port {ep_ports} on {ready} ready pod(s))" if ep_ports else "")
                + f", but the pods it selects ({wl[0]} {wl[1]}) declare containerPort {listen}: nothing listens on "
                f"{target}, so connections through the Service are refused although the pods are Ready. "
                f"The log of {obs.kind} {obs.name} shows it: {clip(lines[-1], 200)}"
            )
            patch = json.dumps(
                {"spec": {"ports": [{"port": used.get("port"), "targetPort": int(pick) if pick.isdigit() else pick}]}}, separators=(",", ":")
            )
            variables = {
                "service_target_port": str(target),
                "service_port": str(used.get("port")),
                "container_port": str(pick),
                "service_patch": f"kubectl patch service {name} -n {obs.namespace} -p '{patch}'",
                "client": f"{obs.kind} {obs.name}",
            }
            svc_result = self.got.results.get(("list_services", obs.namespace))
            cites: list[tuple[Any, str, list[str]]] = []
            if svc_result is not None:
                cites.append((svc_result, f"Service {name}: port {used.get('port')} → targetPort {target}", [f"targetPort {target}", *([f"endpoints port {ep_ports}"] if ep_ports else [])]))
            cites.append((r, f"pod {selected[0].name}: containerPort {listen}", [f"containerPort {listen}"]))
            self.got.service_notes.setdefault((obs.namespace, name), []).append((note, variables, cites))
            obs.derive(
                "dependency",
                f"The refused connections go to Service {name}, whose targetPort {target} is not a port its pods serve ({listen}).",
            )

    # -- network -----------------------------------------------------------------------------
    async def _network(self, obs: WorkloadObservation, pod: PodView | None, lines: list[str]) -> None:
        if pod is None or not self.tools.has_tool("list_resources"):
            return
        r = await self._read("list_resources", {"kind": "networkpolicies", "namespace": obs.namespace})
        if not r.ok:
            return
        policies = items_of(r.data, "items")
        labels = dict(pod.labels)
        dns_problem = any(_DNS_TIMEOUT.search(ln) for ln in lines)
        for p in policies:
            sel = parse_selector(str(p.get("pod_selector") or "*"))
            if not label_selects(sel, labels):
                continue
            if "Egress" in (p.get("policy_types") or []):
                egress = p.get("egress") or []
                allows_dns = any(
                    not rule.get("ports") or any(str(x).startswith("53/") for x in rule.get("ports") or [])
                    for rule in egress
                )
                if not egress or (dns_problem and not allows_dns):
                    what = "all egress" if not egress else "egress to DNS (port 53)"
                    obs.derive(
                        "netpol",
                        f"NetworkPolicy {p.get('name')} selects the pods of {obs.resource} and allows no {what}, "
                        "so DNS lookups and outgoing connections are dropped.",
                    )
                    obs.cites.append((r, f"NetworkPolicy {p.get('name')} in {obs.namespace}", [f"{p.get('name')}: policyTypes={p.get('policy_types')}, egress rules={len(egress)}"]))
                    obs.variables.update({"netpol_name": str(p.get("name")), "netpol_direction": "egress"})
                    return
        # Ingress side: the Service the log names, its pods, the policies that select them.
        services = self.got.services.get(obs.namespace, [])
        text = " ".join(lines)
        for svc in services:
            name = str(svc.get("name"))
            if name == obs.name or not re.search(rf"(?<![-\w]){re.escape(name)}(?![-\w])", text):
                continue
            ssel = parse_selector(svc.get("selector"))
            targets = [q for q in self.got.pods.get(obs.namespace, []) if ssel and label_selects(ssel, dict(q.labels))]
            for p in policies:
                if "Ingress" not in (p.get("policy_types") or []):
                    continue
                psel = parse_selector(str(p.get("pod_selector") or "*"))
                if not any(label_selects(psel, dict(q.labels)) for q in targets):
                    continue
                admitted = False
                peers_text = []
                for rule in p.get("ingress") or []:
                    peers = rule.get("peers") or []
                    if not peers:
                        admitted = True
                    for peer in peers:
                        ps = peer.get("pod_selector")
                        peers_text.append(ps or peer.get("namespace_selector") or peer.get("ip_block") or "?")
                        if ps is not None and peer.get("namespace_selector") is None and label_selects(parse_selector(ps), labels):
                            admitted = True
                if not admitted:
                    mine = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "pod-template-hash")
                    obs.derive(
                        "netpol",
                        f"NetworkPolicy {p.get('name')} selects the pods behind Service {name} and admits ingress only from "
                        f"pods matching {' or '.join(peers_text) or 'nothing'}; the pods of {obs.resource} have labels {mine}, "
                        "so their connections are dropped (they time out).",
                    )
                    obs.cites.append((r, f"NetworkPolicy {p.get('name')} in {obs.namespace}", [f"{p.get('name')}: ingress from {', '.join(peers_text)}"]))
                    obs.variables.update({"netpol_name": str(p.get("name")), "netpol_direction": "ingress"})
                    return


def service_findings(
    got: Collected,
    namespaces: list[str],
    wanted: set[tuple[str, str]],
    log: EvidenceLog,
    named: set[tuple[str, str]] | None = None,
) -> list[WorkloadObservation]:
    """Services (named, or named in a failing workload's logs) whose selector matches no pod.
    ``named``: the ones the question or alert names (all of ``wanted`` when not given); the others
    were reached through a caller's failing connections and rank as its cause, not above it."""
    out = []
    for ns in namespaces:
        r = got.results.get(("list_services", ns))
        for svc in got.services.get(ns, []):
            name = str(svc.get("name"))
            if (ns, name) not in wanted and (ns, name) not in got.service_notes:
                continue
            sel = parse_selector(svc.get("selector"))
            if sel is None or sel.is_empty:
                continue  # no selector: endpoints are managed by hand
            notes = got.service_notes.get((ns, name))
            if notes:
                obs = WorkloadObservation(ns, "Service", name, named=named is None or (ns, name) in named)
                for note, variables, cites in notes[:1]:
                    obs.derive("service_port", note)
                    obs.variables.update(variables)
                    obs.cites.extend(cites)
                out.append(obs)
                continue
            eps = svc.get("endpoints") or {}
            ready = eps.get("ready") if isinstance(eps, dict) else None
            if ready:
                continue
            pods = got.pods.get(ns, [])
            matching = [p for p in pods if label_selects(sel, dict(p.labels))]
            if matching:
                continue  # pods exist but are not ready: their own failure is the cause
            sel_text = str(sel)
            keys = {r.key for r in sel.requirements}
            near = [p for p in pods if any(r.key in dict(p.labels) and r.matches(dict(p.labels)) for r in sel.requirements)]
            hint = ""
            if near:
                lab = ",".join(f"{k}={v}" for k, v in sorted(dict(near[0].labels).items()) if k in keys)
                hint = f" The closest pods ({near[0].workload[0]} {near[0].workload[1]}) have {lab}."
            obs = WorkloadObservation(ns, "Service", name, named=named is None or (ns, name) in named)
            obs.derive(
                "service",
                f"Service {name} in {ns} selects {sel_text}, but no pod has those labels, so it has no ready endpoints "
                f"and its traffic goes nowhere.{hint}",
            )
            if r is not None:
                obs.cites.append((r, f"Service {name}: selector {sel_text}, 0 ready endpoints", [f"selector {sel_text}", "endpoints: none"]))
            out.append(obs)
    return out


def _millicores(q: str) -> float | None:
    value = quantity_or_none(q)
    return float(cpu_millicores(value)) if value is not None else None


def _container_ports(pod: Any) -> list[tuple[str, str, str]]:
    """(container, port name, port number) declared by a pod, from kube-mcp's or the API's shape."""
    out = []
    if not isinstance(pod, dict):
        return out
    containers = pod.get("containers") or (pod.get("spec") or {}).get("containers") or []
    for c in containers:
        if not isinstance(c, dict):
            continue
        for p in c.get("ports") or []:
            if isinstance(p, dict):
                num = p.get("container_port", p.get("containerPort"))
                if num is not None:
                    out.append((str(c.get("name") or ""), str(p.get("name") or ""), str(num)))
    return out


# -- a liveness probe that kills a slow-starting container ---------------------------------------
_LIVENESS_FAILED = re.compile(r"Liveness probe failed|failed liveness probe", re.IGNORECASE)
_SIGTERM = re.compile(
    r"\bSIGTERM\b|\bsignal[: ]+(?:15|terminated)\b|received signal 15|shutdown signal|signal 15\b", re.IGNORECASE
)
# A line saying startup finished ("Started App in 41s", "listening on :8080", "server ready").
_STARTED = re.compile(
    r"\b(?:started|listening|serving|ready to accept|startup complete|server (?:is )?(?:up|running|ready))\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:not|yet|before|until|never|failed|unable)\b|n't\b", re.IGNORECASE)
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


_LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(Z|[+-]\d\d:\d\d)?\s")


def _when(ts: str) -> Any:
    from datetime import UTC, datetime

    m = _LOG_TS.match(ts.strip() + " ")
    if not m:
        return None
    whole, _, frac = m.group(1).partition(".")
    try:
        t = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    return t.timestamp() + (float("0." + frac[:6]) if frac else 0.0)


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
    first_t, last_t = _when(lines[0]), _when(last)
    span = last_t - first_t if first_t is not None and last_t is not None and last_t >= first_t else None
    started, finished = _when(container.last_started or ""), _when(container.last_finished or "")
    ran = finished - started if started is not None and finished is not None and finished >= started else None
    if (ran is not None and ran > _UPTIME) or (span is not None and span > _UPTIME):
        return None  # a run that long was up and serving: that is an uptime, not a start-up
    delay = int(probe.get("initial_delay_seconds") or 0)
    longest = max(x for x in (ran, span, 0.0) if x is not None)
    if delay and longest and longest < delay:
        return None  # stopped before liveness even began probing: something else stopped it
    from sleuth_agent.rca._observe import _strip

    return SlowStart(probe, ran, span, _strip(last).strip(), exit_code)
