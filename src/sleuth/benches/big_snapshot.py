"""A large synthetic snapshot (issue 14: "report time for a 5,000-pod snapshot"), in the format of
``scenarios/demo``: ``snapshot.yaml`` (cluster, ``now``, users), ``cluster/*.yaml``, no logs.

Per namespace: Deployments (1–5 replicas, a ReplicaSet each, pods owned by it), a StatefulSet
(3 pods), a CronJob, Services; some PDBs and HPAs. Probes, resources and images vary
deterministically (a seeded RNG) so the report's rules find things: single replicas without a
PDB, missing probes or limits, ``:latest`` tags, PDBs that block every eviction, HPAs on
deployments without CPU requests. RBAC is the demo's ClusterRoles plus a RoleBinding of ``view``
per tenant namespace: ``tenant`` (group ``tenant-a``) reads the first ``tenant_namespaces``
namespaces, ``admin`` (group ``platform-admins``) is cluster-admin.

    python -m sleuth.benches.big_snapshot /tmp/big [pods] [namespaces]
    sleuth report --snapshot /tmp/big --as tenant

:func:`large_cluster` (``python -m sleuth.benches.big_snapshot --large /tmp/large``) is issue 16's
profile: 2,000 namespaces, 50,000 pods, 500 users in team groups with per-namespace RoleBindings
(measured by :mod:`sleuth.benches.scope_scale`).

Not in the repo's data (generated on demand; nothing asserts its timing: ``make bench`` measures).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

__all__ = ["LARGE_AUTHZ_TOKEN", "large_cluster", "main"]

NOW = "2026-11-30T09:00:00Z"
CREATED = "2026-11-01T09:00:00Z"
_DEMO_RBAC = Path(__file__).resolve().parents[3] / "scenarios" / "demo" / "cluster" / "03-rbac.yaml"
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


_URL_NS = uuid.NAMESPACE_URL.bytes


def _uid(*parts: str) -> str:
    """``str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))``, without the UUID object (3x faster)."""
    b = bytearray(hashlib.sha1(_URL_NS + "/".join(parts).encode()).digest()[:16])
    b[6] = (b[6] & 0x0F) | 0x50
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _meta(kind: str, name: str, ns: str = "", **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "uid": _uid(kind, ns, name), "creationTimestamp": CREATED,
                         "resourceVersion": "1"}
    if ns:
        m["namespace"] = ns
    m.update(extra)
    return m


def _owner(kind: str, name: str, ns: str, api: str = "apps/v1") -> list[dict[str, Any]]:
    return [{"apiVersion": api, "kind": kind, "name": name, "uid": _uid(kind, ns, name),
             "controller": True, "blockOwnerDeletion": True}]


def _container(rng: random.Random, app: str) -> dict[str, Any]:
    tag = rng.choice(["1.4.2", "2.0.1", "latest", "3.11.0", ""])
    c: dict[str, Any] = {"name": app, "image": f"registry.internal/{app}{':' + tag if tag else ''}",
                         "imagePullPolicy": "IfNotPresent",
                         "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]}
    probe = {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "periodSeconds": 10,
             "timeoutSeconds": 1, "failureThreshold": 3, "successThreshold": 1}
    if rng.random() < 0.7:
        c["readinessProbe"] = probe
    if rng.random() < 0.6:
        c["livenessProbe"] = {**probe, "initialDelaySeconds": rng.choice([0, 10, 30])}
    r = rng.random()
    if r < 0.6:
        c["resources"] = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
    elif r < 0.8:
        c["resources"] = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    elif r < 0.9:
        c["resources"] = {"limits": {"memory": "2Gi"}, "requests": {"memory": "64Mi"}}
    return c


def _pod(rng: random.Random, name: str, ns: str, labels: dict[str, str], spec: dict[str, Any],
         owner: list[dict[str, Any]], node: str) -> dict[str, Any]:
    c = spec["containers"][0]
    restarts = rng.choice([0] * 12 + [1, 4, 27])
    ready = restarts < 20
    state: dict[str, Any] = ({"running": {"startedAt": "2026-11-29T09:00:00Z"}} if ready else
                             {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting"}})
    cond = "True" if ready else "False"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": _meta("Pod", name, ns, labels=labels, ownerReferences=owner),
        "spec": {**spec, "nodeName": node, "restartPolicy": "Always", "serviceAccountName": "default"},
        "status": {
            "phase": "Running", "podIP": f"10.{rng.randrange(244, 250)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            "hostIP": "10.0.0.11", "startTime": "2026-11-29T09:00:00Z", "qosClass": "Burstable",
            "conditions": [{"type": t, "status": cond if t in ("Ready", "ContainersReady") else "True",
                            "lastTransitionTime": "2026-11-29T09:00:05Z"}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": "", "ready": ready,
                                   "started": ready, "restartCount": restarts, "state": state}],
        },
    }


def _namespace(rng: random.Random, ns: str, pods: int, nodes: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    left = pods
    sts_pods = 3 if pods >= 10 else 0
    left -= sts_pods
    i = 0
    while left > 0:
        app = f"svc-{i:03d}"
        replicas = min(left, rng.choice([1, 1, 2, 2, 3, 3, 5]))
        left -= replicas
        i += 1
        labels = {"app.kubernetes.io/name": app}
        tmpl_spec = {"containers": [_container(rng, app)]}
        h = f"{rng.getrandbits(40):010x}"
        rs = f"{app}-{h}"
        out.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("Deployment", app, ns, labels=labels),
                    "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                             "template": {"metadata": {"labels": labels}, "spec": tmpl_spec}},
                    "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
                               "updatedReplicas": replicas, "observedGeneration": 1}})
        rs_labels = {**labels, "pod-template-hash": h}
        out.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": _meta("ReplicaSet", rs, ns, labels=rs_labels, ownerReferences=_owner("Deployment", app, ns)),
                    "spec": {"replicas": replicas, "selector": {"matchLabels": rs_labels},
                             "template": {"metadata": {"labels": rs_labels}, "spec": tmpl_spec}},
                    "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}})
        for k in range(replicas):
            out.append(_pod(rng, f"{rs}-{k:05d}", ns, rs_labels, tmpl_spec, _owner("ReplicaSet", rs, ns), rng.choice(nodes)))
        out.append({"apiVersion": "v1", "kind": "Service", "metadata": _meta("Service", app, ns),
                    "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": "http", "protocol": "TCP"}],
                             "type": "ClusterIP", "clusterIP": f"10.96.{rng.randrange(256)}.{rng.randrange(1, 255)}"}})
        p = rng.random()
        if p < 0.25:
            out.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta("PodDisruptionBudget", app, ns),
                        "spec": {"selector": {"matchLabels": labels},
                                 "minAvailable": replicas if rng.random() < 0.3 else max(1, replicas - 1)},
                        "status": {"currentHealthy": replicas, "desiredHealthy": replicas, "expectedPods": replicas,
                                   "disruptionsAllowed": 0}})
        if p > 0.85:
            out.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                        "metadata": _meta("HorizontalPodAutoscaler", app, ns),
                        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": app},
                                 "minReplicas": 1, "maxReplicas": 10,
                                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                                     "type": "Utilization", "averageUtilization": 70}}}]},
                        "status": {"currentReplicas": replicas, "desiredReplicas": replicas}})
    if sts_pods:
        labels = {"app.kubernetes.io/name": "db"}
        spec = {"containers": [_container(rng, "db")]}
        out.append({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta("StatefulSet", "db", ns, labels=labels),
                    "spec": {"replicas": sts_pods, "serviceName": "db", "selector": {"matchLabels": labels},
                             "template": {"metadata": {"labels": labels}, "spec": spec}},
                    "status": {"replicas": sts_pods, "readyReplicas": sts_pods, "currentReplicas": sts_pods}})
        for k in range(sts_pods):
            out.append(_pod(rng, f"db-{k}", ns, labels, spec, _owner("StatefulSet", "db", ns), rng.choice(nodes)))
        out.append({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta("CronJob", "nightly", ns),
                    "spec": {"schedule": "0 3 * * *", "concurrencyPolicy": rng.choice(["Allow", "Forbid"]),
                             "jobTemplate": {"spec": {"template": {"spec": {
                                 "restartPolicy": "OnFailure", "containers": [_container(rng, "nightly")]}}}}},
                    "status": {"lastScheduleTime": "2026-11-30T03:00:00Z"}})
    return out


def _nodes(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(1, n + 1):
        name = f"big-node-{i}"
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": _meta("Node", name, labels={"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}),
                    "status": {"allocatable": {"cpu": "15920m", "memory": "63Gi", "pods": "110"},
                               "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                               "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                               "lastHeartbeatTime": "2026-11-30T08:59:30Z",
                                               "lastTransitionTime": "2026-10-01T09:00:00Z"}],
                               "nodeInfo": {"kubeletVersion": "v1.30.4"}}})
    return out


def _dump(path: Path, docs: list[dict[str, Any]]) -> None:
    path.write_text(yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False))


def main(out_dir: str | Path, pods: int = 5000, namespaces: int = 50, *, tenant_namespaces: int = 3,
         seed: int = 14) -> Path:
    """Write the snapshot into ``out_dir`` (made if missing); its path."""
    out = Path(out_dir)
    (out / "cluster").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    names = [f"ns-{i:03d}" for i in range(namespaces)]
    tenant = names[:tenant_namespaces]
    nodes = _nodes(max(3, pods // 80))
    (out / "snapshot.yaml").write_text(yaml.safe_dump({
        "name": "big", "description": f"Synthetic: {pods} pods in {namespaces} namespaces (sleuth.benches.big_snapshot).",
        "cluster": {"name": "big"}, "now": NOW,
        "users": {"tenant": {"groups": ["tenant-a"], "token": "big-tenant-token"},
                  "admin": {"groups": ["platform-admins"], "token": "big-admin-token"},
                  "sleuth-authz": {"groups": ["sleuth:authz"]}, "sleuth-reader": {"groups": ["sleuth:readers"]}},
    }, sort_keys=False))
    _dump(out / "cluster" / "00-namespaces.yaml",
          [{"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("Namespace", n), "status": {"phase": "Active"}}
           for n in names])
    _dump(out / "cluster" / "01-nodes.yaml", [n for n in nodes])
    rbac = [d for d in yaml.safe_load_all(_DEMO_RBAC.read_text()) if d and d.get("kind") != "RoleBinding"]
    rbac += [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
              "metadata": _meta("RoleBinding", "tenant-a-view", n),
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
              "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "tenant-a"}]}
             for n in tenant]
    _dump(out / "cluster" / "03-rbac.yaml", rbac)
    node_names = [n["metadata"]["name"] for n in nodes]
    per, extra = divmod(pods, namespaces)
    for i, ns in enumerate(names):
        _dump(out / "cluster" / f"{ns}.yaml", _namespace(rng, ns, per + (1 if i < extra else 0), node_names))
    return out


# -- the large-cluster profile (issue 16: 2,000 namespaces, 50,000 pods, 500 users) -------------------

LARGE_AUTHZ_TOKEN = "large-authz-token"
_RBAC = "rbac.authorization.k8s.io"
_TEAM_EDIT = {
    "apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": _meta("ClusterRole", "team-edit"),
    "rules": [{"apiGroups": ["", "apps", "batch", "autoscaling", "policy"],
               "resources": ["pods", "pods/log", "services", "configmaps", "secrets", "deployments", "replicasets",
                             "statefulsets", "jobs", "cronjobs", "horizontalpodautoscalers", "poddisruptionbudgets"],
               "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
              {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}],
}


def _binding(name: str, ns: str, role: str, subjects: list[tuple[str, str]]) -> dict[str, Any]:
    return {"apiVersion": f"{_RBAC}/v1", "kind": "RoleBinding" if ns else "ClusterRoleBinding",
            "metadata": _meta("RoleBinding" if ns else "ClusterRoleBinding", name, ns),
            "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": _RBAC, "kind": kind, "name": who} for kind, who in subjects]}


def _large_users(rng: random.Random, users: int, teams: int, admins: int, viewers: int) -> dict[str, Any]:
    """``users`` people: ``admins`` cluster admins, ``viewers`` cluster-wide readers, the rest in one or
    two team groups (``team-NNN``, a few also ``team-NNN-leads``); every token is ``<name>-token``."""
    out: dict[str, Any] = {}
    for i in range(users):
        name = f"user-{i:04d}"
        if i < admins:
            groups = ["platform-admins"]
        elif i < admins + viewers:
            groups = ["platform-viewers"]
        else:
            team = (i - admins - viewers) % teams  # every team has members
            groups = [f"team-{team:03d}"]
            if rng.random() < 0.25:
                groups.append(f"team-{rng.randrange(teams):03d}")
            if rng.random() < 0.1:
                groups.append(f"team-{team:03d}-leads")
        out[name] = {"groups": sorted(set(groups)), "token": f"{name}-token"}
    out["sleuth-authz"] = {"groups": ["sleuth:authz"], "token": LARGE_AUTHZ_TOKEN}
    out["sleuth-reader"] = {"groups": ["sleuth:readers"], "token": "large-reader-token"}
    return out


def large_cluster(out_dir: str | Path, *, namespaces: int = 2000, pods: int = 50_000, users: int = 500,
                  teams: int = 200, admins: int = 5, viewers: int = 5, seed: int = 16) -> Path:
    """A large cluster in JSON (fast to write and to load): ``namespaces`` namespaces
    ``team-NNN-<env>`` spread over ``teams`` teams (plus ``kube-system``/``monitoring``/``ingress``),
    ``pods`` pods shaped like :func:`main`'s, and RBAC as platform teams write it: in each team
    namespace a RoleBinding of ``view`` to ``team-NNN`` and of ``team-edit`` to ``team-NNN-leads``; one
    namespace in ten also lets a neighbouring team read it; a few users bound by name;
    ``platform-admins`` cluster-admin and ``platform-viewers`` view cluster-wide (ClusterRoleBindings).
    Users are ``user-0000`` … with token ``<name>-token``; the authz identity's token is
    :data:`LARGE_AUTHZ_TOKEN`. About three seconds for the default size."""
    out = Path(out_dir)
    (out / "cluster").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    platform = ["kube-system", "monitoring", "ingress"]
    envs = ("dev", "stage", "prod", "perf", "sandbox", "ci", "canary", "demo", "qa", "edge")
    per_team = max(1, (namespaces - len(platform) + teams - 1) // teams)
    team_ns = [(t, f"team-{t:03d}-{envs[k % len(envs)]}{'' if k < len(envs) else k // len(envs)}")
               for t in range(teams) for k in range(per_team)][: max(0, namespaces - len(platform))]
    names = platform + [ns for _, ns in team_ns]
    people = _large_users(rng, users, teams, admins, viewers)
    (out / "snapshot.yaml").write_text(yaml.safe_dump({
        "name": "large", "cluster": {"name": "large"}, "now": NOW, "users": people,
        "description": f"Synthetic: {pods} pods in {len(names)} namespaces, {users} users "
                       "(sleuth.benches.big_snapshot.large_cluster).",
    }, sort_keys=False))
    rbac: list[dict[str, Any]] = [d for d in yaml.safe_load_all(_DEMO_RBAC.read_text())
                                  if d and d.get("kind") in ("ClusterRole", "ClusterRoleBinding")]
    rbac += [_TEAM_EDIT, _binding("platform-viewers-view", "", "view", [("Group", "platform-viewers")])]
    members = [u for u, spec in people.items() if u.startswith("user-") and spec["groups"][0].startswith("team-")]
    for team, ns in team_ns:
        rbac.append(_binding("team-view", ns, "view", [("Group", f"team-{team:03d}")]))
        rbac.append(_binding("team-edit", ns, "team-edit", [("Group", f"team-{team:03d}-leads")]))
        if rng.random() < 0.1:
            rbac.append(_binding("neighbour-view", ns, "view", [("Group", f"team-{(team + 1) % teams:03d}")]))
        if rng.random() < 0.05:
            rbac.append(_binding("oncall-view", ns, "view", [("User", rng.choice(members))]))
    nodes = _nodes(max(3, pods // 100))
    node_names = [n["metadata"]["name"] for n in nodes]
    docs: dict[str, list[dict[str, Any]]] = {
        "00-namespaces": [{"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("Namespace", n),
                           "status": {"phase": "Active"}} for n in names],
        "01-nodes": nodes, "03-rbac": rbac,
    }
    per, extra = divmod(pods, len(names))
    for i, ns in enumerate(names):
        docs.setdefault(f"ns-{i // 100:03d}", []).extend(
            _namespace(rng, ns, per + (1 if i < extra else 0), node_names))
    for stem, items in docs.items():
        (out / "cluster" / f"{stem}.json").write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, separators=(",", ":")))
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--large"]:
        print(large_cluster(args[1] if len(args) > 1 else "/tmp/large-snapshot"))
    else:
        print(main(args[0] if args else "/tmp/big-snapshot", *(int(a) for a in args[1:3])))
