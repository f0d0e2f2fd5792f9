"""The API over real HTTPS (httpx verifying simcluster's CA): discovery, reads, errors, logs, reviews."""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from sleuth_simcluster import SimCluster
from sleuth_simcluster._protobuf import encode_ssar

Client = Callable[..., httpx.Client]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
API_POD = "api-7d9f8b6c5d-xyz12"
# The exact body kubectl 1.32 POSTs for `auth can-i get pods --subresource=log -n shop`.
KUBECTL_SSAR = bytes.fromhex(
    "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a656374416363657373"
    "526576696577123c0a100a0012001a0022002a00320038004200121e0a1c0a0473686f7012036765741a0022002a04706f6473"
    "32036c6f673a001a08080012001a0020001a002200")
PROTOBUF = {"Content-Type": "application/vnd.kubernetes.protobuf"}


def _status(resp: httpx.Response, code: int) -> dict:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert body["kind"] == "Status" and body["code"] == code
    return body


# -- discovery and identity -----------------------------------------------------------------------

def test_discovery_documents(client: Client) -> None:
    c = client("alice")
    versions = c.get("/api").json()
    assert versions["kind"] == "APIVersions" and versions["versions"] == ["v1"]
    groups = {g["name"] for g in c.get("/apis").json()["groups"]}
    assert {"apps", "batch", "policy", "networking.k8s.io", "autoscaling", "storage.k8s.io",
            "rbac.authorization.k8s.io", "events.k8s.io", "authorization.k8s.io"} <= groups
    core = {r["name"]: r for r in c.get("/api/v1").json()["resources"]}
    assert core["pods"]["shortNames"] == ["po"] and core["pods"]["namespaced"] is True
    assert core["pods/log"]["verbs"] == ["get"] and "pods/status" in core
    assert core["nodes"]["namespaced"] is False and core["nodes"]["shortNames"] == ["no"]
    apps = {r["name"]: r for r in c.get("/apis/apps/v1").json()["resources"]}
    assert apps["deployments"]["kind"] == "Deployment" and apps["deployments"]["shortNames"] == ["deploy"]
    hpa = c.get("/apis/autoscaling").json()
    assert hpa["preferredVersion"]["version"] == "v2" and [v["version"] for v in hpa["versions"]] == ["v2", "v1"]
    assert c.get("/apis/nosuch.group/v1").status_code == 404


