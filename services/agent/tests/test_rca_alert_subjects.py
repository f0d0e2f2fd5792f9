"""Alert labels that only say where a metric was scraped (node, instance, job, endpoint,
prometheus, a kubelet/kube-state-metrics ``service``) are not the alert's subject; object labels
are. A PersistentVolumeClaim (from an alert label or a question) stands for the pods that mount
it and their workload. A name that cannot be pinned down in a namespace the caller can read is
insufficient evidence; without a readable namespace named, a tenant still gets an access answer."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._cluster import analyse_cluster
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._plan import alert_target, parse_question, terms_for_alerts
from sleuth_agent.rca._report import build_result
from sleuth_agent.settings import AgentSettings
from sleuth_common.messages import AlertRef
from sleuth_common.scope import Scope

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
rca_fakes = importlib.util.module_from_spec(_spec)
sys.modules["agent_rca_fakes"] = rca_fakes
_spec.loader.exec_module(rca_fakes)

NS = "stock"
SCRAPE = {"job": "kubelet", "service": "monitoring-stack-kubelet", "endpoint": "https-metrics",
          "node": "wk-pool-a-3", "instance": "10.1.2.3:10250", "prometheus": "monitoring/main"}


def test_scrape_labels_are_not_subjects_when_an_object_label_is_there() -> None:
    t = alert_target([AlertRef(labels={"alertname": "VolumeFull", "namespace": NS,
                                       "persistentvolumeclaim": "state-vault-store-0", **SCRAPE})])
    assert t.objects == ("state-vault-store-0",) and t.nodes == () and t.namespaces == (NS,)
    ksm = alert_target([AlertRef(labels={"alertname": "PodDown", "namespace": NS, "pod": "web-1",
                                         "service": "kube-state-metrics", "job": "kube-state-metrics"})])
    assert ksm.objects == ("web-1",)
    # An application's own Service is a subject; alone, a node label is the subject of a node alert.
    app = alert_target([AlertRef(labels={"alertname": "Errors", "namespace": NS, "service": "quotes-api", "job": "quotes"})])
    assert app.objects == ("quotes-api",)
    assert alert_target([AlertRef(labels={"alertname": "NodeDown", "node": "wk-pool-a-3", "job": "kube-state-metrics"})]).nodes == (
        "wk-pool-a-3",
    )
    # Object labels come most specific first.
    both = alert_target([AlertRef(labels={"namespace": NS, "statefulset": "vault-store", "pod": "vault-store-0"})])
    assert both.objects == ("vault-store-0", "vault-store")


def _pod(name: str, owner_kind: str, owner: str, crashing: bool, claim: str = "") -> dict:
    state = {"waiting": {"reason": "CrashLoopBackOff"}} if crashing else {"running": {}}
    pod = {"namespace": NS, "name": name, "phase": "Running", "owner": {"kind": owner_kind, "name": owner},
           "containers": [{"name": "main", "image": "r/x:1", "ready": not crashing, "restart_count": 5 if crashing else 0,
                           "state": state, "last_termination": {"reason": "Error", "exit_code": 1} if crashing else None}]}
    if claim:
        pod["volumes"] = [{"name": "data", "type": "pvc", "source": claim}]
    return pod


FULL = "2031-01-01T00:00:00Z FATAL: could not write to file \"base/1/2\": No space left on device"
TOOLS = {
    ("list_pods", NS): {"pods": [_pod("vault-store-0", "StatefulSet", "vault-store", True),
                                 _pod("media-6b7c8d9f5-aaaaa", "ReplicaSet", "media-6b7c8d9f5", True),
                                 _pod("web-6b7c8d9f5-bbbbb", "ReplicaSet", "web-6b7c8d9f5", True)]},
    ("list_workloads", NS): {"workloads": []},
    ("list_events", NS): {"events": []},
    ("list_services", NS): {"services": []},
    ("list_pvcs", NS): {"pvcs": [{"namespace": NS, "name": "state-vault-store-0", "phase": "Bound"},
                                 {"namespace": NS, "name": "uploads", "phase": "Bound", "capacity": "5Gi"}]},
    ("get_pod", "vault-store-0"): _pod("vault-store-0", "StatefulSet", "vault-store", True, "state-vault-store-0"),
    ("get_pod", "media-6b7c8d9f5-aaaaa"): _pod("media-6b7c8d9f5-aaaaa", "ReplicaSet", "media-6b7c8d9f5", True, "uploads"),
    ("get_pod", "web-6b7c8d9f5-bbbbb"): _pod("web-6b7c8d9f5-bbbbb", "ReplicaSet", "web-6b7c8d9f5", True),
    ("pod_logs", "vault-store-0"): {"log": FULL},
    ("pod_logs", "media-6b7c8d9f5-aaaaa"): {"log": "2031-01-01T00:00:00Z OSError: [Errno 28] No space left on device"},
    ("pod_logs", "web-6b7c8d9f5-bbbbb"): {"log": "2031-01-01T00:00:00Z Error: boom"},
}


async def _run(terms, alert=None):
    log = EvidenceLog()
    out = await analyse_cluster(rca_fakes.FakeTools(TOOLS), Scope.of(namespaces=[NS]), "c1", terms, AgentSettings(), log, alert=alert)
    return build_result([out], log, scope_text=NS)


async def test_a_claim_alert_is_about_the_workload_whose_pod_mounts_it() -> None:
    t = alert_target([AlertRef(labels={"alertname": "VolumeFull", "namespace": NS,
                                       "persistentvolumeclaim": "state-vault-store-0", **SCRAPE},
                               annotations={"description": "the volume is 99% full"})])
    r = await _run(terms_for_alerts(t), t)
    assert r.status == "diagnosed", r.answer_markdown
    assert r.root_cause.family == "disk_full" and r.root_cause.resource == "StatefulSet/stock/vault-store"
    assert "wk-pool-a-3" not in r.answer_markdown and "cluster-wide" not in r.answer_markdown


async def test_a_question_naming_a_claim_resolves_through_the_pods_mounting_it() -> None:
    r = await _run(parse_question("the uploads volume in stock is full, what now?"))
    assert r.status == "diagnosed", r.answer_markdown
    assert r.root_cause.resource == "Deployment/stock/media"
    assert {c.resource for c in r.candidates} <= {"Deployment/stock/media"}  # only the claim's workload was examined


async def test_unknown_name_in_a_readable_namespace_is_insufficient_evidence_not_denied() -> None:
    r = await _run(parse_question("why is ghost-api failing in namespace stock?"))
    assert r.status == "insufficient_evidence"
    assert "ghost-api" in r.answer_markdown and "stock" in r.answer_markdown
    # No namespace named: it may live where the caller cannot look, which is an access answer.
    r = await _run(parse_question("why is ghost-api failing?"))
    assert r.status == "denied"


def test_the_exporters_own_pod_is_not_the_subject_and_an_hpa_label_is() -> None:
    """kube-state-metrics' HPA metrics carry no pod of their own: the ``pod``/``container`` labels
    are the exporter's (the scrape target), the ``horizontalpodautoscaler`` label is the subject."""
    t = alert_target([AlertRef(labels={
        "alertname": "KubeHpaReplicasMismatch", "namespace": NS, "horizontalpodautoscaler": "web-bff",
        "job": "kube-state-metrics", "service": "kube-prometheus-stack-kube-state-metrics",
        "pod": "kube-prometheus-stack-kube-state-metrics-5c8f9d7b6-p4m2z", "container": "kube-state-metrics",
    })])
    assert t.objects == ("web-bff",) and t.containers == ()
    # a pod label that is not the exporter's stays the subject
    own = alert_target([AlertRef(labels={"alertname": "KubePodCrashLooping", "namespace": NS, "pod": "web-1",
                                         "container": "web", "job": "kube-state-metrics"})])
    assert own.objects == ("web-1",) and own.containers == ("web",)


def test_a_node_alert_scraped_by_kube_state_metrics_is_about_the_node_not_its_namespace() -> None:
    t = alert_target([AlertRef(labels={
        "alertname": "KubeNodePressure", "condition": "DiskPressure", "node": "aks-userpool-1", "namespace": "monitoring",
        "job": "kube-state-metrics", "pod": "kube-prometheus-stack-kube-state-metrics-7c9b8d6f5d-mq2lp",
        "service": "kube-prometheus-stack-kube-state-metrics",
    })])
    assert (t.nodes, t.namespaces, t.objects) == (("aks-userpool-1",), (), ())
    # the namespace of an alert about an object stays
    pvc = alert_target([AlertRef(labels={"alertname": "VolumeFull", "namespace": NS, "persistentvolumeclaim": "data-0", "node": "n1",
                                         "job": "kubelet", "service": "kubelet"})])
    assert pvc.namespaces == (NS,)
