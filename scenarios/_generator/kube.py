"""Builders for realistic Kubernetes objects as a live cluster would show them (status included),
used by ``generate.py`` to write scenario snapshots (DESIGN §4). Deterministic: ids and hashes
come from names, so regenerating gives the same files."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

NOW = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)


def ts(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def uid(*parts: str) -> str:
    h = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def short_hash(*parts: str, n: int = 10, alphabet: str = "bcdfghjklmnpqrstvwxz2456789") -> str:
    h = hashlib.sha256("/".join(parts).encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in h[:n])


def ip(*parts: str, prefix: str = "10.244") -> str:
    h = hashlib.sha256("/".join(parts).encode()).digest()
    return f"{prefix}.{h[0] % 4 + 1}.{h[1] % 250 + 2}"


@dataclass
class C:
    """A container: spec and its observed state."""

    name: str
    image: str
    requests: dict[str, str] = field(default_factory=lambda: {"cpu": "100m", "memory": "128Mi"})
    limits: dict[str, str] = field(default_factory=lambda: {"memory": "256Mi"})
    env: list[dict[str, Any]] = field(default_factory=list)
    env_from: list[dict[str, Any]] = field(default_factory=list)
    ports: list[int] = field(default_factory=lambda: [8080])
    readiness: dict[str, Any] | None = None
    liveness: dict[str, Any] | None = None
    mounts: list[dict[str, Any]] = field(default_factory=list)
    command: list[str] | None = None
    args: list[str] | None = None

    def spec(self) -> dict[str, Any]:
        s: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imagePullPolicy": "IfNotPresent",
            "ports": [{"containerPort": p, "name": "http" if i == 0 else f"p{p}", "protocol": "TCP"} for i, p in enumerate(self.ports)],
            "resources": {k: v for k, v in (("requests", self.requests), ("limits", self.limits)) if v},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
        if self.env:
            s["env"] = self.env
        if self.env_from:
            s["envFrom"] = self.env_from
        if self.readiness:
            s["readinessProbe"] = self.readiness
        if self.liveness:
            s["livenessProbe"] = self.liveness
        if self.mounts:
            s["volumeMounts"] = self.mounts
        if self.command:
            s["command"] = self.command
        if self.args:
            s["args"] = self.args
        return s


def status_image(image: str) -> str:
    """The image as the kubelet reports it in containerStatuses (registry and tag filled in)."""
    first, _, rest = image.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        image = f"docker.io/{image if rest else 'library/' + image}"
    if ":" not in image.rsplit("/", 1)[-1] and "@" not in image:
        image += ":latest"
    return image


def http_probe(path: str, port: int | str, period: int = 10, timeout: int = 1, failure: int = 3, delay: int = 0) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": port, "scheme": "HTTP"},
        "initialDelaySeconds": delay,
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failure,
        "successThreshold": 1,
    }


# -- container states -----------------------------------------------------------------------------
def running(minutes_ago: float = 600, ready: bool = True, restarts: int = 0, last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"state": {"running": {"startedAt": ts(minutes_ago)}}, "ready": ready, "restartCount": restarts, "last": last, "started": True}


def waiting(reason: str, message: str = "", restarts: int = 0, last: dict[str, Any] | None = None) -> dict[str, Any]:
    w: dict[str, Any] = {"reason": reason}
    if message:
        w["message"] = message
    return {"state": {"waiting": w}, "ready": False, "restartCount": restarts, "last": last, "started": False}


def terminated(reason: str, code: int, minutes_ago: float = 5, ran: float = 1) -> dict[str, Any]:
    return {
        "state": {"terminated": {"reason": reason, "exitCode": code, "startedAt": ts(minutes_ago + ran), "finishedAt": ts(minutes_ago)}},
        "ready": False,
        "restartCount": 0,
        "last": None,
        "started": False,
    }


def last(reason: str, code: int, minutes_ago: float = 3, ran: float = 0.5) -> dict[str, Any]:
    return {"reason": reason, "exitCode": code, "startedAt": ts(minutes_ago + ran), "finishedAt": ts(minutes_ago)}


@dataclass
class Snap:
    """One scenario's cluster: objects, logs, users."""

    id: str
    namespaces: list[str]
    description: str = ""
    objects: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[tuple[str, str, str, bool], list[str]] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)
    _ev: int = 0

    # -- cluster basics -----------------------------------------------------------------------
    def base(self, nodes: int = 3, tenants: dict[str, list[str]] | None = None) -> Snap:
        for ns in ["default", "kube-system", *self.namespaces]:
            self.objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "uid": uid(self.id, "ns", ns), "creationTimestamp": ts(60 * 24 * 90), "labels": {"kubernetes.io/metadata.name": ns}}, "status": {"phase": "Active"}})
        for i in range(1, nodes + 1):
            self.node(f"{self.id[:12].rstrip('-')}-worker-{i}")
        self.coredns()
        self.rbac(tenants or {})
        self.storage_class("standard", default=True)
        return self

    def node(self, name: str, ready: str = "True", taints: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
             cpu: str = "3920m", memory: str = "15208084Ki", pressure: str | None = None) -> None:
        self.nodes.append(name)
        conds = []
        for ctype, msg in (("MemoryPressure", "kubelet has sufficient memory available"), ("DiskPressure", "kubelet has no disk pressure"), ("PIDPressure", "kubelet has sufficient PID available")):
            bad = pressure == ctype
            conds.append({"type": ctype, "status": "True" if bad else ("Unknown" if ready == "Unknown" else "False"), "reason": f"Kubelet{'Has' if bad else 'HasNo' if ctype != 'MemoryPressure' else 'HasSufficient'}{ctype.replace('Pressure', '')}{'Pressure' if bad or ctype != 'MemoryPressure' else ''}" if ready != "Unknown" else "NodeStatusUnknown",
                          "message": ("kubelet has memory pressure" if bad else msg) if ready != "Unknown" else "Kubelet stopped posting node status.",
                          "lastHeartbeatTime": ts(0.5 if ready != "Unknown" else 14), "lastTransitionTime": ts(60 * 24 * 30 if not bad else 40)})
        conds.append({"type": "Ready", "status": ready, "reason": {"True": "KubeletReady", "False": "KubeletNotReady", "Unknown": "NodeStatusUnknown"}[ready],
                      "message": {"True": "kubelet is posting ready status", "False": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady", "Unknown": "Kubelet stopped posting node status."}[ready],
                      "lastHeartbeatTime": ts(0.5 if ready == "True" else 14), "lastTransitionTime": ts(60 * 24 * 30 if ready == "True" else 12)})
        lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m6i.xlarge",
               "topology.kubernetes.io/zone": f"eu-west-1{'abc'[len(self.nodes) % 3]}"}
        lab.update(labels or {})
        spec: dict[str, Any] = {"podCIDR": f"10.244.{len(self.nodes)}.0/24", "providerID": f"aws:///eu-west-1a/i-0{short_hash(self.id, name, n=16, alphabet='0123456789abcdef')}"}
        if taints:
            spec["taints"] = taints
        self.objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid(self.id, "node", name), "labels": lab, "creationTimestamp": ts(60 * 24 * 60)},
                             "spec": spec, "status": {"conditions": conds, "allocatable": {"cpu": cpu, "memory": memory, "pods": "58", "ephemeral-storage": "95551679124"},
                                                      "capacity": {"cpu": "4", "memory": "16059028Ki", "pods": "58", "ephemeral-storage": "103681152Ki"},
                                                      "addresses": [{"type": "InternalIP", "address": f"10.0.0.{10 + len(self.nodes)}"}, {"type": "Hostname", "address": name}],
                                                      "nodeInfo": {"kubeletVersion": "v1.30.4", "containerRuntimeVersion": "containerd://1.7.20", "osImage": "Ubuntu 22.04.4 LTS"}}})

    def coredns(self) -> None:
        c = C("coredns", "registry.k8s.io/coredns/coredns:v1.11.1", requests={"cpu": "100m", "memory": "70Mi"}, limits={"memory": "170Mi"}, ports=[53],
              readiness=http_probe("/ready", 8181), liveness=http_probe("/health", 8080, delay=60, timeout=5, failure=5))
        pods = self.deploy("kube-system", "coredns", [c], replicas=2, labels={"k8s-app": "kube-dns"})
        self.service("kube-system", "kube-dns", {"k8s-app": "kube-dns"}, port=53, cluster_ip="10.96.0.10", pods=pods)
        for p in pods:
            self.log("kube-system", p, "coredns", [".:53", "[INFO] plugin/reload: Running configuration SHA512 = 591cf328cccc12bc490481273e738df59329c62c0b729d94e8b61db9961c2fa5f046dd37f1cf888b953814040d180f52594972691cd6ff41be96639138a43908", "CoreDNS-1.11.1", "linux/amd64, go1.20.7, ae2bbc2"], start=60 * 24 * 9)

    def rbac(self, tenants: dict[str, list[str]]) -> None:
        view_rules = [
            {"apiGroups": [""], "resources": ["pods", "pods/log", "pods/status", "services", "endpoints", "configmaps", "events", "persistentvolumeclaims", "resourcequotas", "limitranges", "serviceaccounts", "replicationcontrollers"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
            {"apiGroups": ["apps", "batch", "autoscaling"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies", "ingresses"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["get", "list", "watch"]},
        ]
        reader_rules = [
            {"apiGroups": [""], "resources": ["pods", "pods/log", "pods/status", "services", "endpoints", "configmaps", "secrets", "events", "persistentvolumeclaims", "persistentvolumes", "nodes", "nodes/status", "namespaces", "resourcequotas", "limitranges", "serviceaccounts", "replicationcontrollers"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps", "batch", "policy", "autoscaling", "networking.k8s.io", "storage.k8s.io", "rbac.authorization.k8s.io", "events.k8s.io", "discovery.k8s.io"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
        ]
        authz_rules = [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        ]
        for name, rules in (("view", view_rules), ("sleuth-reader", reader_rules), ("sleuth-authz", authz_rules)):
            self.objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
        self.objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cluster-admin"},
                             "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]})
        for name, role, group in (("platform-admins", "cluster-admin", "platform-admins"), ("sleuth-reader", "sleuth-reader", "sleuth:readers"), ("sleuth-authz", "sleuth-authz", "sleuth:authz")):
            self.objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]})
        self.users = {"admin": {"groups": ["platform-admins"], "token": f"{self.id}-admin-token"},
                      "sleuth-authz": {"groups": ["sleuth:authz"], "token": f"{self.id}-authz-token"},
                      "sleuth-reader": {"groups": ["sleuth:readers"], "token": f"{self.id}-reader-token"}}
        for user, namespaces in tenants.items():
            self.users[user] = {"groups": [f"{user}-team"], "token": f"{self.id}-{user}-token"}
            for ns in namespaces:
                self.objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": f"{user}-team-view", "namespace": ns},
                                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                                     "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": f"{user}-team"}]})

    def storage_class(self, name: str, default: bool = False, provisioner: str = "ebs.csi.aws.com") -> None:
        ann = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        self.objects.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name, "annotations": ann}, "provisioner": provisioner,
                             "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True})

    # -- workloads ------------------------------------------------------------------------------
    def _pod(self, ns: str, name: str, containers: list[C], states: dict[str, Any] | None, labels: dict[str, str], owner: tuple[str, str] | None,
             node: str | None, created: float, phase: str | None = None, extra_spec: dict[str, Any] | None = None, pod_status: dict[str, Any] | None = None,
             init: list[tuple[C, dict[str, Any]]] | None = None, volumes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        states = states or {}
        spec: dict[str, Any] = {"containers": [c.spec() for c in containers], "restartPolicy": "Always", "serviceAccountName": "default",
                                "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler"}
        if init:
            spec["initContainers"] = [c.spec() for c, _ in init]
        if volumes:
            spec["volumes"] = volumes
        if node:
            spec["nodeName"] = node
        spec.update(extra_spec or {})
        meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid(self.id, ns, "pod", name), "labels": labels, "creationTimestamp": ts(created)}
        if owner:
            meta["ownerReferences"] = [{"apiVersion": "apps/v1" if owner[0] != "Job" else "batch/v1", "kind": owner[0], "name": owner[1], "uid": uid(self.id, ns, owner[0], owner[1]), "controller": True, "blockOwnerDeletion": True}]
        status: dict[str, Any] = {"qosClass": "Burstable"}
        if node is None:
            status["phase"] = "Pending"
            status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": (pod_status or {}).get("schedule_message", ""), "lastTransitionTime": ts(created)}]
        else:
            cstats = []
            for c in containers:
                st = states.get(c.name) or running(created)
                cs = {"name": c.name, "image": status_image(c.image), "imageID": "" if "waiting" in st["state"] and st["restartCount"] == 0 else f"{c.image.split(':')[0]}@sha256:{hashlib.sha256(c.image.encode()).hexdigest()}",
                      "containerID": "" if "waiting" in st["state"] and st["restartCount"] == 0 else f"containerd://{hashlib.sha256((name + c.name).encode()).hexdigest()}",
                      "ready": st["ready"], "restartCount": st["restartCount"], "started": st["started"], "state": st["state"], "lastState": {"terminated": st["last"]} if st["last"] else {}}
                cstats.append(cs)
            all_ready = all(c["ready"] for c in cstats)
            term = [c for c in cstats if "terminated" in c["state"]]
            derived = "Running"
            if term and all("terminated" in c["state"] for c in cstats):
                derived = "Succeeded" if all(c["state"]["terminated"]["exitCode"] == 0 for c in term) else "Failed"
            if init and any(("running" not in st["state"] and "terminated" not in st["state"]) or st["state"].get("terminated", {}).get("exitCode", 0) != 0 for _, st in init):
                derived = "Pending"
            status["phase"] = phase or derived
            unready = [c["name"] for c in cstats if not c["ready"]]
            status["conditions"] = [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": ts(created)},
                {"type": "Initialized", "status": "True" if not init or derived != "Pending" else "False", "lastTransitionTime": ts(created)},
                {"type": "Ready", "status": "True" if all_ready else "False", "lastTransitionTime": ts(created if all_ready else min(created, 20)), **({} if all_ready else {"reason": "ContainersNotReady", "message": f"containers with unready status: [{' '.join(unready)}]"})},
                {"type": "ContainersReady", "status": "True" if all_ready else "False", "lastTransitionTime": ts(created if all_ready else min(created, 20)), **({} if all_ready else {"reason": "ContainersNotReady", "message": f"containers with unready status: [{' '.join(unready)}]"})},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(created)},
            ]
            status["hostIP"] = f"10.0.0.{11 + (self.nodes.index(node) if node in self.nodes else 0)}"
            status["podIP"] = ip(self.id, ns, name)
            status["startTime"] = ts(created)
            status["containerStatuses"] = cstats
            if init:
                status["initContainerStatuses"] = [{"name": c.name, "image": c.image, "ready": st["ready"], "restartCount": st["restartCount"], "state": st["state"],
                                                    "lastState": {"terminated": st["last"]} if st["last"] else {}} for c, st in init]
        status.update({k: v for k, v in (pod_status or {}).items() if k != "schedule_message"})
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
        self.objects.append(pod)
        return pod

    def deploy(self, ns: str, name: str, containers: list[C], replicas: int = 2, states: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
               created: float = 60 * 24 * 12, pod_created: float = 60 * 5, nodes: list[str | None] | None = None, conditions: list[dict[str, Any]] | None = None,
               extra_spec: dict[str, Any] | None = None, pod_status: dict[str, Any] | None = None, volumes: list[dict[str, Any]] | None = None,
               init: list[tuple[C, dict[str, Any]]] | None = None, pods: int | None = None, revision: int = 3, paused: bool = False,
               status_override: dict[str, Any] | None = None, phase: str | None = None) -> list[str]:
        labels = labels or {"app.kubernetes.io/name": name}
        rs_hash = short_hash(self.id, ns, name, str(revision), n=10)
        rs = f"{name}-{rs_hash}"
        tmpl_spec: dict[str, Any] = {"containers": [c.spec() for c in containers]}
        if init:
            tmpl_spec["initContainers"] = [c.spec() for c, _ in init]
        if volumes:
            tmpl_spec["volumes"] = volumes
        tmpl_spec.update(extra_spec or {})
        n = replicas if pods is None else pods
        pod_names = [f"{rs}-{short_hash(self.id, ns, name, str(i), n=5)}" for i in range(n)]
        ready = 0
        for i, pname in enumerate(pod_names):
            st = states[i % len(states)] if states else None
            node = (nodes[i % len(nodes)] if nodes else self.nodes[i % len(self.nodes)])
            pod = self._pod(ns, pname, containers, {c.name: st for c in containers} if isinstance(st, dict) and "state" in st else st, {**labels, "pod-template-hash": rs_hash},
                            ("ReplicaSet", rs), node, pod_created, phase, extra_spec, pod_status, init, volumes)
            if pod["status"].get("phase") == "Running" and all(c["ready"] for c in pod["status"].get("containerStatuses", [])):
                ready += 1
        avail = ready
        conds = conditions or [
            {"type": "Available", "status": "True" if avail >= max(1, replicas - 1) else "False", "reason": "MinimumReplicasAvailable" if avail >= max(1, replicas - 1) else "MinimumReplicasUnavailable",
             "message": "Deployment has minimum availability." if avail >= max(1, replicas - 1) else "Deployment does not have minimum availability.", "lastTransitionTime": ts(pod_created)},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable" if avail == replicas else "ReplicaSetUpdated",
             "message": f'ReplicaSet "{rs}" has successfully progressed.' if avail == replicas else f'ReplicaSet "{rs}" is progressing.', "lastTransitionTime": ts(pod_created)},
        ]
        dep_status = {"observedGeneration": revision, "replicas": n, "readyReplicas": ready, "availableReplicas": avail, "updatedReplicas": n,
                      "unavailableReplicas": max(0, replicas - avail), "conditions": conds}
        dep_status.update(status_override or {})
        dep_status = {k: v for k, v in dep_status.items() if v != 0 or k == "replicas"}
        self.objects.append({"apiVersion": "apps/v1", "kind": "Deployment",
                             "metadata": {"name": name, "namespace": ns, "uid": uid(self.id, ns, "Deployment", name), "labels": labels, "generation": revision,
                                          "annotations": {"deployment.kubernetes.io/revision": str(revision)}, "creationTimestamp": ts(created)},
                             "spec": {"replicas": replicas, "paused": paused, "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10, "selector": {"matchLabels": labels},
                                      "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                                      "template": {"metadata": {"labels": labels}, "spec": tmpl_spec}},
                             "status": dep_status})
        self.objects.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                             "metadata": {"name": rs, "namespace": ns, "uid": uid(self.id, ns, "ReplicaSet", rs), "labels": {**labels, "pod-template-hash": rs_hash},
                                          "annotations": {"deployment.kubernetes.io/revision": str(revision), "deployment.kubernetes.io/desired-replicas": str(replicas)},
                                          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": uid(self.id, ns, "Deployment", name), "controller": True, "blockOwnerDeletion": True}],
                                          "creationTimestamp": ts(pod_created)},
                             "spec": {"replicas": replicas, "selector": {"matchLabels": {**labels, "pod-template-hash": rs_hash}}, "template": {"metadata": {"labels": {**labels, "pod-template-hash": rs_hash}}, "spec": tmpl_spec}},
                             "status": {"replicas": n, "readyReplicas": ready, "availableReplicas": ready, "fullyLabeledReplicas": n, "observedGeneration": 1}})
        return pod_names

    def statefulset(self, ns: str, name: str, containers: list[C], replicas: int = 1, states: list[dict[str, Any]] | None = None, claim: tuple[str, str, str] | None = None,
                    nodes: list[str | None] | None = None, pod_created: float = 60 * 30, pod_status: dict[str, Any] | None = None, volumes: list[dict[str, Any]] | None = None,
                    deleting: bool = False) -> list[str]:
        labels = {"app.kubernetes.io/name": name}
        names = [f"{name}-{i}" for i in range(replicas)]
        ready = 0
        for i, pname in enumerate(names):
            st = states[i % len(states)] if states else None
            vols = list(volumes or [])
            if claim:
                vols.append({"name": claim[0], "persistentVolumeClaim": {"claimName": f"{claim[0]}-{pname}"}})
            node = nodes[i % len(nodes)] if nodes else self.nodes[i % len(self.nodes)]
            pod = self._pod(ns, pname, containers, {c.name: st for c in containers} if st else None, {**labels, "statefulset.kubernetes.io/pod-name": pname,
                            "apps.kubernetes.io/pod-index": str(i)}, ("StatefulSet", name), node, pod_created, None, {"hostname": pname, "subdomain": name}, pod_status, None, vols)
            if deleting:
                pod["metadata"]["deletionTimestamp"] = ts(6)
                pod["metadata"]["deletionGracePeriodSeconds"] = 30
            if pod["status"].get("phase") == "Running" and all(c["ready"] for c in pod["status"].get("containerStatuses", [])):
                ready += 1
            if claim:
                self.pvc(ns, f"{claim[0]}-{pname}", claim[1], claim[2], bound=True)
        tmpl = {"containers": [c.spec() for c in containers]}
        self.objects.append({"apiVersion": "apps/v1", "kind": "StatefulSet",
                             "metadata": {"name": name, "namespace": ns, "uid": uid(self.id, ns, "StatefulSet", name), "labels": labels, "creationTimestamp": ts(60 * 24 * 40), "generation": 2},
                             "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": labels}, "podManagementPolicy": "OrderedReady",
                                      "template": {"metadata": {"labels": labels}, "spec": tmpl},
                                      **({"volumeClaimTemplates": [{"metadata": {"name": claim[0]}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": claim[2], "resources": {"requests": {"storage": claim[1]}}}}]} if claim else {})},
                             "status": {"replicas": replicas, "readyReplicas": ready, "currentReplicas": replicas, "updatedReplicas": replicas, "availableReplicas": ready,
                                        "currentRevision": f"{name}-{short_hash(self.id, name, n=10)}", "updateRevision": f"{name}-{short_hash(self.id, name, n=10)}", "observedGeneration": 2}})
        return names

    def job(self, ns: str, name: str, containers: list[C], attempts: list[dict[str, Any]], backoff_limit: int = 4, failed: bool = True, created: float = 40,
            cron: str | None = None) -> list[str]:
        labels = {"batch.kubernetes.io/job-name": name, "job-name": name}
        names = []
        for i, st in enumerate(attempts):
            pname = f"{name}-{short_hash(self.id, ns, name, str(i), n=5)}"
            pod = self._pod(ns, pname, containers, {c.name: st for c in containers}, labels, ("Job", name), self.nodes[i % len(self.nodes)], created - i * 3,
                            extra_spec={"restartPolicy": "Never"})
            pod["spec"]["restartPolicy"] = "Never"
            names.append(pname)
        conds = []
        if failed:
            conds = [{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit", "lastTransitionTime": ts(created - len(attempts) * 3)},
                     {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit", "lastTransitionTime": ts(created - len(attempts) * 3)}]
        meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid(self.id, ns, "Job", name), "labels": labels, "creationTimestamp": ts(created)}
        if cron:
            meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": cron, "uid": uid(self.id, ns, "CronJob", cron), "controller": True}]
        self.objects.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                             "spec": {"backoffLimit": backoff_limit, "completions": 1, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid(self.id, ns, "Job", name)}},
                                      "template": {"metadata": {"labels": labels}, "spec": {"restartPolicy": "Never", "containers": [c.spec() for c in containers]}}},
                             "status": {"startTime": ts(created), "failed": sum(1 for a in attempts if "terminated" in a["state"] and a["state"]["terminated"]["exitCode"] != 0) if failed else 0,
                                        "succeeded": 0 if failed else 1, "conditions": conds, **({} if failed else {"completionTime": ts(created - 2)})}})
        return names

    # -- other objects --------------------------------------------------------------------------
    def service(self, ns: str, name: str, selector: dict[str, str], port: int = 80, target: int | str = 8080, cluster_ip: str | None = None,
                pods: list[str] | None = None) -> None:
        cip = cluster_ip or ip(self.id, ns, "svc", name, prefix="10.96")
        self.objects.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "uid": uid(self.id, ns, "svc", name), "creationTimestamp": ts(60 * 24 * 20)},
                             "spec": {"type": "ClusterIP", "clusterIP": cip, "clusterIPs": [cip], "selector": selector, "ports": [{"name": "http", "port": port, "targetPort": target, "protocol": "TCP"}]}})
        subsets = []
        ready = [p for p in self.objects if p["kind"] == "Pod" and p["metadata"]["namespace"] == ns and all(p["metadata"]["labels"].get(k) == v for k, v in selector.items())]
        if pods is not None:
            ready = [p for p in ready if p["metadata"]["name"] in pods]
        addrs = [{"ip": p["status"].get("podIP", ""), "nodeName": p["spec"].get("nodeName"), "targetRef": {"kind": "Pod", "name": p["metadata"]["name"], "namespace": ns}} for p in ready if p["status"].get("podIP")]
        ok = [a for a, p in zip(addrs, ready, strict=False) if p["status"].get("conditions") and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"])]
        bad = [a for a in addrs if a not in ok]
        if ok or bad:
            subset: dict[str, Any] = {"ports": [{"name": "http", "port": target if isinstance(target, int) else 8080, "protocol": "TCP"}]}
            if ok:
                subset["addresses"] = ok
            if bad:
                subset["notReadyAddresses"] = bad
            subsets.append(subset)
        ep: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(60 * 24 * 20)}}
        if subsets:
            ep["subsets"] = subsets
        self.objects.append(ep)

    def pvc(self, ns: str, name: str, size: str, storage_class: str, bound: bool = True, access: str = "ReadWriteOnce") -> None:
        spec: dict[str, Any] = {"accessModes": [access], "resources": {"requests": {"storage": size}}, "storageClassName": storage_class, "volumeMode": "Filesystem"}
        status: dict[str, Any] = {"phase": "Pending"}
        if bound:
            pv = f"pvc-{uid(self.id, ns, 'pvc', name)}"
            spec["volumeName"] = pv
            status = {"phase": "Bound", "accessModes": [access], "capacity": {"storage": size}}
            self.objects.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv, "uid": uid(self.id, "pv", pv)},
                                 "spec": {"capacity": {"storage": size}, "accessModes": [access], "persistentVolumeReclaimPolicy": "Delete", "storageClassName": storage_class,
                                          "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": name}, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-0{short_hash(pv, n=16, alphabet='0123456789abcdef')}"}},
                                 "status": {"phase": "Bound"}})
        self.objects.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns, "uid": uid(self.id, ns, "pvc", name), "creationTimestamp": ts(60 * 24 * 20 if bound else 30)},
                             "spec": spec, "status": status})

    def configmap(self, ns: str, name: str, data: dict[str, str]) -> None:
        self.objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(60 * 24 * 10)}, "data": data})

    def secret(self, ns: str, name: str, keys: list[str]) -> None:
        import base64

        self.objects.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(60 * 24 * 10)},
                             "data": {k: base64.b64encode(f"s3cr3t-{short_hash(name, k)}".encode()).decode() for k in keys}})

    def add(self, obj: dict[str, Any]) -> None:
        self.objects.append(obj)

    def event(self, ns: str, kind: str, name: str, reason: str, message: str, type_: str = "Warning", count: int = 1, first: float = 30, last_: float = 1,
              component: str = "kubelet", host: str | None = None) -> None:
        self._ev += 1
        src: dict[str, Any] = {"component": component}
        if host:
            src["host"] = host
        self.objects.append({"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.{short_hash(self.id, str(self._ev), n=16, alphabet='0123456789abcdef')}", "namespace": ns, "creationTimestamp": ts(first)},
                             "involvedObject": {"kind": kind, "name": name, "namespace": ns, "apiVersion": "v1" if kind in ("Pod", "PersistentVolumeClaim", "Service") else "apps/v1" if kind != "Job" else "batch/v1",
                                                "uid": uid(self.id, ns, kind, name)},
                             "reason": reason, "message": message, "type": type_, "count": count, "firstTimestamp": ts(first), "lastTimestamp": ts(last_), "source": src,
                             "reportingComponent": component, "reportingInstance": host or ""})

    def log(self, ns: str, pod: str, container: str, lines: list[str], previous: bool = False, start: float = 10, step: float = 0.35) -> None:
        t0 = NOW - timedelta(minutes=start)
        out = []
        for i, line in enumerate(lines):
            t = t0 + timedelta(seconds=i * step, microseconds=(i * 7919) % 1000000)
            out.append(f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}{i % 10:03d}Z {line}")
        self.logs[(ns, pod, container, previous)] = out

    # -- writing --------------------------------------------------------------------------------
    def write(self, root: Path, scenario: dict[str, Any]) -> None:
        import shutil

        d = root / self.id
        if d.exists():
            shutil.rmtree(d)
        (d / "cluster").mkdir(parents=True)
        header = f"# Scenario {self.id} (written by scenarios/_generator/generate.py; regenerate, do not edit). now = {NOW:%Y-%m-%dT%H:%M:%SZ}\n"
        groups: dict[str, list[dict[str, Any]]] = {}
        for o in self.objects:
            ns = o["metadata"].get("namespace")
            key = "00-cluster" if not ns else (f"events-{ns}" if o["kind"] == "Event" else ns)
            if o["kind"] in ("ClusterRole", "ClusterRoleBinding", "RoleBinding"):
                key = "01-rbac"
            groups.setdefault(key, []).append(o)
        for key, objs in sorted(groups.items()):
            (d / "cluster" / f"{key}.yaml").write_text(header + yaml.safe_dump_all(objs, sort_keys=False, width=140), encoding="utf-8")
        for (ns, pod, container, previous), lines in self.logs.items():
            p = d / "logs" / ns / pod / f"{container}{'.previous' if previous else ''}.log"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        snap = {"name": self.id, "description": self.description, "cluster": {"name": "prod-1", "aliases": ["prod", "eu-west-1"]},
                "now": f"{NOW:%Y-%m-%dT%H:%M:%SZ}", "users": self.users}
        (d / "snapshot.yaml").write_text(header + yaml.safe_dump(snap, sort_keys=False, width=120), encoding="utf-8")
        (d / "scenario.yaml").write_text(header + yaml.safe_dump(scenario, sort_keys=False, width=120, allow_unicode=True), encoding="utf-8")
