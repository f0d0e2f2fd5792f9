"""The investigator's engine: the causal graph, the family registry (where the fix belongs), the
network taxonomy, the rollout diff, the blast radius and the degraded report on a deadline.
Tests assert typed results (references, kinds, facts), not English."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sleuth_agent.rca import investigate, load_catalog
from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView, WorkloadView
from sleuth_agent.rca.engine import FAMILIES, Ref, Rel, validate
from sleuth_agent.rca.engine.blast import blast_radius
from sleuth_agent.rca.engine.build import build_graph
from sleuth_agent.rca.engine.locate import locate
from sleuth_agent.rca.engine.network import NetKind, classify, resolve
from sleuth_agent.rca.engine.registry import family
from sleuth_agent.rca.followups.changes import explains, template_diff
from sleuth_agent.settings import Settings
from sleuth_common.config import ClusterSettings
from sleuth_common.mcp import ToolResult
from sleuth_common.messages import ClusterScope, InvestigationJob, Requester, ScopeReply

_spec = importlib.util.spec_from_file_location("agent_snapshot_tools_engine", Path(__file__).parent / "snapshot_tools.py")
assert _spec and _spec.loader
snapshot_tools = importlib.util.module_from_spec(_spec)
sys.modules["agent_snapshot_tools_engine"] = snapshot_tools
_spec.loader.exec_module(snapshot_tools)


def _pod(name: str, owner: str, labels: dict[str, str], *, ready: bool = True, node: str = "n1", volumes: list[dict[str, Any]] | None = None, ip: str = "") -> PodView:
    return PodView.parse({
        "metadata": {"name": name, "namespace": "shop", "labels": labels, "ownerReferences": [{"kind": "ReplicaSet", "name": owner, "controller": True}]},
        "spec": {"nodeName": node, "containers": [{"name": "app"}], "volumes": volumes or []},
        "status": {"phase": "Running", "podIP": ip, "containerStatuses": [{"name": "app", "ready": ready, "state": {"running": {}}}]},
    })


def _collected() -> Collected:
    got = Collected()
    got.pods["shop"] = [
        _pod("api-7d9-a", "api-7d9", {"app": "api", "tier": "web"}, ready=False, volumes=[{"name": "s", "secret": {"secretName": "api-keys"}}], ip="10.1.0.5"),
        _pod("worker-5c6-b", "worker-5c6", {"app": "worker", "tier": "batch"}, volumes=[{"name": "s", "secret": {"secretName": "api-keys"}}]),
        _pod("db-0", "db-rs", {"app": "db"}, node="n2"),
    ]
    got.workloads["shop"] = [
        WorkloadView.parse({"kind": "ReplicaSet", "name": "api-7d9", "owner": {"kind": "Deployment", "name": "api"}}),
        WorkloadView.parse({"kind": "ReplicaSet", "name": "worker-5c6", "owner": {"kind": "Deployment", "name": "worker"}}),
        WorkloadView.parse({"kind": "Deployment", "name": "api"}),
        WorkloadView.parse({"kind": "Job", "name": "backup-290", "owner": {"kind": "CronJob", "name": "backup"}}),
    ]
    got.services["shop"] = [{"name": "api", "cluster_ip": "10.96.4.4", "selector": {"app": "api"}, "endpoints": {"ready": []}, "ports": [{"port": 80}]}]
    netpols = ToolResult(tool="list_resources", status="ok", args={"kind": "networkpolicies", "namespace": "shop"},
                         data={"items": [{"name": "web-and-batch", "pod_selector": "tier in (web,batch)", "policy_types": ["Egress"], "egress": []},
                                         {"name": "not-db", "pod_selector": "app notin (db)", "policy_types": ["Ingress"]}]})
    got.results[("list_resources", "shop")] = netpols
    return got


def test_graph_owner_chains_and_set_based_selectors() -> None:
    g = build_graph(_collected())
    pod = Ref.of("Pod", "shop", "api-7d9-a")
    assert g.owner_chain(pod) == [pod, Ref.of("ReplicaSet", "shop", "api-7d9"), Ref.of("Deployment", "shop", "api")]
    assert g.top_owner(Ref.of("Job", "shop", "backup-290")) == Ref.of("CronJob", "shop", "backup")
    # `in` and `notin` are selectors too: the old parser skipped them and matched every pod.
    assert [p.name for p in g.out(Ref.of("NetworkPolicy", "shop", "web-and-batch"), Rel.SELECTS)] == ["api-7d9-a", "worker-5c6-b"]
    assert [p.name for p in g.out(Ref.of("NetworkPolicy", "shop", "not-db"), Rel.SELECTS)] == ["api-7d9-a", "worker-5c6-b"]
    assert g.out(Ref.of("Service", "shop", "api"), Rel.SELECTS) == [pod]
    assert Ref.of("Secret", "shop", "api-keys") in g.out(pod, Rel.MOUNTS)
    assert g.out(pod, Rel.RUNS_ON) == [Ref.of("Node", "", "n1")]
    assert str(Ref.of("Node", "shop", "n1")) == "Node/n1"


@dataclass(frozen=True)
class Where:
    family: str
    subject: tuple[str, str]
    variables: dict[str, str]
    root: str


WHERE = [
    Where("missing_config", ("Deployment", "api"), {"missing_kind": "secret", "missing_name": "api-keys"}, "Secret/shop/api-keys"),
    Where("missing_config", ("Deployment", "api"), {"missing": "couldn't find key DB_URL in ConfigMap shop/api-env"}, "ConfigMap/shop/api-env"),
    Where("missing_config", ("Deployment", "api"), {"env_name": "DB_URL"}, "Deployment/shop/api"),
    Where("quota_exceeded", ("Deployment", "api"), {"quota_message": "exceeded quota: compute, requested: limits.memory=2Gi"}, "ResourceQuota/shop/compute"),
    Where("quota_exceeded", ("Deployment", "api"), {"limit_message": "forbidden", "lr_name": "per-container"}, "LimitRange/shop/per-container"),
    Where("job_failed", ("Job", "backup-290"), {}, "CronJob/shop/backup"),
    Where("network_policy_blocked", ("Deployment", "api"), {"netpol_name": "web-and-batch", "netpol_direction": "egress"}, "NetworkPolicy/shop/web-and-batch"),
    Where("oom_killed", ("Deployment", "api"), {"limit_source": "LimitRange", "limit_range": "defaults"}, "LimitRange/shop/defaults"),
    Where("oom_killed", ("Deployment", "api"), {}, "Deployment/shop/api"),
    Where("pvc_pending", ("StatefulSet", "db"), {"pvc": "data-db-0"}, "PersistentVolumeClaim/shop/data-db-0"),
    Where("node_not_ready", ("StatefulSet", "db"), {"node": "n2"}, "StatefulSet/shop/db"),  # the node was not read
    # The callee Service's only pods are down: the chain goes on to their workload.
    Where("dependency_unreachable", ("Deployment", "worker"), {"target_ref": "Service/shop/api"}, "Deployment/shop/api"),
    Where("image_pull", ("Deployment", "api"), {}, "Deployment/shop/api"),
    Where("rbac_denied", ("Deployment", "api"), {"service_account": "api-sa", "verb": "get", "api_resource": "leases"}, "ServiceAccount/shop/api-sa"),
    Where("rbac_denied", ("Deployment", "api"), {}, "Deployment/shop/api"),
    Where("dns_failure", ("Deployment", "api"), {"config_source": "ConfigMap/shop/api-env", "config_key": "DB_HOST", "dns_host": "db"}, "ConfigMap/shop/api-env"),
]


@pytest.mark.parametrize("case", WHERE, ids=lambda c: f"{c.family}->{c.root}")
def test_each_family_locates_where_the_fix_belongs(case: Where) -> None:
    g = build_graph(_collected())
    obs = WorkloadObservation("shop", *case.subject)
    located = locate(case.family, obs, case.variables, g)
    assert str(located.root) == case.root
    assert str(located.affected) == f"{case.subject[0]}/shop/{case.subject[1]}"
    assert (located.chain != "") == (case.root != str(located.affected))


def test_the_registry_covers_the_catalog_and_refuses_unknown_families() -> None:
    validate({s.family for s in load_catalog()})
    with pytest.raises(ValueError, match="not a root-cause family"):
        family("tls_expired")
    with pytest.raises(ValueError, match="registered twice"):
        family("oom_killed")(type("Again", (), {}))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown families"):
        validate({"oom_killed", "made_up"})
    assert "healthy" in FAMILIES and "insufficient_evidence" in FAMILIES


@dataclass(frozen=True)
class Net:
    line: str
    kind: NetKind | None
    host: str = ""
    port: str = ""


NETWORK = [
    Net("dial tcp: lookup orders-db.shop.svc.cluster.local on 10.96.0.10:53: no such host", NetKind.DNS, "orders-db.shop.svc.cluster.local"),
    Net("getaddrinfo ENOTFOUND rabbitmq.messaging.svc.cluster.local", NetKind.DNS, "rabbitmq.messaging.svc.cluster.local"),
    Net("read udp 10.1.0.5:41234->10.96.0.10:53: read: connection refused", NetKind.DNS, "10.96.0.10", "53"),
    Net("dial tcp 10.96.4.4:80: connect: connection refused", NetKind.REFUSED, "10.96.4.4", "80"),
    Net("psycopg2.OperationalError: connection to server at \"pg.shop\" (10.96.7.7), port 5432 failed: Connection timed out", NetKind.TIMEOUT),
    # the URL names what the client meant to reach (a Service name), the dial line what it resolved to
    Net("Get \"https://api:443/health\": dial tcp 10.1.0.5:443: i/o timeout", NetKind.TIMEOUT, "api", "443"),
    Net("Post \"https://pdf.docs.svc.cluster.local/render\": x509: certificate has expired: current time 2027-08-02T00:00:20Z is after 2027-08-01T23:59:59Z", NetKind.TLS, "pdf.docs.svc.cluster.local", "443"),
    Net("http: TLS handshake error from 10.244.1.37:51234: remote error: tls: bad certificate", None),  # a server's inbound report
    Net("x509: certificate has expired or is not yet valid: current time 2027-01-02T00:00:00Z is after 2026-12-31T23:59:59Z", NetKind.TLS),
    Net("upstream api:8080 returned 503", NetKind.HTTP_5XX, "api", "8080"),
    Net("read tcp 10.1.0.5:5555->10.96.4.4:80: read: connection reset by peer", NetKind.RESET, "10.96.4.4", "80"),
    Net("dial tcp 10.40.18.22:6379: connect: no route to host", NetKind.UNREACHABLE, "10.40.18.22", "6379"),
    Net("GET /health 200 12ms", None),
]


@pytest.mark.parametrize("case", NETWORK, ids=lambda c: c.line[:40])
def test_network_failures_are_told_apart(case: Net) -> None:
    got = classify(case.line)
    assert (got.kind if got else None) == case.kind
    if got and case.host:
        assert (got.host, got.port) == (case.host, case.port)


def test_targets_resolve_to_objects_in_scope_only() -> None:
    services = {"shop": [{"name": "api", "cluster_ip": "10.96.4.4"}], "pay": [{"name": "ledger", "cluster_ip": "10.96.9.9"}]}
    ips = {"10.1.0.5": ("shop", "api-7d9-a")}
    for host, want in (
        ("10.96.4.4", ("Service", "shop", "api")),
        ("api", ("Service", "shop", "api")),
        ("ledger.pay", ("Service", "pay", "ledger")),
        ("ledger.pay.svc.cluster.local", ("Service", "pay", "ledger")),
        ("ledger", None),  # a bare name resolves in the caller's own namespace only
        ("10.1.0.5", ("Pod", "shop", "api-7d9-a")),
        ("10.200.0.1", None),  # not an object the asker can read
    ):
        assert resolve(classify(f"dial tcp {host}:80: connect: connection refused") or _never(), "shop", services, ips) == want, host


def _never() -> Any:
    raise AssertionError("not classified")


def test_rollout_diff_names_the_changed_fields_and_which_explain_the_family() -> None:
    before = {"metadata": {"labels": {"app": "api", "pod-template-hash": "a"}}, "spec": {"containers": [
        {"name": "api", "image": "api:1.4", "resources": {"limits": {"memory": "512Mi"}}, "env": [{"name": "MODE", "value": "a"}]}]}}
    after = {"metadata": {"labels": {"app": "api", "pod-template-hash": "b"}}, "spec": {"containers": [
        {"name": "api", "image": "api:1.4", "resources": {"limits": {"memory": "256Mi"}}, "env": [{"name": "MODE", "value": "a"}, {"name": "DEBUG", "value": "1"}]}]}}
    changes = template_diff(before, after)
    assert [(c.field, c.path, c.before, c.after) for c in changes] == [
        ("env", "container api env[DEBUG].value", "", "1"),
        ("resources", "container api resources.limits.memory", "512Mi", "256Mi"),
    ]
    assert [c.field for c in changes if explains("oom_killed", c)] == ["env", "resources"]
    assert [c.field for c in changes if explains("image_pull", c)] == []
    assert template_diff(before, before) == []


def test_blast_radius_names_other_users_of_the_root_cause_object() -> None:
    g = build_graph(_collected())
    api = Ref.of("Deployment", "shop", "api")
    b = blast_radius(g, Ref.of("Secret", "shop", "api-keys"), api)
    assert b is not None and [str(w) for w in b.workloads] == ["Deployment/shop/worker"]
    assert blast_radius(g, api, api) is None


def test_blast_radius_follows_owner_chains_to_the_workload() -> None:
    got = _collected()
    got.workloads["shop"].append(WorkloadView.parse({"kind": "Deployment", "name": "worker"}))
    g = build_graph(got)
    b = blast_radius(g, Ref.of("NetworkPolicy", "shop", "web-and-batch"), Ref.of("Deployment", "shop", "api"))
    assert b is not None and [str(w) for w in b.workloads] == ["Deployment/shop/worker"]


class _Slow:
    """Answers from the snapshot, but the calls after the first ``fast`` hang (a dead backend)."""

    def __init__(self, inner: Any, fast: int) -> None:
        self.inner, self.fast, self.n = inner, fast, 0

    def has_tool(self, name: str) -> bool:
        return bool(self.inner.has_tool(name))

    async def call(self, tool: str, args: Any = None, *, timeout: float | None = None) -> ToolResult:  # noqa: ASYNC109
        self.n += 1
        if self.n > self.fast:
            await asyncio.sleep(30)
        return await self.inner.call(tool, args, timeout=timeout)


async def test_a_deadline_gives_a_degraded_report_with_the_evidence_gathered(demo_snapshot: Path) -> None:
    @contextlib.asynccontextmanager
    async def make(cluster: ClusterSettings, scope: Any) -> AsyncIterator[_Slow]:
        yield _Slow(snapshot_tools.SnapshotTools(demo_snapshot, scope), fast=4)

    settings = Settings(clusters=[ClusterSettings(name="demo")], agent={"default_deadline": 1.5})
    job = InvestigationJob(requester=Requester(user="alice"), question="what is failing in team-a?")
    scope = ScopeReply(user="alice", clusters={"demo": ClusterScope(namespaces=("team-a",))})
    result = await investigate(job, scope, settings, tools_factory=make)
    assert result.status == "insufficient_evidence"
    assert result.tool_calls >= 4 and result.evidence, "the evidence read before the deadline is kept"
    assert all(e.command.startswith("kubectl ") for e in result.evidence)
    assert "ran out of time" in result.answer_markdown
    # what was read is summarised, not just listed: the pods that are not ready are named
    assert any("not running and ready" in e.summary for e in result.evidence), [e.summary for e in result.evidence]


def test_an_object_created_just_before_the_onset_is_named_with_the_gap() -> None:
    from sleuth_agent.rca._records import EventView
    from sleuth_agent.rca.engine.onset import before_onset, onset

    ev = EventView.parse({"type": "Warning", "reason": "Unhealthy", "message": "x", "firstTimestamp": "2027-03-01T09:00:00Z",
                          "lastTimestamp": "2027-03-01T09:30:00Z", "involved_object": {"kind": "Pod", "name": "api-1"}})
    obs = WorkloadObservation("shop", "Deployment", "api", events=[ev])
    assert onset(obs) is not None and onset(obs).isoformat() == "2027-03-01T09:00:00+00:00"  # type: ignore[union-attr]
    assert before_onset("2027-03-01T08:55:00Z", obs) == "created 08:55 UTC, 5 min before the first failure"
    assert before_onset("2027-02-20T08:55:00Z", obs) == ""  # weeks before: not a suspect
    assert before_onset("2027-03-01T10:00:00Z", obs) == ""  # after the onset
    assert before_onset(None, obs) == "" and before_onset("2027-03-01T08:55:00Z", WorkloadObservation("s", "Deployment", "x")) == ""


def test_high_confidence_needs_two_sources_or_a_dispositive_signal() -> None:
    from sleuth_agent.rca._signatures import match_all
    from sleuth_agent.rca.engine.calibrate import calibrate, sources
    from sleuth_agent.rca.engine.rank import rank_matches

    ready = _pod("api-7d9-a", "api-7d9", {"app": "api"})
    line = "dial tcp: lookup pay-db on 10.96.0.10:53: no such host"
    quiet = WorkloadObservation("shop", "Deployment", "api", pods=[ready], logs={("api-7d9-a", "app", False): line}, quiet=True)
    facts = quiet.facts()
    assert sources(facts) == {"logs"}
    best, _ = rank_matches(calibrate(match_all(facts), facts))
    assert best is not None and (best.signature.family, best.confidence) == ("dns_failure", "medium")
    # the same line from a container that keeps restarting: the kubelet's state is a second source
    crashing = PodView.parse({"metadata": {"name": "api-7d9-b", "namespace": "shop", "ownerReferences": [{"kind": "ReplicaSet", "name": "api-7d9"}]},
                              "status": {"phase": "Running", "containerStatuses": [{"name": "app", "restartCount": 6,
                                         "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 1}}}]}})
    loud = WorkloadObservation("shop", "Deployment", "api", pods=[crashing], logs={("api-7d9-b", "app", True): line})
    facts = loud.facts()
    best, _ = rank_matches(calibrate(match_all(facts), facts))
    assert best is not None and (best.signature.family, best.confidence) == ("dns_failure", "high")
    # one dispositive signal is enough: the kubelet's OOMKilled
    oom = PodView.parse({"metadata": {"name": "api-7d9-c", "namespace": "shop"}, "status": {"phase": "Running", "containerStatuses": [
        {"name": "app", "restartCount": 0, "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}})
    facts = WorkloadObservation("shop", "Deployment", "api", pods=[oom]).facts()
    best, _ = rank_matches(calibrate(match_all(facts), facts))
    assert best is not None and (best.signature.family, best.confidence) == ("oom_killed", "high")


def test_every_template_variable_has_a_producer() -> None:
    """A wording template naming a variable nothing fills would print "?" in an answer."""
    from sleuth_agent.rca.engine.registry import FOLLOWUP_VARIABLES, template_gaps

    catalog = load_catalog()
    templates = {f"{i}:{s.family}": (s.summary, *(a.get("text", "") + " " + a.get("command", "") for a in s.actions)) for i, s in enumerate(catalog)}
    extracted = {f"{i}:{s.family}": set(s.extract) for i, s in enumerate(catalog)}
    assert template_gaps(templates, extracted) == {}
    assert template_gaps({"x": ("{made_up_variable} and {workload}",)}, {}) == {"x": ["made_up_variable"]}
    # and every follow-up variable the list declares is really set by a follow-up (the list cannot rot)
    root = Path(__file__).parents[1] / "src" / "sleuth_agent" / "rca"
    files = [*root.glob("followups/*.py"), *root.glob("engine/*.py"), *root.glob("*.py")]
    source = "\n".join(p.read_text() for p in files if p.name != "registry.py")  # not the list itself
    unset = sorted(v for v in FOLLOWUP_VARIABLES if f'"{v}"' not in source)
    assert unset == []
