"""Pods as records a model (or the deterministic investigator) reads at a glance."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sleuth_kube_mcp.shaping._common import compact, conditions, owner

__all__ = ["log_lines", "pod_detail", "pod_status_text", "pod_summary", "secretish_name"]

_SECRETISH = re.compile(r"(pass(word|wd)?|secret|token|api[_-]?key|private[_-]?key|credential|auth)", re.I)


def secretish_name(name: str) -> bool:
    """An env var whose name says it holds a credential (its literal value is never shown)."""
    return bool(_SECRETISH.search(name))


def _state(state: Mapping[str, Any] | None) -> dict[str, Any]:
    state = state or {}
    if "waiting" in state:
        w = state["waiting"] or {}
        return {"waiting": compact({"reason": w.get("reason"), "message": w.get("message")})}
    if "running" in state:
        return {"running": compact({"started_at": (state["running"] or {}).get("startedAt")})}
    if "terminated" in state:
        return {"terminated": _terminated(state["terminated"] or {})}
    return {}


def _terminated(t: Mapping[str, Any]) -> dict[str, Any]:
    return compact(
        {
            "reason": t.get("reason"),
            "exit_code": t.get("exitCode"),
            "signal": t.get("signal"),
            "message": t.get("message"),
            "started_at": t.get("startedAt"),
            "finished_at": t.get("finishedAt"),
        }
    )


def _resources(spec: Mapping[str, Any]) -> dict[str, Any]:
    r = spec.get("resources") or {}
    return {"requests": dict(r.get("requests") or {}), "limits": dict(r.get("limits") or {})}


def _container(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> dict[str, Any]:
    status = status or {}
    last = (status.get("lastState") or {}).get("terminated")
    return {
        "name": spec.get("name"),
        "image": status.get("image") or spec.get("image"),
        "ready": bool(status.get("ready", False)),
        "started": status.get("started"),
        "restart_count": int(status.get("restartCount") or 0),
        "state": _state(status.get("state")),
        "last_termination": _terminated(last) if last else None,
        "resources": _resources(spec),
    }


def pod_status_text(pod: Mapping[str, Any]) -> str:
    """The STATUS column of ``kubectl get pods`` (CrashLoopBackOff, Completed, Pending, ...)."""
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    text = str(status.get("reason") or status.get("phase") or "Unknown")
    for cs in status.get("initContainerStatuses") or []:
        st = cs.get("state") or {}
        term = st.get("terminated") or {}
        if term and term.get("exitCode") == 0:
            continue
        if term:
            return f"Init:{term.get('reason') or 'Error'}"
        if (st.get("waiting") or {}).get("reason") not in (None, "PodInitializing"):
            return f"Init:{st['waiting']['reason']}"
        return "Init:0/1" if "waiting" in st or "running" in st else text
    for cs in reversed(status.get("containerStatuses") or []):
        st = cs.get("state") or {}
        if (st.get("waiting") or {}).get("reason"):
            return str(st["waiting"]["reason"])
        if st.get("terminated"):
            t = st["terminated"]
            text = str(t.get("reason") or f"ExitCode:{t.get('exitCode')}")
    return text


def pod_summary(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The record list_pods returns for one pod."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    by_name = {s.get("name"): s for s in status.get("containerStatuses") or []}
    containers = [_container(c, by_name.get(c.get("name"))) for c in spec.get("containers") or []]
    init_by_name = {s.get("name"): s for s in status.get("initContainerStatuses") or []}
    init = [_container(c, init_by_name.get(c.get("name"))) for c in spec.get("initContainers") or []]
    record: dict[str, Any] = {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "phase": status.get("phase"),
        "status": pod_status_text(pod),
        "reason": status.get("reason"),
        "message": status.get("message"),
        "node": spec.get("nodeName"),
        "pod_ip": status.get("podIP"),
        "ready": f"{sum(1 for c in containers if c['ready'])}/{len(containers)}",
        "restarts": sum(c["restart_count"] for c in containers),
        "owner": owner(meta),
        "labels": dict(meta.get("labels") or {}),
        "created": meta.get("creationTimestamp"),
        "start_time": status.get("startTime"),
        "qos_class": status.get("qosClass"),
        "conditions": conditions(status.get("conditions")),
        "containers": containers,
    }
    if init:
        record["init_containers"] = init
    return compact(record)


def _env(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for e in spec.get("env") or []:
        name = str(e.get("name", ""))
        vf = e.get("valueFrom")
        if vf:
            ref: dict[str, Any] = {}
            if "secretKeyRef" in vf:
                ref = {"secret": vf["secretKeyRef"].get("name"), "key": vf["secretKeyRef"].get("key")}
            elif "configMapKeyRef" in vf:
                ref = {
                    "config_map": vf["configMapKeyRef"].get("name"),
                    "key": vf["configMapKeyRef"].get("key"),
                }
            elif "fieldRef" in vf:
                ref = {"field": vf["fieldRef"].get("fieldPath")}
            elif "resourceFieldRef" in vf:
                ref = {"resource": vf["resourceFieldRef"].get("resource")}
            for k in ("secretKeyRef", "configMapKeyRef"):
                if k in vf and vf[k].get("optional") is not None:
                    ref["optional"] = vf[k]["optional"]
            out.append({"name": name, "value_from": ref})
        elif "value" in e:
            value = "<redacted>" if secretish_name(name) else e.get("value")
            out.append({"name": name, "value": value})
        else:
            out.append({"name": name})
    return out


def _env_from(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for e in spec.get("envFrom") or []:
        if "configMapRef" in e:
            out.append(
                compact(
                    {
                        "config_map": e["configMapRef"].get("name"),
                        "prefix": e.get("prefix"),
                        "optional": e["configMapRef"].get("optional"),
                    }
                )
            )
        elif "secretRef" in e:
            out.append(
                compact(
                    {
                        "secret": e["secretRef"].get("name"),
                        "prefix": e.get("prefix"),
                        "optional": e["secretRef"].get("optional"),
                    }
                )
            )
    return out


def _probe(p: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not p:
        return None
    handler: dict[str, Any] = {}
    if "httpGet" in p:
        h = p["httpGet"]
        handler = {
            "type": "http",
            "path": h.get("path", "/"),
            "port": h.get("port"),
            "scheme": h.get("scheme"),
        }
    elif "tcpSocket" in p:
        handler = {"type": "tcp", "port": p["tcpSocket"].get("port")}
    elif "exec" in p:
        handler = {"type": "exec", "command": p["exec"].get("command")}
    elif "grpc" in p:
        handler = {"type": "grpc", "port": p["grpc"].get("port")}
    return compact(
        handler
        | {
            "initial_delay_seconds": p.get("initialDelaySeconds", 0),
            "period_seconds": p.get("periodSeconds", 10),
            "timeout_seconds": p.get("timeoutSeconds", 1),
            "failure_threshold": p.get("failureThreshold", 3),
            "success_threshold": p.get("successThreshold", 1),
        }
    )


def _volume(v: Mapping[str, Any]) -> dict[str, Any]:
    name = v.get("name")
    for key, src_key, label in (
        ("configMap", "name", "config_map"),
        ("secret", "secretName", "secret"),
        ("persistentVolumeClaim", "claimName", "pvc"),
        ("hostPath", "path", "host_path"),
        ("nfs", "path", "nfs"),
    ):
        if key in v:
            return compact(
                {
                    "name": name,
                    "type": label,
                    "source": (v[key] or {}).get(src_key),
                    "optional": (v[key] or {}).get("optional"),
                }
            )
    if "emptyDir" in v:
        return compact(
            {"name": name, "type": "empty_dir", "size_limit": (v["emptyDir"] or {}).get("sizeLimit")}
        )
    if "projected" in v:
        sources = []
        for s in (v["projected"] or {}).get("sources") or []:
            for k in ("configMap", "secret"):
                if k in s:
                    sources.append(f"{k}:{s[k].get('name')}")
            if "serviceAccountToken" in s:
                sources.append("serviceAccountToken")
            if "downwardAPI" in s:
                sources.append("downwardAPI")
        return {"name": name, "type": "projected", "sources": sources}
    other = next((k for k in v if k != "name"), "unknown")
    return {"name": name, "type": other}


def pod_detail(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The record get_pod returns: the summary plus how the pod is configured."""
    record = pod_summary(pod)
    spec = pod.get("spec") or {}
    specs = {c.get("name"): c for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])}
    for group in ("containers", "init_containers"):
        for c in record.get(group, []):
            s = specs.get(c["name"]) or {}
            c.update(
                compact(
                    {
                        "command": s.get("command"),
                        "args": s.get("args"),
                        "ports": [
                            compact(
                                {
                                    "name": p.get("name"),
                                    "container_port": p.get("containerPort"),
                                    "protocol": p.get("protocol"),
                                }
                            )
                            for p in s.get("ports") or []
                        ],
                        "env": _env(s),
                        "env_from": _env_from(s),
                        "liveness_probe": _probe(s.get("livenessProbe")),
                        "readiness_probe": _probe(s.get("readinessProbe")),
                        "startup_probe": _probe(s.get("startupProbe")),
                        "volume_mounts": [
                            compact(
                                {
                                    "name": m.get("name"),
                                    "mount_path": m.get("mountPath"),
                                    "read_only": m.get("readOnly"),
                                }
                            )
                            for m in s.get("volumeMounts") or []
                        ],
                        "image_pull_policy": s.get("imagePullPolicy"),
                    }
                )
            )
    record.update(
        compact(
            {
                "annotations": dict((pod.get("metadata") or {}).get("annotations") or {}) or None,
                "service_account": spec.get("serviceAccountName") or spec.get("serviceAccount"),
                "restart_policy": spec.get("restartPolicy"),
                "priority_class": spec.get("priorityClassName"),
                "node_selector": dict(spec.get("nodeSelector") or {}),
                "affinity": spec.get("affinity"),
                "tolerations": list(spec.get("tolerations") or []),
                "volumes": [_volume(v) for v in spec.get("volumes") or []],
                "host_network": spec.get("hostNetwork"),
                "dns_policy": spec.get("dnsPolicy"),
                "image_pull_secrets": [s.get("name") for s in spec.get("imagePullSecrets") or []] or None,
            }
        )
    )
    ann = record.get("annotations")
    if ann:
        ann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    return record


def log_lines(text: str, truncated: bool) -> list[str]:
    """Split a log body into lines; after a cut from the front, drop the partial first line."""
    lines = text.splitlines()
    if truncated and lines:
        lines = lines[1:]
    return lines