def test_aggregated_discovery(client: Client) -> None:
    c = client("alice", Accept=AGGREGATED)
    resp = c.get("/apis")
    assert resp.headers["content-type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    items = {i["metadata"]["name"]: i for i in resp.json()["items"]}
    deploy = next(r for r in items["apps"]["versions"][0]["resources"] if r["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced" and deploy["responseKind"]["kind"] == "Deployment"
    core = c.get("/api").json()["items"][0]["versions"][0]["resources"]
    pods = next(r for r in core if r["resource"] == "pods")
    assert {s["subresource"] for s in pods["subresources"]} == {"log", "status"}


def test_public_endpoints_and_authentication(client: Client) -> None:
    anon = client()
    assert anon.get("/healthz").text == "ok" and anon.get("/readyz").status_code == 200
    assert anon.get("/version").json()["major"] == "1"
    assert _status(anon.get("/api"), 401)["message"] == "Unauthorized"
    assert _status(anon.get("/api/v1/namespaces/shop/pods"), 401)["reason"] == "Unauthorized"
    bad = client(Authorization="Bearer not-a-token")
    _status(bad.get("/api/v1/namespaces/shop/pods"), 401)
    _status(bad.get("/healthz"), 401)


# -- reads ----------------------------------------------------------------------------------------

def test_list_and_get(client: Client) -> None:
    c = client("alice")
    pods = c.get("/api/v1/namespaces/shop/pods").json()
    assert pods["kind"] == "PodList" and pods["apiVersion"] == "v1" and pods["metadata"]["resourceVersion"]
    assert [p["metadata"]["name"] for p in pods["items"]] == [
        API_POD, "migrate-8xk2p", "puller", "web-6d4cf56db6-abcde", "worker-0"]
    assert all(p["kind"] == "Pod" and p["apiVersion"] == "v1" for p in pods["items"])
    pod = c.get(f"/api/v1/namespaces/shop/pods/{API_POD}").json()
    assert pod["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"] == "OOMKilled"
    deploys = c.get("/apis/apps/v1/namespaces/shop/deployments").json()
    assert deploys["kind"] == "DeploymentList" and {d["metadata"]["name"] for d in deploys["items"]} == {"api", "web"}


def test_cluster_wide_lists_for_a_cluster_reader(client: Client) -> None:
    c = client("reader")
    names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in c.get("/api/v1/pods").json()["items"]]
    assert ("pay", "ledger-5f7b9c8d4-qwert") in names and ("shop", "worker-0") in names
    assert {n["metadata"]["name"] for n in c.get("/api/v1/nodes").json()["items"]} == {"node-1", "node-2"}
    assert c.get("/api/v1/namespaces/shop").json()["kind"] == "Namespace"


def test_selectors(client: Client) -> None:
    c = client("reader")

    def names(url: str, **params: str) -> set[str]:
        return {o["metadata"]["name"] for o in c.get(url, params=params).json()["items"]}

    assert names("/api/v1/pods", labelSelector="app=ledger,canary!=true") == {"ledger-5f7b9c8d4-qwert"}
    assert names("/api/v1/pods", labelSelector="tier in (frontend,backend)") == {API_POD, "web-6d4cf56db6-abcde"}
    assert names("/api/v1/namespaces/shop/pods", fieldSelector="status.phase=Pending") == {"worker-0", "puller"}
    assert names("/api/v1/pods", fieldSelector="spec.nodeName=node-1,metadata.namespace=pay") == {
        "ledger-5f7b9c8d4-qwert", "ledger-5f7b9c8d4-crash"}
    assert names("/api/v1/namespaces/shop/events", fieldSelector=f"involvedObject.name={API_POD},type=Warning") == {
        f"{API_POD}.backoff"}
    bad = c.get("/api/v1/pods", params={"labelSelector": "app in web"})
    assert _status(bad, 400)["reason"] == "BadRequest"
    _status(c.get("/api/v1/pods", params={"fieldSelector": "spec.nope=1"}), 400)


def test_other_versions_are_converted(client: Client) -> None:
    c = client("reader")
    ev = c.get("/apis/events.k8s.io/v1/namespaces/pay/events").json()
    assert ev["kind"] == "EventList" and ev["apiVersion"] == "events.k8s.io/v1"
    assert ev["items"][0]["regarding"]["name"] == "ledger-5f7b9c8d4-crash" and "note" in ev["items"][0]
    v1 = c.get("/apis/autoscaling/v1/namespaces/shop/horizontalpodautoscalers/web").json()
    assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 80
    v2 = c.get("/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/web").json()
    assert v2["apiVersion"] == "autoscaling/v2" and "metrics" in v2["spec"]
    scale = c.get("/apis/apps/v1/namespaces/shop/deployments/api/scale").json()
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1


def test_tables(client: Client) -> None:
    c = client("alice", Accept=TABLE)
    t = c.get("/api/v1/namespaces/shop/pods").json()
    assert t["kind"] == "Table"
    rows = {r["cells"][0]: r["cells"] for r in t["rows"]}
    assert rows[API_POD][1:4] == ["1/2", "CrashLoopBackOff", "7 (3m ago)"]
    assert rows["worker-0"][2] == "Pending" and rows["puller"][2] == "ImagePullBackOff"
    assert rows["migrate-8xk2p"][2] == "Completed" and rows["web-6d4cf56db6-abcde"][4] == "24h"
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    full = c.get("/api/v1/namespaces/shop/pods", params={"includeObject": "Object"}).json()
    assert full["rows"][0]["object"]["kind"] == "Pod"
    one = c.get("/apis/apps/v1/namespaces/shop/deployments/api").json()
    assert [col["name"] for col in one["columnDefinitions"][:5]] == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    assert one["rows"][0]["cells"][:5] == ["api", "0/1", 1, 0, "10d"]


# -- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("user", "url", "message"), [
    ("alice", "/api/v1/namespaces/pay/pods",
     'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "pay"'),
    ("alice", "/api/v1/pods",
     'pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope'),
    ("alice", "/api/v1/namespaces/pay/pods/ledger-5f7b9c8d4-qwert",
     'pods "ledger-5f7b9c8d4-qwert" is forbidden: User "alice" cannot get resource "pods" in API group "" '
     'in the namespace "pay"'),
    ("alice", "/api/v1/nodes",
     'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope'),
    ("dave", "/api/v1/namespaces/shop/pods/web-6d4cf56db6-abcde/log",
     'pods "web-6d4cf56db6-abcde" is forbidden: User "dave" cannot get resource "pods/log" in API group "" '
     'in the namespace "shop"'),
    ("alice", "/apis/apps/v1/namespaces/pay/deployments",
     'deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" '
     'in the namespace "pay"'),
    ("alice", "/api/v1/namespaces/shop",
     'namespaces "shop" is forbidden: User "alice" cannot get resource "namespaces" in API group "" '
     'in the namespace "shop"'),
])
def test_forbidden_wording(client: Client, user: str, url: str, message: str) -> None:
    body = _status(client(user).get(url), 403)
    assert body["reason"] == "Forbidden" and body["message"] == message


