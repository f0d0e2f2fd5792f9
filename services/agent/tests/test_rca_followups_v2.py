"""Follow-ups of the investigator v2: where a bad host name comes from (a ConfigMap key), which
Secret a peer serves its refused certificate from, the platform of an image with no matching
manifest, nodes folded into the graph, multi-line controller messages, and an abstention that
says what it saw."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._observe import WorkloadObservation, pull_cause
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca._report import _terminations
from sleuth_agent.rca._signatures import _extract
from sleuth_agent.rca.engine.build import build_graph
from sleuth_agent.rca.engine.graph import Ref
from sleuth_agent.rca.engine.locate import locate
from sleuth_common.mcp import ToolResult

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
rca_fakes = sys.modules.get("agent_rca_fakes") or importlib.util.module_from_spec(_spec)
if "agent_rca_fakes" not in sys.modules:
    sys.modules["agent_rca_fakes"] = rca_fakes
    _spec.loader.exec_module(rca_fakes)

NXDOMAIN = "dial tcp: lookup orders-pg-primary.orders.svc.cluster.local on 10.43.0.10:53: no such host"


def _worker(**spec: object) -> PodView:
    return PodView.parse({
        "metadata": {"name": "worker-7c-a", "namespace": "orders", "labels": {"app": "worker"},
                     "ownerReferences": [{"kind": "ReplicaSet", "name": "worker-7c"}]},
        "spec": {"containers": [{"name": "worker", **spec.get("container", {})}], "volumes": spec.get("volumes", [])},  # type: ignore[dict-item]
        "status": {"phase": "Running", "containerStatuses": [{"name": "worker", "restartCount": 4,
                   "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 1}}}]},
    })


async def test_a_host_set_in_a_configmap_key_puts_the_fix_in_that_configmap() -> None:
    pod = _worker(container={"envFrom": [{"configMapRef": {"name": "worker-config"}}],
                             "env": [{"name": "FLAGS", "valueFrom": {"configMapKeyRef": {"name": "flags", "key": "all"}}}]})
    tools = rca_fakes.FakeTools({
        ("get_resource", "worker-config"): {"kind": "ConfigMap", "data": {"LOG_LEVEL": "info", "DB_HOST": "orders-pg-primary.orders.svc.cluster.local"}},
        ("get_resource", "flags"): {"kind": "ConfigMap", "data": {"all": "x=1"}},
    })
    f, _log = rca_fakes.follow(tools, Collected(pods={"orders": [pod]}))
    obs = WorkloadObservation("orders", "Deployment", "worker", pods=[pod], logs={("worker-7c-a", "worker", True): NXDOMAIN})
    await f.run(obs)
    assert (obs.variables["config_source"], obs.variables["config_key"]) == ("ConfigMap/orders/worker-config", "DB_HOST")
    assert not any(t == "get_resource" and a.get("kind") == "Secret" for t, a in tools.calls), "Secrets are never read"
    located = locate("dns_failure", obs, obs.variables, build_graph(Collected(pods={"orders": [pod]})))
    assert str(located.root) == "ConfigMap/orders/worker-config" and "DB_HOST" in located.chain


async def test_a_host_in_the_workloads_own_env_stays_with_the_workload() -> None:
    pod = _worker(container={"env": [{"name": "DB_HOST", "value": "orders-pg-primary.orders.svc.cluster.local"}]})
    f, _log = rca_fakes.follow(rca_fakes.FakeTools({}), Collected(pods={"orders": [pod]}))
    obs = WorkloadObservation("orders", "Deployment", "worker", pods=[pod], logs={("worker-7c-a", "worker", True): NXDOMAIN})
    await f.run(obs)
    assert "config_source" not in obs.variables
    assert str(locate("dns_failure", obs, obs.variables, build_graph(Collected())).root) == "Deployment/orders/worker"


async def test_a_refused_peer_certificate_names_the_secret_the_peer_serves_it_from() -> None:
    client = _worker()
    peer = PodView.parse({"metadata": {"name": "pdf-0", "namespace": "orders", "labels": {"app": "pdf"}}, "status": {"phase": "Running"}})
    got = Collected(pods={"orders": [client, peer]},
                    services={"orders": [{"name": "pdf", "cluster_ip": "10.96.3.3", "selector": {"app": "pdf"}, "endpoints": {"ready": ["x"]}}]})
    tools = rca_fakes.FakeTools({("get_pod", "pdf-0"): {"name": "pdf-0", "volumes": [
        {"name": "certs", "type": "secret", "source": "pdf-serving-tls"}, {"name": "cfg", "type": "secret", "source": "pdf-api-keys"}]}})
    f, _log = rca_fakes.follow(tools, got)
    line = 'Post "https://pdf.orders.svc.cluster.local:8443/render": x509: certificate has expired or is not yet valid'
    obs = WorkloadObservation("orders", "Deployment", "worker", pods=[client], logs={("worker-7c-a", "worker", True): line})
    await f.run(obs)
    assert (obs.variables["net_kind"], obs.variables["tls_secret"]) == ("tls", "pdf-serving-tls")
    assert str(locate("dependency_unreachable", obs, obs.variables, build_graph(got)).root) == "Secret/orders/pdf-serving-tls"


def test_no_manifest_for_the_platform_is_not_a_missing_image() -> None:
    assert pull_cause('failed to pull and unpack image "ghcr.io/x:1": no match for platform in manifest: not found')[0] == "platform"
    assert pull_cause('failed to resolve reference "ghcr.io/x:1": ghcr.io/x:1: not found')[0] == "not_found"


def test_listed_nodes_are_known_objects_so_an_admin_gets_the_node() -> None:
    pod = PodView.parse({"metadata": {"name": "db-1", "namespace": "ops", "ownerReferences": [{"kind": "StatefulSet", "name": "db"}]},
                         "spec": {"nodeName": "n7"}, "status": {"phase": "Running"}})
    nodes = ToolResult(tool="list_nodes", status="ok", args={}, data={"nodes": [{"name": "n7", "ready": "False"}]})
    obs = WorkloadObservation("ops", "StatefulSet", "db", pods=[pod])
    assert str(locate("node_not_ready", obs, {"node": "n7"}, build_graph(Collected(pods={"ops": [pod]}), [nodes])).root) == "Node/n7"
    assert str(locate("node_not_ready", obs, {"node": "n7"}, build_graph(Collected(pods={"ops": [pod]}))).root) == "StatefulSet/ops/db"
    assert Ref.of("Node", "ops", "n7") == Ref("Node", "", "n7")


def test_a_multi_line_message_is_extracted_on_one_line() -> None:
    facts = WorkloadObservation("inv", "Deployment", "sync").facts()
    facts.event_message.append('admission webhook "v.kyverno.svc" denied the request: \n\nresource Pod/inv/x was blocked\n\nrule-1: no latest')
    got = _extract({"why": {"from": "event_message", "regex": r"denied the request:?\s*([\s\S]{0,200})"}}, facts)
    assert got["why"] == "resource Pod/inv/x was blocked rule-1: no latest"


def test_an_abstention_states_the_terminations_it_saw() -> None:
    pod = PodView.parse({"metadata": {"name": "dir-1", "namespace": "people"}, "spec": {"nodeName": "vmss4"},
                         "status": {"phase": "Running", "containerStatuses": [{"name": "dir", "ready": True, "restartCount": 1, "state": {"running": {}},
                                    "lastState": {"terminated": {"exitCode": 255, "reason": "Unknown", "finishedAt": "2027-05-25T04:12:31Z"}}}]}})
    seen = _terminations([WorkloadObservation("people", "Deployment", "dir", pods=[pod])])
    assert seen == ["container dir of pod dir-1 restarted 1 time(s), last exit code 255 (reason Unknown) at 2027-05-25T04:12:31Z on node vmss4"]


async def test_a_statefulset_update_is_diffed_between_its_controller_revisions() -> None:
    from sleuth_agent.rca.followups.changes import revision_changes

    def rev(n: int, image: str) -> dict:
        return {"kind": "ControllerRevision", "revision": n, "data": {"spec": {"template": {"spec": {"containers": [{"name": "mq", "image": image}]}}}}}

    tools = rca_fakes.FakeTools({("get_resource", "mq-6d9"): rev(4, "rabbitmq:3.13"), ("get_resource", "mq-5c8"): rev(3, "rabbitmq:3.12")})
    listing = ToolResult(tool="list_workloads", status="ok", args={"namespace": "mq"}, data={"workloads": [
        {"kind": "StatefulSet", "name": "mq", "current_revision": "mq-5c8", "update_revision": "mq-6d9"}]})
    change = await revision_changes(lambda t, a: tools.call(t, a), "mq", "mq", listing)
    assert change is not None and change.kind == "ControllerRevision"
    assert (change.current_revision, change.previous_revision) == ("4", "3")
    assert [c.text() for c in change.changes] == ["container mq image: rabbitmq:3.12 → rabbitmq:3.13"]
    done = ToolResult(tool="list_workloads", status="ok", args={}, data={"workloads": [
        {"kind": "StatefulSet", "name": "mq", "current_revision": "mq-6d9", "update_revision": "mq-6d9"}]})
    assert await revision_changes(lambda t, a: tools.call(t, a), "mq", "mq", done) is None


def _netpols(*items: dict) -> dict:
    return {"items": list(items)}


DENY_ALL = {"name": "default-deny-all", "pod_selector": "*", "policy_types": ["Ingress", "Egress"], "egress": []}
DNS_ONLY = {"name": "allow-dns", "pod_selector": "*", "policy_types": ["Egress"], "egress": [{"peers": [], "ports": ["53/UDP", "53/TCP"]}]}
MINE = {"name": "worker-egress", "pod_selector": "app=worker", "policy_types": ["Egress"], "egress": [{"peers": [], "ports": ["5432/TCP", "443/TCP"]}]}
TIMEOUT = "failed to connect: dial tcp 10.96.112.40:6432: i/o timeout"


async def _netpol_verdict(policies: dict, line: str) -> str:
    pod = PodView.parse({"metadata": {"name": "worker-7c-a", "namespace": "orders", "labels": {"app": "worker"}}, "status": {"phase": "Running"}})
    f, _log = rca_fakes.follow(rca_fakes.FakeTools({("list_resources", "orders"): policies}), Collected(pods={"orders": [pod]}))
    obs = WorkloadObservation("orders", "Deployment", "worker", pods=[pod], logs={("worker-7c-a", "worker", False): line})
    await f.run(obs)
    return obs.variables.get("netpol_name", "")


async def test_egress_is_the_union_of_the_policies_and_the_fix_goes_where_it_belongs() -> None:
    # the workload's own allow policy lists other ports: that is the one to extend
    assert await _netpol_verdict(_netpols(DENY_ALL, DNS_ONLY, MINE), TIMEOUT) == "worker-egress"
    # deny-all with a namespace-wide DNS allowance and an unknown port: the deny-all
    assert await _netpol_verdict(_netpols(DENY_ALL, DNS_ONLY), "psycopg2.OperationalError: connection to server at \"pg\" (10.9.9.9), port 6432 failed: timeout") == "default-deny-all"
    # a port one of the policies admits is not blocked by egress policy at all
    assert await _netpol_verdict(_netpols(DENY_ALL, DNS_ONLY, MINE), "dial tcp 10.96.5.5:5432: i/o timeout") == ""


async def test_a_node_under_disk_pressure_is_an_eviction_root_cause_for_an_admin() -> None:
    from sleuth_agent.rca._cluster import ClusterOutcome
    from sleuth_agent.rca._targets import _node_targets
    from sleuth_common.scope import Scope

    node = {"name": "n7", "ready": "True", "conditions": [{"type": "DiskPressure", "status": "True", "message": "kubelet has disk pressure"}]}
    events = {"events": [{"type": "Warning", "reason": "EvictionThresholdMet", "message": "Attempting to reclaim ephemeral-storage",
                          "involved_object": {"kind": "Node", "name": "n7"}}]}
    tools = rca_fakes.FakeTools({("list_nodes", ""): {"nodes": [node]}, ("list_events", "default"): events})
    out = ClusterOutcome("prod")
    await _node_targets(tools, rca_fakes.follow(tools)[1], ["n7"], Scope.of(cluster_wide=True), out, 5.0)
    [finding] = out.findings
    assert (finding.family, finding.confidence, finding.obs.variables["reclaim"]) == ("evicted", "high", "ephemeral-storage")


def test_a_volume_whose_configmap_lacks_the_key_puts_the_fix_in_the_configmap() -> None:
    pod = _worker(volumes=[{"name": "conf", "configMap": {"name": "edge-conf", "items": [{"key": "up.conf", "path": "up.conf"}]}}])
    obs = WorkloadObservation("orders", "Deployment", "worker", pods=[pod])
    msg = 'MountVolume.SetUp failed for volume "conf" : configmap references non-existent config key: up.conf'
    located = locate("volume_mount_failed", obs, {"mount_error": msg}, build_graph(Collected()))
    assert str(located.root) == "ConfigMap/orders/edge-conf" and "up.conf" in located.chain
    attach = 'AttachVolume.Attach failed for volume "pvc-1" : rpc error: code = Internal'
    assert str(locate("volume_mount_failed", obs, {"mount_error": attach}, build_graph(Collected())).root) == "Deployment/orders/worker"


async def test_a_paused_deployment_shows_the_template_change_that_waits() -> None:
    from sleuth_agent.rca.followups.changes import rollout_changes

    def tmpl(image: str) -> dict:
        return {"spec": {"template": {"spec": {"containers": [{"name": "api", "image": image}]}}}}

    tools = rca_fakes.FakeTools({("get_resource", "printer"): tmpl("printer:2.8.0"), ("get_resource", "printer-5d"): tmpl("printer:2.7.3")})
    listing = ToolResult(tool="list_workloads", status="ok", args={}, data={"workloads": [
        {"kind": "Deployment", "name": "printer", "paused": True},
        {"kind": "ReplicaSet", "name": "printer-5d", "owner": {"kind": "Deployment", "name": "printer"}, "revision": "5"}]})
    change = await rollout_changes(lambda t, a: tools.call(t, a), "ship", "printer", listing)
    assert change is not None and change.kind == "Deployment template"
    assert [c.text() for c in change.changes] == ["container api image: printer:2.7.3 → printer:2.8.0"]


async def test_a_service_whose_named_target_port_the_ready_pods_do_not_declare() -> None:
    from sleuth_agent.rca.followups.services import service_findings, unserved_target_port

    web = PodView.parse({"metadata": {"name": "wiki-1", "namespace": "docs", "labels": {"app": "wiki"}},
                         "status": {"phase": "Running", "containerStatuses": [{"name": "wiki", "ready": True, "state": {"running": {}}}]}})
    svc = {"name": "wiki", "selector": {"app": "wiki"}, "ports": [{"port": 80, "target_port": "wiki-http"}], "endpoints": {"ready": [], "not_ready": []}}
    got = Collected(pods={"docs": [web]}, services={"docs": [svc]})
    tools = rca_fakes.FakeTools({("get_pod", "wiki-1"): {"name": "wiki-1", "containers": [{"name": "wiki", "ports": [{"name": "http", "container_port": 3000}]}]}})
    f, log = rca_fakes.follow(tools, got)
    await unserved_target_port(f.ctx, "docs", svc)
    [obs] = service_findings(got, ["docs"], {("docs", "wiki")}, log)
    assert (obs.variables["service_target_port"], obs.variables["container_port"]) == ("wiki-http", "3000")
    # a Service with ready endpoints is left alone
    got2 = Collected(pods={"docs": [web]}, services={"docs": [{**svc, "endpoints": {"ready": ["10.0.0.1"]}}]})
    f2, _ = rca_fakes.follow(tools, got2)
    await unserved_target_port(f2.ctx, "docs", got2.services["docs"][0])
    assert not got2.service_notes


async def test_a_host_name_in_the_question_resolves_through_the_ingress_that_routes_it() -> None:
    from sleuth_agent.rca._plan import parse_question
    from sleuth_agent.rca._targets import _ingress_services

    terms = parse_question("wiki.lab.example.org is down since this morning, the wiki pods look fine")
    assert terms.hosts == ("wiki.lab.example.org",) and "wiki.lab.example.org" not in terms.names
    tools = rca_fakes.FakeTools({("list_resources", "docs"): {"items": [
        {"name": "wiki", "routes": [{"host": "wiki.lab.example.org", "path": "/", "service": "wiki-js", "port": 80}]},
        {"name": "other", "routes": [{"host": "grafana.lab.example.org", "service": "grafana"}]}]}})
    assert await _ingress_services(tools, rca_fakes.follow(tools)[1], ["docs"], terms.hosts, 5.0) == {("docs", "wiki-js")}


async def test_a_daemonset_mid_update_is_diffed_between_the_revisions_its_pods_carry() -> None:
    from sleuth_agent.rca.followups.changes import pod_revision_changes

    def pod(name: str, hash_: str, ready: bool) -> PodView:
        return PodView.parse({"metadata": {"name": name, "namespace": "net", "labels": {"controller-revision-hash": hash_}},
                              "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": ready, "state": {"running": {}}}]}})

    def rev(n: int, dns: str) -> dict:
        return {"kind": "ControllerRevision", "revision": n, "data": {"spec": {"template": {"spec": {"dnsPolicy": dns, "containers": [{"name": "c"}]}}}}}

    tools = rca_fakes.FakeTools({("get_resource", "flow-655c"): rev(3, "ClusterFirst"), ("get_resource", "flow-068d"): rev(2, "ClusterFirstWithHostNet")})
    change = await pod_revision_changes(lambda t, a: tools.call(t, a), "net", [pod("flow-a", "655c", False), pod("flow-b", "068d", True)], "flow")
    assert change is not None and [c.text() for c in change.changes] == ["dnsPolicy: ClusterFirstWithHostNet → ClusterFirst"]
    # every pod on the new revision (no old one to compare with): nothing to diff without listing revisions
    assert await pod_revision_changes(lambda t, a: tools.call(t, a), "net", [pod("flow-a", "655c", False)], "flow") is None
