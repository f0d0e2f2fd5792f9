"""Follow-ups in code (DESIGN §3): once the first reads show a symptom, read what explains it.

Pending → scheduling events → quota → PVC → StorageClass; restarts → last termination → limits;
readiness failures → probe spec → endpoints; network errors in logs → Services → NetworkPolicies;
FailedCreate → quota; NodeNotReady → the node (only with cluster-wide access; otherwise the
answer says the node is outside the caller's access). Each follow-up adds ``derived`` facts,
template variables and citable results to the observation; a follow-up whose read fails leaves
the observation as it was (the failure is recorded as unavailable by the EvidenceLog).

One module per topic; each exposes plain functions taking the run's ``FollowUpContext`` (tools,
evidence log, namespace-wide reads, read cache). ``FollowUps.run`` calls them in a fixed order.
"""

from __future__ import annotations

import re

from sleuth_agent.rca._collect import Collected, Toolbox
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca.engine.network import NetKind, classify_all
from sleuth_agent.rca.followups import (
    config_hosts,
    env,
    hpa,
    image_pull,
    init_wait,
    net_targets,
    netpol,
    nodes,
    probes,
    quota,
    services,
    storage,
)
from sleuth_agent.rca.followups._context import FollowUpContext
from sleuth_agent.rca.followups._shared import LIVENESS_FAILED, cpu_double, label_selects, parse_selector
from sleuth_agent.rca.followups.changes import pod_revision_changes, revision_changes, rollout_changes
from sleuth_agent.rca.followups.probes import SlowStart, slow_start_kill
from sleuth_agent.rca.followups.services import service_findings

__all__ = [
    "FollowUpContext",
    "FollowUps",
    "SlowStart",
    "cpu_double",
    "label_selects",
    "parse_selector",
    "service_findings",
    "slow_start_kill",
]

# A cheap, deliberately broad gate for reading the NetworkPolicies (one list call); what the
# failures are is the taxonomy's (engine/network.py) to say.
_NET_ERROR = re.compile(
    r"timed out|timeout|no servers could be reached|connection refused|ECONNREFUSED|Couldn't connect|"
    r"Failed to connect|no route to host|no such host|could not resolve|name resolution",
    re.IGNORECASE,
)
_QUOTA = re.compile(
    r"exceeded quota|failed quota|must specify (limits|requests)|(?:maximum|minimum) \S+ usage per (?:Container|Pod)|"
    r"limit to request ratio per",
    re.IGNORECASE,
)


class FollowUps:
    """Follow-up reads for one cluster run; list results are read once per namespace."""

    def __init__(self, tools: Toolbox, log: EvidenceLog, got: Collected, timeout: float, cluster_wide: bool) -> None:
        self.ctx = FollowUpContext(tools, log, got, timeout, cluster_wide)

    async def run(self, obs: WorkloadObservation) -> None:
        ctx = self.ctx
        facts = obs.facts()
        pod, container = obs.representative()
        if container is not None:
            obs.variables.update(
                {
                    "cpu_limit": container.cpu_limit or "none",
                    "cpu_limit_next": cpu_double(container.cpu_limit) if container.cpu_limit else "<a limit>",
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
            await storage.pvc(ctx, obs, pod)
        if _QUOTA.search(text):
            await quota.run(ctx, obs)
        if "NodeNotReady" in facts.event_reason or (pod is not None and pod.deleting):
            await nodes.node(ctx, obs, pod)
        if "Evicted" in facts.pod_reason:
            await nodes.eviction_node(ctx, obs)
        if any("probe failed" in m or LIVENESS_FAILED.search(m) for m in facts.event_message):
            probes.probe_spec(obs, container, facts.event_message)
            if pod is not None:
                probes.probe_recovered(obs, pod, container, facts.event_message)
        if any(_NET_ERROR.search(line) for line in facts.log):
            await netpol.run(ctx, obs, pod, facts.log)
        refused = [f.line for f in classify_all(facts.log) if f.kind == NetKind.REFUSED]
        if refused:
            await services.service_ports(ctx, obs, refused)
        if container is not None:
            await env.run(ctx, obs, container)
        await net_targets.run(ctx, obs, facts)
        await config_hosts.run(ctx, obs, pod)
        if pod is not None and container is not None:
            await quota.injected_limits(ctx, obs, pod, container)
        if obs.kind == "Deployment" and not obs.quiet and obs.pods:
            change = await rollout_changes(ctx.read, obs.namespace, obs.name, ctx.got.results.get(("list_workloads", obs.namespace)))
            if change is not None:
                obs.rollout = change
        if obs.kind in ("StatefulSet", "DaemonSet") and not obs.quiet and obs.pods:
            change = None
            if obs.kind == "StatefulSet":
                change = await revision_changes(ctx.read, obs.namespace, obs.name, ctx.got.results.get(("list_workloads", obs.namespace)))
            if change is None:
                change = await pod_revision_changes(ctx.read, obs.namespace, obs.pods, obs.name)
            if change is not None:
                obs.rollout = change
        if obs.quiet and container is not None and obs.kind in ("Deployment", "StatefulSet"):
            await hpa.run(ctx, obs, container)
        if pod is not None and container is not None and container.init and container.state == "running":
            init_wait.run(ctx, obs, pod, container)
        pulls = [m for m in facts.event_message + facts.waiting_message if "pull" in m.lower() or "image" in m.lower()]
        if pod is not None and container is not None and (
            {"ErrImagePull", "ImagePullBackOff"} & set(facts.waiting_reason) or any("Failed to pull" in m for m in pulls)
        ):
            await image_pull.run(ctx, obs, pod, container, pulls)