def test_not_found_and_unknown_paths(client: Client) -> None:
    c = client("alice")
    body = _status(c.get("/api/v1/namespaces/shop/pods/nope"), 404)
    assert body["message"] == 'pods "nope" not found' and body["details"] == {"name": "nope", "kind": "pods"}
    assert _status(c.get("/apis/apps/v1/namespaces/shop/deployments/nope"), 404)["message"] == \
        'deployments.apps "nope" not found'
    assert _status(c.get("/api/v1/widgets"), 404)["message"] == "the server could not find the requested resource"
    _status(c.get("/api/v1/namespaces/shop/pods/web-6d4cf56db6-abcde/exec"), 404)


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_writes_are_refused(client: Client, method: str) -> None:
    c = client("carol")
    url = "/api/v1/namespaces/shop/pods" + ("" if method == "POST" else "/worker-0")
    assert _status(c.request(method, url, json={}), 405)["reason"] == "MethodNotAllowed"
    # a caller without the right is refused first, as the API server authorizes before anything else
    _status(client("alice").request(method, url.replace("/shop/", "/pay/"), json={}), 403)


def test_watch_is_refused(client: Client) -> None:
    _status(client("alice").get("/api/v1/namespaces/shop/pods", params={"watch": "true"}), 405)


# -- logs -----------------------------------------------------------------------------------------

def test_pod_logs(client: Client) -> None:
    c = client("alice")
    url = f"/api/v1/namespaces/shop/pods/{API_POD}/log"
    body = _status(c.get(url), 400)
    assert body["message"] == f"a container name must be specified for pod {API_POD}, choose one of: [api log-shipper]"
    current = c.get(url, params={"container": "api"})
    assert current.headers["content-type"].startswith("text/plain")
    assert current.text.splitlines() == [
        "starting api 2.4.1", "connected to postgres://db:5432/shop", "loading product catalogue into memory"]
    prev = c.get(url, params={"container": "api", "previous": "true", "tailLines": "2"}).text
    assert prev.splitlines() == ["cache size 240Mi", "java.lang.OutOfMemoryError: Java heap space"]
    stamped = c.get(url, params={"container": "api", "previous": "true", "tailLines": "1", "timestamps": "true"})
    assert stamped.text == "2026-11-30T08:56:59.000000000Z java.lang.OutOfMemoryError: Java heap space\n"
    since = c.get(url, params={"container": "api", "sinceSeconds": "15"}).text  # now is 09:00:00
    assert since.splitlines() == ["loading product catalogue into memory"]
    assert c.get(url, params={"container": "api", "tailLines": "0"}).text == ""
    assert c.get("/api/v1/namespaces/shop/pods/web-6d4cf56db6-abcde/log").text.startswith("nginx started")


def test_pod_log_errors(client: Client) -> None:
    c = client("alice")
    assert _status(c.get("/api/v1/namespaces/shop/pods/nope/log"), 404)["message"] == 'pods "nope" not found'
    assert _status(c.get(f"/api/v1/namespaces/shop/pods/{API_POD}/log", params={"container": "db"}), 400)[
        "message"] == f"container db is not valid for pod {API_POD}"
    assert _status(c.get("/api/v1/namespaces/shop/pods/web-6d4cf56db6-abcde/log", params={"previous": "true"}),
                   400)["message"] == 'previous terminated container "web" in pod "web-6d4cf56db6-abcde" not found'
    assert _status(c.get("/api/v1/namespaces/shop/pods/puller/log"), 400)["message"] == \
        'container "puller" in pod "puller" is waiting to start: trying and failing to pull image'


# -- reviews --------------------------------------------------------------------------------------

SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def _sar(user: str, groups: list[str], **attrs: str) -> dict:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, "resourceAttributes": attrs}}


