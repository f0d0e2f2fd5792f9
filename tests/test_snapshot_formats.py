"""``sleuth investigate`` works on any snapshot (issue 11, item 1): a snapshot whose snapshot.yaml
names only tenant users (Sleuth's own identities are added by simcluster), and the output folder of
``kubectl cluster-info dump --output-directory`` (``<ns>/pods.json``, ``nodes.json``,
``<ns>/<pod>/logs.txt``), with or without a snapshot.yaml beside it.

One small cluster, written both ways: in ``shop`` the Deployment ``cart`` crash-loops, OOMKilled at
its 128Mi limit; in ``other`` the Deployment ``ledger-sync`` crash-loops too. ``dana`` (group ``dev``)
may read ``shop`` only (a ``view``-like ClusterRole bound there), so nothing of ``other`` may reach
her result. The offline investigations run in-process (simcluster + kube-mcp on loopback), ~1 s each.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.cli import main
from sleuth.scenarios import investigate_offline, offline_cluster
from sleuth_common.messages import InvestigationResult
from sleuth_simcluster import load_snapshot

Obj = dict[str, Any]

CREATED = "2025-03-10T08:00:00Z"
NEWEST_EVENT = "2025-03-10T10:14:42Z"  # the BackOff event's lastTimestamp: the newest timestamp of all
NEWEST = datetime(2025, 3, 10, 10, 14, 42, tzinfo=UTC)
QUESTION = "Why does the cart deployment in namespace shop keep restarting?"

CART_POD = "cart-7c9d8f6b5-x2k4q"
# Everything of namespace `other` that dana must never see.
OTHER_NAMES = ("ledger-sync", "ledger-sync-5f8d7c9b6", "ledger-sync-5f8d7c9b6-q7w2p", "payroll-db",
               "registry.example/ledger-sync", "PAYROLL_DB_PASSWORD")
CART_LOG = [
    "2025-03-10T10:09:30.000000000Z starting cart service v2.4.1",
    "2025-03-10T10:09:31.500000000Z loading product catalogue into memory",
    "2025-03-10T10:09:38.250000000Z catalogue cache at 120Mi",
]
LEDGER_LOG = [
    "2025-03-10T10:10:02.000000000Z ledger-sync starting",
    "2025-03-10T10:10:03.000000000Z FATAL cannot reach payroll-db.other.svc:5432 (PAYROLL_DB_PASSWORD unset)",
]


# -- the cluster ----------------------------------------------------------------------------------
def _uid(kind: str, ns: str, name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"tiny/{kind}/{ns}/{name}"))


def _meta(name: str, ns: str | None = None, kind: str = "", **extra: Any) -> Obj:
    uid = {"uid": _uid(kind, ns or "", name)} if kind else {}
    return {"name": name, **({"namespace": ns} if ns else {}), **uid, "creationTimestamp": CREATED, **extra}


def _owner(kind: str, ns: str, name: str) -> list[Obj]:
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "controller": True, "blockOwnerDeletion": True,
             "uid": _uid(kind, ns, name)}]


def _workload(ns: str, app: str, rs_hash: str, pod_suffix: str, image: str, limit: str, *, reason: str,
              exit_code: int, restarts: int, finished: str) -> dict[str, list[Obj]]:
    """Deployment -> ReplicaSet -> one crash-looping Pod, a Service, and the pod's events."""
    rs, pod = f"{app}-{rs_hash}", f"{app}-{rs_hash}-{pod_suffix}"
    labels = {"app": app}
    container = {"name": app, "image": image, "imagePullPolicy": "IfNotPresent",
                 "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                 "resources": {"requests": {"cpu": "100m", "memory": limit}, "limits": {"memory": limit}}}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [container]}}
    deploy = {"metadata": _meta(app, ns, "Deployment", generation=1, labels=labels),
              "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
              "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "unavailableReplicas": 1,
                         "conditions": [
                             {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
                              "message": "Deployment does not have minimum availability.",
                              "lastUpdateTime": CREATED, "lastTransitionTime": CREATED},
                             {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                              "message": f'ReplicaSet "{rs}" has successfully progressed.',
                              "lastUpdateTime": CREATED, "lastTransitionTime": CREATED}]}}
    replicaset = {"metadata": _meta(rs, ns, "ReplicaSet", labels={**labels, "pod-template-hash": rs_hash},
                                    ownerReferences=_owner("Deployment", ns, app)),
                  "spec": {"replicas": 1, "selector": {"matchLabels": {**labels, "pod-template-hash": rs_hash}},
                           "template": template},
                  "status": {"replicas": 1, "fullyLabeledReplicas": 1, "observedGeneration": 1}}
    started = (datetime.fromisoformat(finished.replace("Z", "+00:00")) - timedelta(seconds=9)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    not_ready = {"status": "False", "reason": "ContainersNotReady",
                 "message": f"containers with unready status: [{app}]", "lastTransitionTime": finished}
    podobj = {"metadata": _meta(pod, ns, "Pod", labels={**labels, "pod-template-hash": rs_hash},
                                ownerReferences=_owner("ReplicaSet", ns, rs)),
              "spec": {"containers": [container], "restartPolicy": "Always", "nodeName": "worker-1",
                       "serviceAccountName": "default"},
              "status": {"phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.0.11",
                         "podIP": f"10.244.1.{len(app)}", "startTime": CREATED,
                         "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": CREATED},
                                        {"type": "Ready", **not_ready}, {"type": "ContainersReady", **not_ready},
                                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": CREATED}],
                         "containerStatuses": [{
                             "name": app, "image": image, "imageID": f"{image}@sha256:{'ab' * 32}",
                             "containerID": f"containerd://{'cd' * 32}", "ready": False, "started": False,
                             "restartCount": restarts,
                             "state": {"waiting": {"reason": "CrashLoopBackOff", "message": (
                                 f"back-off 5m0s restarting failed container={app} pod={pod}_{ns}")}},
                             "lastState": {"terminated": {"reason": reason, "exitCode": exit_code,
                                                          "startedAt": started, "finishedAt": finished}}}]}}
    service = {"metadata": _meta(app if app != "ledger-sync" else "payroll-db", ns),
               "spec": {"type": "ClusterIP", "clusterIP": f"10.96.0.{len(app)}", "selector": labels,
                        "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}

    def event(reason_: str, type_: str, message: str, count: int, first: str, last: str) -> Obj:
        return {"metadata": _meta(f"{pod}.{reason_.lower()}", ns, creationTimestamp=first),
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": pod, "namespace": ns,
                                   "fieldPath": f"spec.containers{{{app}}}"},
                "reason": reason_, "type": type_, "message": message, "count": count,
                "firstTimestamp": first, "lastTimestamp": last, "source": {"component": "kubelet", "host": "worker-1"}}

    events = [
        event("Pulled", "Normal", f'Container image "{image}" already present on machine', restarts + 1,
              CREATED, finished),
        event("BackOff", "Warning", f"Back-off restarting failed container {app} in pod {pod}_{ns}({pod})",
              restarts * 4, "2025-03-10T08:05:00Z", NEWEST_EVENT if ns == "shop" else "2025-03-10T10:12:00Z"),
    ]
    return {"deployments": [deploy], "replicasets": [replicaset], "pods": [podobj], "services": [service],
            "events": events}


def cluster() -> dict[str, dict[str, list[Obj]]]:
    """Objects by namespace ("" for cluster-scoped) and resource (the dump's file names)."""
    shop = _workload("shop", "cart", "7c9d8f6b5", "x2k4q", "registry.example/cart:2.4.1", "128Mi",
                     reason="OOMKilled", exit_code=137, restarts=7, finished="2025-03-10T10:09:39Z")
    other = _workload("other", "ledger-sync", "5f8d7c9b6", "q7w2p", "registry.example/ledger-sync:1.0.3",
                      "256Mi", reason="Error", exit_code=1, restarts=9, finished="2025-03-10T10:10:03Z")
    node = {"metadata": _meta("worker-1", labels={"kubernetes.io/hostname": "worker-1"}),
            "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                       "allocatable": {"cpu": "4", "memory": "15Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status",
                                       "lastHeartbeatTime": "2025-03-10T10:13:00Z",
                                       "lastTransitionTime": CREATED}]}}
    return {"": {"nodes": [node]}, "shop": shop, "other": other}


