"""Planning from alerts and follow-up helpers: alert labels name the target (Prometheus' ``job``
label is a scrape job, not a Job); selectors and Services without endpoints are judged in code."""

from __future__ import annotations

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._plan import alert_target, terms_for_alerts
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca.followups import label_selects, parse_selector, service_findings
from sleuth_common.messages import AlertRef


def test_alert_labels_name_the_target() -> None:
    a = AlertRef(
        labels={"alertname": "KubeJobFailed", "namespace": "batch", "job_name": "nightly", "job": "kube-state-metrics",
                "cluster": "prod-1", "severity": "warning"},
        annotations={"description": "Job batch/nightly failed to complete."},
    )
    t = alert_target([a])
    assert t.namespaces == ("batch",) and t.objects == ("nightly",) and t.clusters == ("prod-1",)
    assert t.facts == ("KubeJobFailed: Job batch/nightly failed to complete.",)
    terms = terms_for_alerts(t)
    assert terms.names == ("nightly",) and terms.namespace_claims == ("batch",)
    assert "kube-state-metrics" not in terms.text and "warning" not in terms.text


def test_node_alert() -> None:
    t = alert_target([AlertRef(labels={"alertname": "KubeNodeNotReady", "node": "worker-2"})])
    assert t.nodes == ("worker-2",) and not t.namespaces


def test_selectors() -> None:
    assert label_selects(parse_selector("app=backend"), {"app": "backend", "tier": "x"})
    assert not label_selects(parse_selector("app=backend,version=v2"), {"app": "backend", "version": "v1"})
    assert label_selects(parse_selector("*"), {"anything": "x"})
    assert not label_selects(parse_selector(""), {"app": "backend"}) and not label_selects(None, {})
    # set-based selectors: the old parser skipped them and so selected every pod
    assert not label_selects(parse_selector("app in (web,api),tier notin (db)"), {"app": "batch"})
    assert label_selects(parse_selector("app in (web,api),tier notin (db)"), {"app": "api", "tier": "edge"})


def test_service_without_matching_pods_is_a_finding_with_the_closest_labels() -> None:
    got = Collected()
    pod = PodView.parse({"namespace": "ns", "name": "backend-abc", "phase": "Running",
                         "labels": {"app": "backend", "version": "v1"}, "owner": {"kind": "ReplicaSet", "name": "backend-5d8f9c7b6a"},
                         "containers": [{"name": "b", "ready": True, "state": {"running": {}}}]})
    got.pods["ns"] = [pod]
    got.services["ns"] = [{"namespace": "ns", "name": "backend", "selector": "app=backend,version=v2",
                           "endpoints": {"ready": [], "not_ready": []}}]
    found = service_findings(got, ["ns"], {("ns", "backend")}, EvidenceLog())
    assert len(found) == 1 and found[0].resource == "Service/ns/backend"
    text = found[0].derived["service"][0]
    assert "version=v2" in text and "no ready endpoints" in text and "version=v1" in text
    got.services["ns"][0]["selector"] = "app=backend"
    assert service_findings(got, ["ns"], {("ns", "backend")}, EvidenceLog()) == []