def test_subject_access_review(client: Client) -> None:
    c = client("authz")
    ok = c.post(SAR, json=_sar("alice", ["shop-devs"], namespace="shop", verb="get", resource="pods"))
    assert ok.status_code == 201
    assert ok.json()["kind"] == "SubjectAccessReview" and ok.json()["status"]["allowed"] is True
    assert "shop-devs-view" in ok.json()["status"]["reason"]
    no = c.post(SAR, json=_sar("alice", ["shop-devs"], namespace="pay", verb="get", resource="pods")).json()
    assert no["status"] == {"allowed": False}
    logs = c.post(SAR, json=_sar("dave", [], namespace="shop", verb="get", resource="pods", subresource="log"))
    assert logs.json()["status"]["allowed"] is False
    nonres = {"spec": {"user": "x", "groups": ["system:authenticated"],
                       "nonResourceAttributes": {"path": "/api", "verb": "get"}}}
    assert c.post(SAR, json=nonres).json()["status"]["allowed"] is True
    assert _status(c.post(SAR, json={"spec": {"user": "x"}}), 422)["reason"] == "Invalid"
    assert _status(c.post(SAR, content=b"{not json"), 400)["reason"] == "BadRequest"
    body = _status(client("alice").post(SAR, json=_sar("alice", [], verb="get", resource="pods")), 403)
    assert body["message"] == ('subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create '
                               'resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope')


def test_self_subject_access_review_protobuf_and_json(client: Client) -> None:
    url = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    alice, dave = client("alice"), client("dave")
    assert alice.post(url, content=KUBECTL_SSAR, headers=PROTOBUF).json()["status"]["allowed"] is True
    denied = dave.post(url, content=KUBECTL_SSAR, headers=PROTOBUF).json()
    assert denied["status"]["allowed"] is False
    assert denied["spec"]["resourceAttributes"] == {"namespace": "shop", "verb": "get", "resource": "pods",
                                                     "subresource": "log"}
    other = encode_ssar({"namespace": "pay", "verb": "list", "resource": "pods"})
    assert alice.post(url, content=other, headers=PROTOBUF).json()["status"]["allowed"] is False
    as_json = {"spec": {"resourceAttributes": {"namespace": "shop", "verb": "list", "resource": "pods"}}}
    assert dave.post(url, json=as_json).json()["status"]["allowed"] is True
    _status(alice.post(url, content=b"k8s\x00\xff\xff", headers=PROTOBUF), 400)


def test_self_subject_rules_review(client: Client) -> None:
    review = client("dave").post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                                 json={"spec": {"namespace": "shop"}}).json()
    rules = review["status"]["resourceRules"]
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in rules
    assert review["status"]["incomplete"] is False


def test_token_review(client: Client) -> None:
    url = "/apis/authentication.k8s.io/v1/tokenreviews"
    c = client("authz")
    good = c.post(url, json={"spec": {"token": "fx-alice-token"}})
    assert good.status_code == 201
    assert good.json()["status"]["authenticated"] is True
    assert good.json()["status"]["user"] == {"username": "alice", "groups": ["shop-devs", "system:authenticated"]}
    assert "fx-alice-token" not in good.text
    assert c.post(url, json={"spec": {"token": "nope"}}).json()["status"]["authenticated"] is False
    _status(client("alice").post(url, json={"spec": {"token": "fx-bob-token"}}), 403)


# -- scale ----------------------------------------------------------------------------------------

def test_two_thousand_pods(tmp_path: Path) -> None:
    pods = [{"metadata": {"name": f"p-{i:04d}", "namespace": f"ns-{i % 20}", "labels": {"i": str(i % 7)},
                          "creationTimestamp": "2026-11-30T08:00:00Z"},
             "spec": {"nodeName": f"n{i % 5}", "containers": [{"name": "c", "image": "x"}]},
             "status": {"phase": "Running", "containerStatuses": [
                 {"name": "c", "ready": True, "restartCount": 0, "state": {"running": {}}}]}} for i in range(2000)]
    snap = tmp_path / "snap"
    (snap / "cluster").mkdir(parents=True)
    (snap / "cluster" / "pods.json").write_text(json.dumps({"kind": "PodList", "apiVersion": "v1", "items": pods}))
    (snap / "snapshot.yaml").write_text("users: {admin: {groups: [system:masters], token: t}}\n")
    with SimCluster(snap, tmp_path / "state") as sim, \
            httpx.Client(base_url=sim.url, verify=ssl.create_default_context(cafile=str(sim.ca_file)),
                         headers={"Authorization": "Bearer t"}) as c:
        assert len(c.get("/api/v1/pods").json()["items"]) == 2000
        assert len(c.get("/api/v1/pods", headers={"Accept": TABLE}).json()["rows"]) == 2000
        assert len(c.get("/api/v1/namespaces/ns-3/pods", params={"labelSelector": "i=3"}).json()["items"]) == 15