RBAC: list[Obj] = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "view"},
     "rules": [
         {"apiGroups": [""], "verbs": ["get", "list", "watch"],
          "resources": ["pods", "pods/log", "pods/status", "services", "endpoints", "configmaps", "events",
                        "persistentvolumeclaims", "resourcequotas", "limitranges", "replicationcontrollers"]},
         {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
         {"apiGroups": ["apps", "batch", "autoscaling"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
         {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["get", "list", "watch"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
     "metadata": {"name": "dev-view", "namespace": "shop"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
     "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "dev"}]},
]
DANA_ONLY = {"name": "tiny", "cluster": {"name": "tiny-1"}, "users": {"dana": {"groups": ["dev"]}}}
_KINDS = {"nodes": "Node", "pods": "Pod", "events": "Event", "replicasets": "ReplicaSet", "services": "Service",
          "deployments": "Deployment", "daemonsets": "DaemonSet", "replicationcontrollers": "ReplicationController"}
_VERSIONS = {"replicasets": "apps/v1", "deployments": "apps/v1", "daemonsets": "apps/v1"}


def _typed(resource: str, obj: Obj) -> Obj:
    return {"apiVersion": _VERSIONS.get(resource, "v1"), "kind": _KINDS[resource], **obj}


def write_snapshot(root: Path, meta: Obj) -> Path:
    """The snapshot layout: snapshot.yaml, cluster/*.yaml, logs/<ns>/<pod>/<container>[.previous].log."""
    (root / "cluster").mkdir(parents=True)
    (root / "snapshot.yaml").write_text(yaml.safe_dump(meta))
    (root / "cluster" / "rbac.yaml").write_text(yaml.safe_dump_all(RBAC))
    for ns, resources in cluster().items():
        docs = [_typed(res, obj) for res, objs in resources.items() for obj in objs]
        (root / "cluster" / f"{ns or 'cluster'}.yaml").write_text(yaml.safe_dump_all(docs))
    for ns, pod, container, lines in (("shop", CART_POD, "cart", CART_LOG),
                                      ("other", "ledger-sync-5f8d7c9b6-q7w2p", "ledger-sync", LEDGER_LOG)):
        (root / "logs" / ns / pod).mkdir(parents=True)
        (root / "logs" / ns / pod / f"{container}.previous.log").write_text("\n".join(lines) + "\n")
    return root


def write_dump(root: Path, meta: Obj | None = None, *, rbac: bool = False) -> Path:
    """`kubectl cluster-info dump --output-directory` (all namespaces): nodes.json on top, per
    namespace one `<Kind>List` JSON per resource (empty ones too) and `<ns>/<pod>/logs.txt`."""
    root.mkdir(parents=True)
    for ns, resources in cluster().items():
        folder = root / ns if ns else root
        folder.mkdir(exist_ok=True)
        names = list(resources) if not ns else list(_KINDS.keys() - {"nodes"})
        for res in names:
            doc = {"kind": f"{_KINDS[res]}List", "apiVersion": _VERSIONS.get(res, "v1"),
                   "metadata": {"resourceVersion": "48213"}, "items": resources.get(res, [])}
            (folder / f"{res}.json").write_text(json.dumps(doc, indent=4))
    for ns, pod, container, lines in (("shop", CART_POD, "cart", CART_LOG),
                                      ("other", "ledger-sync-5f8d7c9b6-q7w2p", "ledger-sync", LEDGER_LOG)):
        (root / ns / pod).mkdir()
        # cluster-info dump runs `kubectl logs` without --timestamps; the application's own stamps stay
        body = "".join(line.split(" ", 1)[1].join(("", "\n")) for line in lines)
        (root / ns / pod / "logs.txt").write_text(
            f"==== START logs for container {container} of pod {ns}/{pod} ====\n{body}"
            f"==== END logs for container {container} of pod {ns}/{pod} ====\n")
    if rbac:  # not part of a dump: what a user adds beside it to investigate --as someone
        (root / "rbac.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": RBAC}))
    if meta is not None:
        (root / "snapshot.yaml").write_text(yaml.safe_dump(meta))
    return root


def investigate(snapshot: Path, user: str | None, question: str = QUESTION) -> InvestigationResult:
    async def run() -> InvestigationResult:
        with offline_cluster(snapshot) as oc:
            return await investigate_offline(oc, user, question)

    return asyncio.run(run())


def assert_cart_oom(result: InvestigationResult | dict[str, Any]) -> None:
    data = result.public_json() if isinstance(result, InvestigationResult) else result
    assert data["status"] == "diagnosed", data["answer_markdown"]
    rc = data["root_cause"]
    assert rc["family"] == "oom_killed", rc
    assert rc["resource"] == "Deployment/shop/cart", rc
    assert "128Mi" in data["answer_markdown"] and "OOMKilled" in data["answer_markdown"]
    assert not data["unavailable"], data["unavailable"]  # the previous logs too, also from a dump


def assert_nothing_of_other(result: InvestigationResult) -> None:
    dumped = json.dumps(result.model_dump(mode="json"))
    leaked = [name for name in OTHER_NAMES if name.lower() in dumped.lower()]
    assert not leaked, f"leaked {leaked}: {dumped[:2000]}"
    # the namespace itself, as a name (not the English word)
    assert not re.search(r'"other"|\bother/|namespace[ =:`*]*other\b|-n other\b', dumped), dumped[:2000]


# -- loading: `now` and users ---------------------------------------------------------------------
def test_dump_now_is_the_newest_timestamp(tmp_path: Path) -> None:
    snap = load_snapshot(write_dump(tmp_path / "dump"))
    assert snap.now == NEWEST  # the cart BackOff event's lastTimestamp, not the wall clock
    assert snap.store.get(("", "pods"), "shop", CART_POD)["kind"] == "Pod"
    assert snap.store.get(("apps", "deployments"), "other", "ledger-sync") is not None
    assert snap.store.get(("", "nodes"), "", "worker-1") is not None
    assert "catalogue cache at 120Mi" in snap.logs.text("shop", CART_POD, "cart", False)
    assert list(snap.users) == ["admin", "sleuth-reader", "sleuth-authz"]
    assert snap.users["admin"].groups == ("system:masters",)
    assert snap.cluster_name == "dump"


def test_dump_logs_of_a_crash_looping_container_are_its_previous_logs(tmp_path: Path) -> None:
    """The kubelet answers `kubectl logs` for a container without a running instance with its
    `lastState.terminated` logs, so that is what the dump holds: `--previous` shows it too."""
    dump = write_dump(tmp_path / "dump")
    running = {"metadata": {"name": "web-1", "namespace": "shop"}, "spec": {"containers": [{"name": "web"}]},
               "status": {"containerStatuses": [{"name": "web", "state": {"running": {}},
                                                 "lastState": {"terminated": {"exitCode": 1}}}]}}
    (dump / "shop" / "more-pods.json").write_text(json.dumps({"kind": "PodList", "apiVersion": "v1",
                                                             "items": [running]}))
    (dump / "shop" / "web-1").mkdir()
    (dump / "shop" / "web-1" / "logs.txt").write_text(
        "==== START logs for container web of pod shop/web-1 ====\nserving\n"
        "==== END logs for container web of pod shop/web-1 ====\n")
    logs = load_snapshot(dump).logs
    assert logs.text("shop", CART_POD, "cart", True) == logs.text("shop", CART_POD, "cart", False)
    assert "catalogue cache at 120Mi" in logs.text("shop", CART_POD, "cart", True)
    assert logs.text("shop", "web-1", "web", False) == "serving\n"
    assert logs.text("shop", "web-1", "web", True) is None  # running: the dump has its current logs only


@pytest.mark.parametrize("field", ["lastTimestamp", "eventTime", "firstTimestamp"])
def test_now_from_event_times(tmp_path: Path, field: str) -> None:
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "n"},
          "involvedObject": {"kind": "Pod", "name": "p", "namespace": "n"}, field: "2025-06-01T12:00:00.123456Z"}
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "events.json").write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [ev]}))
    assert load_snapshot(tmp_path).now == datetime(2025, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_now_from_container_states_conditions_and_creation(tmp_path: Path) -> None:
    def pod(name: str, **status: Any) -> Obj:
        return {"metadata": {"name": name, "namespace": "n", "creationTimestamp": "2025-01-01T00:00:00Z"},
                "status": status}

    cases = {
        "running": pod("a", containerStatuses=[{"name": "c", "state": {"running": {"startedAt": "2025-01-02T00:00:00Z"}}}]),
        "last state": pod("b", initContainerStatuses=[{"name": "c", "lastState": {"terminated": {
            "startedAt": "2025-01-02T00:00:00Z", "finishedAt": "2025-01-03T00:00:00Z"}}}]),
        "condition": pod("c", conditions=[{"type": "Ready", "lastTransitionTime": "2025-01-04T00:00:00Z"}]),
    }
    want = {"running": 2, "last state": 3, "condition": 4}
    for label, obj in cases.items():
        root = tmp_path / label.replace(" ", "-")
        (root / "n").mkdir(parents=True)
        (root / "n" / "pods.json").write_text(json.dumps({"kind": "PodList", "apiVersion": "v1", "items": [obj]}))
        assert load_snapshot(root).now == datetime(2025, 1, want[label], tzinfo=UTC), label
    # only creationTimestamp; a deletionTimestamp (it may lie in the future) does not count
    root = tmp_path / "created"
    (root / "n").mkdir(parents=True)
    obj = pod("d")
    obj["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    (root / "n" / "pods.json").write_text(json.dumps({"kind": "PodList", "apiVersion": "v1", "items": [obj]}))
    assert load_snapshot(root).now == datetime(2025, 1, 1, tzinfo=UTC)


def test_now_from_log_lines(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "dump")
    with (dump / "shop" / CART_POD / "logs.txt").open("w") as fh:
        fh.write(f"==== START logs for container cart of pod shop/{CART_POD} ====\n"
                 "2025-03-10T11:00:00.5Z the last line the container wrote\n"
                 f"==== END logs for container cart of pod shop/{CART_POD} ====\n")
    assert load_snapshot(dump).now == datetime(2025, 3, 10, 11, 0, 0, 500000, tzinfo=UTC)
    # the snapshot layout's log files count too (read from their end)
    snap_dir = write_snapshot(tmp_path / "snap", {"users": {"dana": {"groups": ["dev"]}}})
    log = snap_dir / "logs" / "shop" / CART_POD / "cart.previous.log"
    log.write_text("x" * 200_000 + "\n2025-03-10T12:30:00Z late\nno stamp on the very last line\n")
    assert load_snapshot(snap_dir).now == datetime(2025, 3, 10, 12, 30, tzinfo=UTC)


def test_now_in_snapshot_yaml_wins_and_wall_clock_is_the_last_resort(tmp_path: Path) -> None:
    snap = load_snapshot(write_dump(tmp_path / "dump", {"now": "2025-04-01T00:00:00Z"}))
    assert snap.now == datetime(2025, 4, 1, tzinfo=UTC)
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    before = datetime.now(UTC)
    assert before <= load_snapshot(tmp_path / "bare").now <= datetime.now(UTC)


def test_tenant_only_users(tmp_path: Path) -> None:
    snap = load_snapshot(write_dump(tmp_path / "dump", DANA_ONLY, rbac=True))
    assert list(snap.users) == ["dana", "sleuth-reader", "sleuth-authz"]  # no admin when users are named
    assert snap.users["dana"].groups == ("dev",)
    assert snap.now == NEWEST  # snapshot.yaml without `now`
    assert (snap.name, snap.cluster_name) == ("tiny", "tiny-1")
    assert snap.store.get(("rbac.authorization.k8s.io", "rolebindings"), "shop", "dev-view") is not None
    assert snap.store.get(("rbac.authorization.k8s.io", "clusterroles"), "", "sleuth-impersonator") is not None


# -- offline investigations -----------------------------------------------------------------------
@pytest.mark.connected
@pytest.mark.timeout(60)
def test_tenant_only_snapshot_as_dana(tmp_path: Path) -> None:
    """(a) snapshot.yaml names only dana: Sleuth's identities are added, her scope is `shop`."""
    snap = write_snapshot(tmp_path / "snap", {**DANA_ONLY, "now": "2025-03-10T10:15:00Z"})
    result = investigate(snap, "dana")
    assert_cart_oom(result)
    assert_nothing_of_other(result)


@pytest.mark.connected
@pytest.mark.timeout(60)
def test_cluster_info_dump_without_snapshot_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """(b) a bare cluster-info dump, `sleuth investigate` without --as: the whole cluster."""
    dump = write_dump(tmp_path / "dump")
    assert main(["investigate", "--snapshot", str(dump), "--question", QUESTION]) == 0
    assert_cart_oom(json.loads(capsys.readouterr().out))


@pytest.mark.connected
@pytest.mark.timeout(60)
def test_cluster_info_dump_with_tenant_snapshot_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """(c) a dump with RBAC objects and a snapshot.yaml naming only dana: --as dana is scoped to
    `shop`; without --as the whole cluster is still read (there is no admin user to name)."""
    dump = write_dump(tmp_path / "dump", DANA_ONLY, rbac=True)
    result = investigate(dump, "dana")
    assert_cart_oom(result)
    assert_nothing_of_other(result)
    assert main(["investigate", "--snapshot", str(dump), "--question", QUESTION]) == 0
    assert_cart_oom(json.loads(capsys.readouterr().out))
    # an unknown --as names the snapshot's users
    assert main(["investigate", "--snapshot", str(dump), "--question", QUESTION, "--as", "admin"]) == 2
    assert "dana" in capsys.readouterr().err


def test_the_embedded_stack_reads_a_dump_without_snapshot_yaml(tmp_path: Path) -> None:
    """`sleuth up --snapshot DUMP`: the stack names the cluster after the folder and offers the one
    user simcluster defines for a dump (a cluster admin)."""
    from sleuth.embedded.stack import _read_snapshot_meta

    dump = write_dump(tmp_path / "prod-eu")
    meta = _read_snapshot_meta(dump)
    assert meta["name"] == "prod-eu" and meta["users"] == {"admin": {"groups": ["system:masters"]}}
    assert set(load_snapshot(dump).users) >= set(meta["users"])
