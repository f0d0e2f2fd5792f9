"""kube-mcp end to end: a real MCP client over streamable HTTP → kube-mcp → simcluster serving
the demo snapshot with real RBAC."""

from __future__ import annotations

from typing import Any

import httpx

from sleuth_kube_mcp import CLUSTER_ADMIN_META_KEY, TOOL_NAMES

CHECKOUT_POD = "checkout-api-7d9f8c6b5d-x2k4p"


async def test_tools_are_listed_with_exact_schemas(kube_mcp, mcp_session):
    async with mcp_session(kube_mcp("carol").url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(TOOL_NAMES)
    required = {name: t.input_schema.get("required") for name, t in tools.items()}
    assert required == {
        "list_pods": ["namespace"],
        "get_pod": ["namespace", "name"],
        "pod_logs": ["namespace", "name"],
        "list_events": ["namespace"],
        "list_workloads": ["namespace"],
        "list_services": ["namespace"],
        "list_pvcs": ["namespace"],
        "list_quotas": ["namespace"],
        "list_nodes": [],
        "get_resource": ["kind", "name"],
        "list_resources": ["kind", "namespace"],
        "list_storage": [],
        "analyze_logs": ["namespace"],
        "subgraph": ["namespace", "kind", "name"],
    }
    logs = tools["pod_logs"].input_schema["properties"]
    assert logs["tail_lines"] == {
        "default": 200,
        "description": "Last N lines (max 5000).",
        "maximum": 5000,
        "minimum": 1,
        "type": "integer",
    }
    assert logs["previous"]["type"] == "boolean"
    assert logs["since_seconds"]["type"] == "integer"
    assert tools["list_events"].input_schema["properties"]["types"]["items"]["enum"] == ["Normal", "Warning"]
    for t in tools.values():
        assert t.description and "title" not in t.input_schema
        assert t.annotations is not None and t.annotations.read_only_hint is True
    assert tools["list_nodes"].meta == {CLUSTER_ADMIN_META_KEY: True}
    assert "CLUSTER-ADMIN ONLY" in tools["list_nodes"].description
    assert all(not (t.meta or {}).get(CLUSTER_ADMIN_META_KEY) for n, t in tools.items() if n != "list_nodes")


async def test_list_pods_shows_the_oom_killed_checkout_api(kube_mcp, mcp_call):
    err, data = await mcp_call(kube_mcp("alice").url, "list_pods", {"namespace": "team-a"})
    assert not err
    assert data["namespace"] == "team-a"
    assert all(p["namespace"] == "team-a" for p in data["pods"])
    pods = {p["name"]: p for p in data["pods"]}
    pod = pods[CHECKOUT_POD]
    assert pod["status"] == "CrashLoopBackOff"
    assert pod["owner"] == {"kind": "ReplicaSet", "name": "checkout-api-7d9f8c6b5d"}
    (c,) = pod["containers"]
    assert c["last_termination"]["reason"] == "OOMKilled"
    assert c["last_termination"]["exit_code"] == 137
    assert c["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert c["resources"]["limits"]["memory"] == "256Mi"
    assert c["restart_count"] == pod["restarts"] == 7
    assert pod["ready"] == "0/1"
    assert {p["status"] for p in data["pods"]} >= {"Running", "Completed", "CrashLoopBackOff"}


async def test_list_pods_label_selector(kube_mcp, mcp_call):
    err, data = await mcp_call(
        kube_mcp("alice").url,
        "list_pods",
        {"namespace": "team-a", "label_selector": "app.kubernetes.io/name=frontend"},
    )
    assert not err
    assert data["count"] == 2 and all(p["name"].startswith("frontend-") for p in data["pods"])


async def test_pod_logs_previous_and_default_container(kube_mcp, mcp_call):
    url = kube_mcp("alice").url
    err, prev = await mcp_call(
        url, "pod_logs", {"namespace": "team-a", "name": "payments-worker-5c6d7e8f9a-mt4zq", "previous": True}
    )
    assert not err
    assert prev["container"] == "payments-worker" and prev["previous"] is True and prev["truncated"] is False
    assert any("Error: connect ECONNREFUSED" in line for line in prev["lines"])
    assert prev["lines"][0].startswith("2026-11-30T08:")
    err, cur = await mcp_call(url, "pod_logs", {"namespace": "team-a", "name": CHECKOUT_POD, "tail_lines": 3})
    assert not err and len(cur["lines"]) == 3 and cur["previous"] is False
    assert "heap close to container memory limit" in cur["lines"][-1]
    err, old = await mcp_call(
        url, "pod_logs", {"namespace": "team-a", "name": CHECKOUT_POD, "previous": True}
    )
    assert not err and old["lines"] != cur["lines"]


async def test_forbidden_read_is_an_error_result_with_the_api_message(kube_mcp, mcp_call):
    err, data = await mcp_call(kube_mcp("alice").url, "list_pods", {"namespace": "team-b"})
    assert err
    assert data["code"] == 403 and data["reason"] == "Forbidden"
    assert 'cannot list resource "pods"' in data["error"] and '"team-b"' in data["error"]
    assert data["command"] == "kubectl get pods -n team-b -o wide"


async def test_missing_object_is_a_404_error_result(kube_mcp, mcp_call):
    err, data = await mcp_call(
        kube_mcp("alice").url, "get_pod", {"namespace": "team-a", "name": "no-such-pod"}
    )
    assert err and data["code"] == 404 and "no-such-pod" in data["error"]
    assert data["command"] == "kubectl get pod no-such-pod -n team-a -o yaml"


async def test_bad_arguments_are_error_results(kube_mcp, mcp_call):
    url = kube_mcp("carol").url
    err, data = await mcp_call(url, "get_resource", {"kind": "Deployment", "name": "checkout-api"})
    assert err and "namespaced" in data["error"]
    err, data = await mcp_call(
        url, "get_resource", {"kind": "frobnicators", "name": "x", "namespace": "team-a"}
    )
    assert err and "unknown kind" in data["error"]


async def test_get_resource_redacts_secret_values(kube_mcp, mcp_call):
    err, secret = await mcp_call(
        kube_mcp("carol").url,
        "get_resource",
        {"kind": "secret", "name": "checkout-api-db", "namespace": "team-a"},
    )
    assert not err
    assert secret["kind"] == "Secret" and secret["metadata"]["namespace"] == "team-a"
    assert secret["data"] == {"password": "<redacted>", "username": "<redacted>"}
    assert "managedFields" not in secret["metadata"]
    # the tenant's view role never reads secrets at all
    err, denied = await mcp_call(
        kube_mcp("alice").url,
        "get_resource",
        {"kind": "Secret", "name": "checkout-api-db", "namespace": "team-a"},
    )
    assert err and denied["code"] == 403


async def test_get_resource_by_short_name_and_cluster_scoped(kube_mcp, mcp_call):
    url = kube_mcp("carol").url
    err, deploy = await mcp_call(
        url, "get_resource", {"kind": "deploy", "name": "checkout-api", "namespace": "team-a"}
    )
    assert not err and deploy["kind"] == "Deployment" and deploy["spec"]["replicas"] == 2
    err, sc = await mcp_call(url, "get_resource", {"kind": "sc", "name": "standard", "namespace": "team-a"})
    assert not err and sc["kind"] == "StorageClass" and sc["provisioner"] == "ebs.csi.aws.com"


async def test_get_pod_shows_config_refs_not_secret_values(kube_mcp, mcp_call):
    err, pod = await mcp_call(kube_mcp("alice").url, "get_pod", {"namespace": "team-a", "name": CHECKOUT_POD})
    assert not err
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c["env"]}
    assert env["CHECKOUT_DB_PASSWORD"]["value_from"] == {"secret": "checkout-api-db", "key": "password"}
    assert env["CART_CACHE_PRELOAD"]["value"] == "true"
    assert c["env_from"] == [{"config_map": "checkout-api-config"}]
    assert c["liveness_probe"]["type"] == "http" and c["liveness_probe"]["path"] == "/healthz"
    assert pod["tolerations"] and any(v["type"] == "projected" for v in pod["volumes"])


async def test_list_events_filters_and_sorts_newest_first(kube_mcp, mcp_call):
    url = kube_mcp("bob").url
    err, data = await mcp_call(url, "list_events", {"namespace": "team-b", "types": ["Warning"]})
    assert not err and data["count"] >= 4
    assert all(e["type"] == "Warning" and e["namespace"] == "team-b" for e in data["events"])
    stamps = [e["last_timestamp"] for e in data["events"]]
    assert stamps == sorted(stamps, reverse=True)
    msgs = [e["message"] for e in data["events"]]
    assert "0/3 nodes are available: 3 Insufficient memory." in msgs
    err, one = await mcp_call(
        url, "list_events", {"namespace": "team-b", "involved_object_name": "billing-api-84f7c9d6b5-r9t2w"}
    )
    assert not err
    assert {e["involved_object"]["name"] for e in one["events"]} == {"billing-api-84f7c9d6b5-r9t2w"}
    assert any(e["message"] == 'Error: configmap "billing-config" not found' for e in one["events"])


async def test_list_workloads(kube_mcp, mcp_call):
    err, data = await mcp_call(kube_mcp("alice").url, "list_workloads", {"namespace": "team-a"})
    assert not err and "errors" not in data
    by = {(w["kind"], w["name"]): w for w in data["workloads"]}
    checkout = by[("Deployment", "checkout-api")]
    assert checkout["replicas"] == {"desired": 2, "current": 2, "ready": 0, "available": 0, "updated": 2}
    assert checkout["selector"] == "app.kubernetes.io/name=checkout-api"
    assert ("CronJob", "reports-cron") in by and by[("CronJob", "reports-cron")]["cron"][
        "schedule"
    ] == "0 6 * * *"
    job = next(w for w in data["workloads"] if w["kind"] == "Job")
    assert job["owner"] == {"kind": "CronJob", "name": "reports-cron"} and job["job"]["succeeded"] == 1
    assert by[("ReplicaSet", "checkout-api-7d9f8c6b5d")]["owner"] == {
        "kind": "Deployment",
        "name": "checkout-api",
    }
    err, only = await mcp_call(
        kube_mcp("bob").url, "list_workloads", {"namespace": "team-b", "kinds": ["statefulsets"]}
    )
    assert not err and [w["name"] for w in only["workloads"]] == ["inventory-db"]


async def test_services_pvcs_and_quotas(kube_mcp, mcp_call):
    url = kube_mcp("alice").url
    err, svcs = await mcp_call(url, "list_services", {"namespace": "team-a"})
    assert not err
    checkout = next(s for s in svcs["services"] if s["name"] == "checkout-api")
    assert checkout["endpoints"]["ready"] == []
    assert {a["pod"] for a in checkout["endpoints"]["not_ready"]} == {
        CHECKOUT_POD,
        "checkout-api-7d9f8c6b5d-q8m7n",
    }
    err, pvcs = await mcp_call(url, "list_pvcs", {"namespace": "team-a"})
    assert not err and pvcs["pvcs"][0]["name"] == "reports-archive"
    assert pvcs["pvcs"][0]["phase"] == "Bound" and pvcs["pvcs"][0]["storage_class"] == "standard"
    err, quotas = await mcp_call(url, "list_quotas", {"namespace": "team-a"})
    assert not err
    assert quotas["resource_quotas"][0]["hard"]["requests.memory"] == "12Gi"
    assert quotas["limit_ranges"][0]["limits"][0]["default"]["memory"] == "256Mi"


async def test_list_nodes_for_cluster_admin_and_forbidden_for_tenant(kube_mcp, mcp_call):
    err, nodes = await mcp_call(kube_mcp("carol").url, "list_nodes", {})
    assert not err and nodes["count"] == 3
    assert all(n["ready"] == "True" and n["allocatable"]["memory"] for n in nodes["nodes"])
    err, denied = await mcp_call(kube_mcp("alice").url, "list_nodes", {})
    assert err and denied["code"] == 403


async def test_caller_token_is_used_when_accepted(kube_mcp, mcp_call, sim):
    url = kube_mcp("sleuth-reader", accept_caller_token=True).url
    bob = sim.token("bob")
    err, own = await mcp_call(url, "list_pods", {"namespace": "team-b"}, token=bob)
    assert not err and own["count"] >= 4
    err, other = await mcp_call(url, "list_pods", {"namespace": "team-a"}, token=bob)
    assert err and other["code"] == 403 and "team-a" in other["error"]
    # no Authorization header: the configured (reader) credentials apply
    err, _ = await mcp_call(url, "list_pods", {"namespace": "team-a"})
    assert not err


async def test_caller_token_is_ignored_unless_accepted(kube_mcp, mcp_call, sim):
    err, data = await mcp_call(
        kube_mcp("carol").url, "list_pods", {"namespace": "team-a"}, token=sim.token("bob")
    )
    assert not err and data["count"] >= 5


async def test_healthz_readyz_and_metrics(kube_mcp, mcp_call):
    handle = kube_mcp("alice")
    await mcp_call(handle.url, "list_pods", {"namespace": "team-b"})
    async with httpx.AsyncClient(base_url=handle.base_url) as http:
        health = await http.get("/healthz")
        ready = await http.get("/readyz")
        metrics = await http.get("/metrics")
    assert health.status_code == 200 and health.json() == {"status": "alive"}
    assert ready.status_code == 200 and ready.json() == {"ready": True, "kubernetes": "ok", "cluster": "demo"}
    text: Any = metrics.text
    assert 'sleuth_kube_mcp_tool_calls_total{outcome="api_403",tool="list_pods"}' in text
    assert 'sleuth_kube_mcp_api_responses_total{code="403"}' in text


def test_slow_and_malformed_heads_are_cut_off_while_others_are_served(sim):
    """Against a real socket: a head trickled a byte at a time gets 408 and is closed within
    ``header_timeout``, a silent connection is closed, a malformed head gets a JSON 400; a normal
    request is served meanwhile."""
    import socket
    import threading
    import time

    from sleuth_kube_mcp import Settings, serve_in_thread

    settings = Settings.model_validate(
        {"kube_mcp": {"kubeconfig": str(sim.kubeconfig("carol")), "port": 0, "cluster_name": "demo",
                      "require_identity": False, "header_timeout": 1.0},
         "identity": {"verify_key_files": [], "verify_keys_env": ""}}
    )
    results: dict[str, tuple[float, bytes]] = {}

    def client(name: str, data: bytes, gap: float) -> None:
        t0, got = time.monotonic(), b""
        with socket.create_connection(("127.0.0.1", handle.port), timeout=10) as sock:
            sock.settimeout(gap or 10)
            for i in range(0, len(data), 1 if gap else len(data) or 1):
                try:
                    sock.sendall(data[i : i + (1 if gap else len(data))])
                    got += sock.recv(4096)
                    break
                except TimeoutError:
                    continue
                except OSError:
                    break
            try:
                while chunk := sock.recv(4096):
                    got += chunk
            except OSError:
                pass
        results[name] = (time.monotonic() - t0, got)

    with serve_in_thread(settings) as handle:
        head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 100 + b"\r\n\r\n"
        threads = [
            threading.Thread(target=client, args=("slow", head, 0.1)),
            threading.Thread(target=client, args=("silent", b"", 0)),
            threading.Thread(target=client, args=("malformed", b"GET / HTTP/1.1\r\nno colon\r\n\r\n", 0)),
        ]
        for t in threads:
            t.start()
        time.sleep(0.2)
        assert httpx.get(handle.base_url + "/healthz", timeout=5).status_code == 200
        for t in threads:
            t.join(15)
    slow_s, slow = results["slow"]
    assert slow.startswith(b"HTTP/1.1 408") and b'"request_id"' in slow and slow_s < 6, results["slow"]
    assert results["silent"][1] == b"" and results["silent"][0] < 6
    malformed = results["malformed"][1]
    assert malformed.startswith(b"HTTP/1.1 400") and b'"error"' in malformed, malformed
    assert b"x-content-type-options: nosniff" in malformed
