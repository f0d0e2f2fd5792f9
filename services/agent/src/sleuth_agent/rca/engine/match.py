"""The variables a family's wording is filled with: the observation's own values (pod, container,
limits, image, exit code …), what the follow-ups found, the match's captures and the derived
sentences of the family (``_DERIVED_KEYS``)."""

from __future__ import annotations

import re

from sleuth_agent.rca._observe import WorkloadObservation, next_memory_limit
from sleuth_agent.rca._signatures import Match

__all__ = ["_derived_for", "_variables"]


def _split_endpoint(endpoint: str) -> tuple[str, str]:
    host, _, port = endpoint.rpartition(":")
    return (host or endpoint, port or "<port>")


def _variables(obs: WorkloadObservation, match: Match | None) -> dict[str, str]:
    pod, c = obs.representative()
    facts = obs.facts()
    codes = [str(x) for x in facts.exit_codes if x not in (0,)] or [str(x) for x in facts.exit_codes]
    w = obs.workload
    v = {
        "resource": obs.resource,
        "kind": obs.kind,
        "kind_lower": obs.kind.lower(),
        "workload": obs.name,
        "namespace": obs.namespace,
        "pod": pod.name if pod else obs.name,
        "container": c.name if c else "",
        "restarts": str(c.restart_count if c else 0),
        "memory_limit": (c.memory_limit if c else "") or "its",
        "memory_limit_next": next_memory_limit(c.memory_limit) if c and c.memory_limit else "<a higher limit>",
        "memory_request": (c.memory_request if c else "") or "unset",
        "cpu_limit": (c.cpu_limit if c else "") or "none",
        "cpu_request": (c.cpu_request if c else "") or "none",
        "exit_code": codes[0] if codes else "?",
        "image": (c.image if c else "") or "?",
        "waiting_reason": facts.waiting_reason[0] if facts.waiting_reason else (c.reason if c and c.reason else "not ready"),
        "event_message": facts.event_message[0] if facts.event_message else "",
        "log_line": (facts.exception or facts.log or facts.termination_message or ["(no error line in the logs)"])[0],
        "termination_message": facts.termination_message[0] if facts.termination_message else "",
        "replicas": str(w.replicas if w and w.replicas is not None else "?"),
        "updated": str(w.updated if w and w.updated is not None else "?"),
        "storage_classes": "see kubectl get storageclass",
        "pvc": "<claim>",
        "pvc_size": "?",
        "pvc_size_next": "<larger size>",
        "probe_effect": "keeps running",
        "node_selector": ",".join(f"{k}={val}" for k, val in pod.node_selector) if pod and pod.node_selector else "none",
        "node": pod.node if pod and pod.node else "?",
        "derived": "",
    }
    if c is not None and c.cpu_limit:
        from sleuth_agent.rca.followups import cpu_double as _cpu_double

        v["cpu_limit_next"] = _cpu_double(c.cpu_limit)
    v.update(obs.variables)
    if match is not None:
        v.update(match.variables)
        v["derived"] = " ".join(_derived_for(match, obs))
    if match is not None and match.signature.family == "missing_config" and v.get("missing_name"):
        # The scope filter may redact the word "secret" in a message; the pod spec says what it is.
        kind = v.get("missing_kind", "").lower()
        if kind not in ("configmap", "secret"):
            types = {src: t for _n, t, src in (pod.volumes if pod else ())}
            kind = {"secret": "secret", "config_map": "configmap"}.get(types.get(v["missing_name"], ""), "configmap or secret")
            v["missing_kind"] = kind
        v["missing"] = v.get("missing", "").replace("[REDACTED]", kind)
    if match is not None and match.signature.family == "image_pull":
        v.setdefault("pull_cause", v.get("pull_error") or "see the pull events")
        v.setdefault(
            "pull_action_text",
            f"Check that the image {v['image']} exists and the node can reach the registry (and has pull "
            "credentials); then set a valid image.",
        )
        v.setdefault(
            "pull_action_command", f"kubectl set image {v['kind_lower']}/{v['workload']} {v['container']}=<image:tag> -n {v['namespace']}"
        )
    v.setdefault(
        "probe_action_text",
        "Point the probe at the port and path the container really serves (or give it a longer timeout / "
        "initial delay if the app is only slow).",
    )
    v.setdefault("probe_action_command", f"kubectl edit {v['kind_lower']}/{v['workload']} -n {v['namespace']}")
    v.setdefault("local_pv_note", "")
    if "endpoint" in v:
        v["endpoint_host"], v["endpoint_port"] = _split_endpoint(v["endpoint"])
    else:
        v["endpoint"] = "its dependency"
    if match is not None and match.signature.family == "dependency_unreachable" and v["endpoint"] == "its dependency":
        host = re.search(r"\b((?:\d{1,3}\.){3}\d{1,3}:\d+)\b", v.get("dependency_line", ""))
        if host:
            v["endpoint"] = host.group(1)
            v["endpoint_host"], v["endpoint_port"] = _split_endpoint(host.group(1))
    return v


_DERIVED_KEYS = {
    "service_no_endpoints": ("service", "service_port"),
    "node_not_ready": ("node", "node_access", "node_local"),
    "evicted": ("eviction_node", "node_pressure"),
    "dns_failure": ("dns_config",),
    "pvc_pending": ("pvc",),
    "unschedulable_constraints": ("pvc_wait",),
    "unschedulable_resources": ("pvc_wait",),
    "quota_exceeded": ("quota",),
    "disk_full": ("volume",),
    "network_policy_blocked": ("netpol",),
    "probe_failure": ("probe",),
    "dependency_unreachable": ("dependency", "net_target"),
    "oom_killed": ("limit_source",),
    "job_failed": ("cron_blocked", "cron_suspended", "job_deadline"),
    "missing_config": ("env_missing", "env_unconfirmed"),
    "image_pull": ("pull",),
}


def _derived_for(match: Match, obs: WorkloadObservation) -> list[str]:
    out = []
    for key in _DERIVED_KEYS.get(match.signature.family, ()):
        out.extend(obs.derived.get(key, []))
    return out
