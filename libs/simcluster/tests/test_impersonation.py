"""Impersonation (``Impersonate-*`` headers) as kube-apiserver does it, its audit log, and the
identities simcluster adds for Sleuth (DESIGN §2, §4): kube-mcp reads *as the asker*."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from starlette.testclient import TestClient

from sleuth_simcluster import SimCluster, create_app, load_snapshot

Client = Callable[..., httpx.Client]
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SHOP_PODS = "/api/v1/namespaces/shop/pods"
PAY_PODS = "/api/v1/namespaces/pay/pods"


def _as(user: str | None = None, *groups: str, **more: str) -> list[tuple[str, str]]:
    headers = [("Impersonate-User", user)] if user is not None else []
    headers += [("Impersonate-Group", g) for g in groups]
    return headers + list(more.items())


def _forbidden(resp: httpx.Response) -> str:
    assert resp.status_code == 403, resp.text
    body = resp.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Forbidden", 403)
    return str(body["message"])


def _whoami(c: httpx.Client, headers: list[tuple[str, str]]) -> dict:
    resp = c.post(SSR, json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, headers=headers)
    assert resp.status_code == 201, resp.text
    return resp.json()["status"]["userInfo"]


# -- allowed, and evaluated as the impersonated identity -------------------------------------------

def test_reader_reads_with_the_askers_rbac(client: Client) -> None:
    reader = client("reader")  # the fixture's kube-mcp identity (group sleuth:readers)
    as_alice = _as("alice", "shop-devs")
    pods = reader.get(SHOP_PODS, headers=as_alice)
    assert pods.status_code == 200 and "worker-0" in {p["metadata"]["name"] for p in pods.json()["items"]}
    # the reader itself may list every namespace's pods; as alice it may not read pay's
    assert reader.get(PAY_PODS).status_code == 200
    assert _forbidden(reader.get(PAY_PODS, headers=as_alice)) == \
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "pay"'
    # cluster-scoped kinds and logs too: the asker's RBAC decides, not the reader's
    assert _forbidden(reader.get("/api/v1/nodes", headers=as_alice)).endswith(
        'User "alice" cannot list resource "nodes" in API group "" at the cluster scope')
    assert reader.get(f"{SHOP_PODS}/web-6d4cf56db6-abcde/log", headers=_as("dave")).status_code == 403
    # groups are the asker's own: without them alice is only system:authenticated
    assert _forbidden(reader.get(SHOP_PODS, headers=_as("alice"))).startswith('pods is forbidden: User "alice"')


def test_self_reviews_see_the_impersonated_identity(client: Client) -> None:
    reader = client("reader")
    assert _whoami(reader, _as("alice", "shop-devs")) == {
        "username": "alice", "groups": ["shop-devs", "system:authenticated"]}
    # system:authenticated given explicitly is not added twice
    assert _whoami(reader, _as("alice", "system:authenticated", "shop-devs"))["groups"] == \
        ["system:authenticated", "shop-devs"]
    ssar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "pay"}}}
    answer = reader.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=ssar,
                         headers=_as("alice", "shop-devs"))
    assert answer.json()["status"]["allowed"] is False
    assert reader.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=ssar,
                       headers=_as("bob", "pay-devs")).json()["status"]["allowed"] is True


def test_service_accounts_get_their_groups(client: Client) -> None:
    reader = client("reader")
    sa = "system:serviceaccount:pay:ci"
    assert _whoami(reader, _as(sa)) == {"username": sa, "groups": [
        "system:serviceaccounts", "system:serviceaccounts:pay", "system:authenticated"]}
    assert reader.get(PAY_PODS, headers=_as(sa)).status_code == 200  # RoleBinding to ServiceAccount pay/ci
    # given groups replace the service account's own
    assert _whoami(reader, _as(sa, "x"))["groups"] == ["x", "system:authenticated"]
    # not a valid service-account name: an ordinary user of that name
    assert _whoami(reader, _as("system:serviceaccount:Pay:ci"))["username"] == "system:serviceaccount:Pay:ci"


def test_uid_extras_and_anonymous(sim: SimCluster, client: Client) -> None:
    root = client("root")  # system:masters may impersonate anything
    info = _whoami(root, _as("alice", "shop-devs", **{"Impersonate-Uid": "u-1", "Impersonate-Extra-Scopes": "view",
                                                      "Impersonate-Extra-Acme.com%2fteam": "a"}))
    assert info == {"username": "alice", "uid": "u-1", "groups": ["shop-devs", "system:authenticated"],
                    "extra": {"scopes": ["view"], "acme.com/team": ["a"]}}
    # anonymous is system:unauthenticated, not authenticated: not even system:basic-user's reviews
    assert _forbidden(root.post(SSR, json={}, headers=_as("system:anonymous"))).endswith(
        'User "system:anonymous" cannot create resource "selfsubjectreviews" in API group '
        '"authentication.k8s.io" at the cluster scope')
    assert sim.audit.records()[-1].impersonated_groups == ("system:unauthenticated",)
    # the reader may impersonate users and groups, not uids or extras
    reader = client("reader")
    assert _forbidden(reader.get(SHOP_PODS, headers=_as("alice", **{"Impersonate-Uid": "u-1"}))) == (
        'uids.authentication.k8s.io "u-1" is forbidden: User "reader" cannot impersonate resource "uids" '
        'in API group "authentication.k8s.io" at the cluster scope')
    assert _forbidden(reader.get(SHOP_PODS, headers=_as("alice", **{"Impersonate-Extra-Scopes": "view"}))) == (
        'userextras.authentication.k8s.io "view" is forbidden: User "reader" cannot impersonate resource '
        '"userextras/scopes" in API group "authentication.k8s.io" at the cluster scope')


# -- refused -----------------------------------------------------------------------------------------

def test_tenants_cannot_impersonate(client: Client) -> None:
    alice = client("alice")
    assert _forbidden(alice.get(PAY_PODS, headers=_as("bob", "pay-devs"))) == (
        'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" '
        'at the cluster scope')
    body = alice.get(PAY_PODS, headers=_as("bob")).json()
    assert body["details"] == {"name": "bob", "kind": "users"}
    assert _forbidden(client("dave").get(SHOP_PODS, headers=_as("system:serviceaccount:pay:ci"))) == (
        'serviceaccounts "ci" is forbidden: User "dave" cannot impersonate resource "serviceaccounts" '
        'in API group "" in the namespace "pay"')


def test_groups_without_a_user_is_upstreams_internal_error(client: Client) -> None:
    resp = client("reader").get(SHOP_PODS, params={"limit": "5"}, headers=_as(None, "shop-devs"))
    assert resp.status_code == 500 and resp.headers["content-type"].startswith("text/plain")
    assert resp.text == ('Internal Server Error: "/api/v1/namespaces/shop/pods?limit=5": '
                         "requested [{Group  shop-devs    }] without impersonating a user\n")


def test_impersonation_needs_an_authenticated_requester(client: Client) -> None:
    anon = client()
    assert anon.get(SHOP_PODS, headers=_as("alice", "shop-devs")).status_code == 401
    assert anon.get("/healthz", headers=_as("alice")).status_code == 401
    assert anon.get("/healthz").status_code == 200


def test_each_piece_is_authorized_by_name(tmp_path: Path) -> None:
    """A helpdesk may act as alice in shop-devs only: another user or group is refused by name."""
    (tmp_path / "cluster").mkdir()
    (tmp_path / "snapshot.yaml").write_text(yaml.safe_dump({"name": "t", "users": {
        "helpdesk": {"token": "hd"}, "alice": {"groups": ["shop-devs"], "token": "a"}}}))
    (tmp_path / "cluster" / "rbac.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "hd"},
         "rules": [{"apiGroups": [""], "resources": ["users"], "resourceNames": ["alice"], "verbs": ["impersonate"]},
                   {"apiGroups": [""], "resources": ["groups"], "resourceNames": ["shop-devs"],
                    "verbs": ["impersonate"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "hd"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "hd"},
         "subjects": [{"kind": "User", "name": "helpdesk"}]},
    ]))
    with TestClient(create_app(load_snapshot(tmp_path)), headers={"Authorization": "Bearer hd"}) as c:
        assert c.post(SSR, json={}, headers=_as("alice", "shop-devs")).json()["status"]["userInfo"]["username"] \
            == "alice"
        assert c.get("/api/v1/namespaces/default/pods", headers=_as("bob")).json()["message"].startswith(
            'users "bob" is forbidden: User "helpdesk" cannot impersonate')
        assert c.get("/api/v1/namespaces/default/pods", headers=_as("alice", "pay-devs")).json()["message"] == (
            'groups "pay-devs" is forbidden: User "helpdesk" cannot impersonate resource "groups" in API group "" '
            'at the cluster scope')


# -- audit -------------------------------------------------------------------------------------------

def test_audit_records_who_read_as_whom(sim: SimCluster, client: Client) -> None:
    sim.audit.clear()
    reader = client("reader")
    reader.get(SHOP_PODS, headers=_as("alice", "shop-devs"))
    reader.get(PAY_PODS, headers=_as("alice", "shop-devs"))
    client("alice").get(PAY_PODS, headers=_as("bob"))
    reader.get("/api/v1/nodes")
    client().get("/healthz")  # unauthenticated probes are not recorded
    records = sim.audit.records()
    got = [(r.user, r.impersonated_user, r.impersonated_groups, r.verb, r.resource, r.namespace, r.code)
           for r in records]
    assert got == [
        ("reader", "alice", ("shop-devs", "system:authenticated"), "list", "pods", "shop", 200),
        ("reader", "alice", ("shop-devs", "system:authenticated"), "list", "pods", "pay", 403),
        ("alice", "bob", (), "", "", "", 403),  # refused before the request was looked at
        ("reader", "", (), "list", "nodes", "", 200),
    ]
    assert records[0].effective_user == "alice" and records[3].effective_user == "reader"
    assert records[0].groups == ("sleuth:readers", "system:authenticated")
    assert records[2].path == PAY_PODS


def test_audit_is_bounded(fixture_snapshot: Path) -> None:
    app = create_app(load_snapshot(fixture_snapshot))
    app.state.api.audit = type(app.state.api.audit)(maxlen=3)
    with TestClient(app, headers={"Authorization": "Bearer fx-alice-token"}) as c:
        for _ in range(5):
            c.get(SHOP_PODS)
    assert len(app.state.api.audit) == 3


# -- Sleuth's identities on the demo snapshot --------------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, demo_snapshot: Path) -> Iterator[SimCluster]:
    with SimCluster(demo_snapshot, tmp_path_factory.mktemp("demo")) as running:
        yield running


def _demo_client(sim: SimCluster, user: str) -> httpx.Client:
    return httpx.Client(base_url=sim.url, verify=ssl.create_default_context(cafile=str(sim.ca_file)),
                        headers={"Authorization": f"Bearer {sim.token(user)}"}, timeout=10)


def _may_impersonate(sim: SimCluster, user: str, groups: list[str], resource: str, name: str) -> bool:
    with _demo_client(sim, "sleuth-authz") as c:
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": user, "groups": groups,
                         "resourceAttributes": {"verb": "impersonate", "resource": resource, "name": name}}}
        return bool(c.post(SAR, json=body).json()["status"]["allowed"])


def test_demo_reader_impersonates_and_tenants_cannot(demo: SimCluster) -> None:
    users = yaml.safe_load((Path(demo.snapshot_dir) / "snapshot.yaml").read_text())["users"]
    assert _may_impersonate(demo, "sleuth-reader", ["sleuth:readers"], "users", "alice")
    assert _may_impersonate(demo, "sleuth-reader", ["sleuth:readers"], "groups", "team-a")
    assert _may_impersonate(demo, "sleuth-reader", ["sleuth:readers"], "serviceaccounts", "x")
    assert not _may_impersonate(demo, "sleuth-authz", ["sleuth:authz"], "users", "alice")
    for tenant in ("alice", "bob"):
        for resource, name in (("users", "carol"), ("groups", "platform-admins"), ("serviceaccounts", "x")):
            assert not _may_impersonate(demo, tenant, users[tenant]["groups"], resource, name), (tenant, resource)
        with _demo_client(demo, tenant) as c:
            assert "cannot impersonate" in _forbidden(c.get("/api/v1/pods", headers=_as("carol", "platform-admins")))
    # carol is cluster-admin (verbs "*"): like on a real cluster she may impersonate — and read all anyway
    assert _may_impersonate(demo, "carol", users["carol"]["groups"], "users", "alice")


def test_demo_reader_as_alice(demo: SimCluster) -> None:
    with _demo_client(demo, "sleuth-reader") as reader:
        as_alice = _as("alice", "team-a")
        own = reader.get("/api/v1/namespaces/team-a/pods", headers=as_alice)
        assert own.status_code == 200 and own.json()["items"]
        assert _forbidden(reader.get("/api/v1/namespaces/team-b/pods", headers=as_alice)).startswith(
            'pods is forbidden: User "alice" cannot list')
        assert reader.get("/api/v1/namespaces/team-a/secrets", headers=as_alice).status_code == 403
        table = reader.get("/api/v1/namespaces/team-a/pods", headers=[
            *as_alice, ("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")])
        assert table.json()["kind"] == "Table"
    assert any(r.user == "sleuth-reader" and r.impersonated_user == "alice" and r.namespace == "team-a"
               and r.code == 200 for r in demo.audit.records())


# -- the identities the loader adds ------------------------------------------------------------------

def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_loader_adds_sleuths_identities(tmp_path: Path) -> None:
    _write(tmp_path / "snapshot.yaml", "name: t\nusers:\n  alice: {groups: [team-a], token: a}\n")
    _write(tmp_path / "cluster" / "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n")
    snap = load_snapshot(tmp_path)
    assert snap.users["sleuth-reader"].groups == ("sleuth:readers",)
    assert snap.users["sleuth-authz"].groups == ("sleuth:authz",)
    roles = {r["metadata"]["name"] for r in snap.store.list(("rbac.authorization.k8s.io", "clusterroles"))}
    assert {"sleuth-reader", "sleuth-impersonator", "sleuth-authz"} <= roles
    with TestClient(create_app(snap)) as c:
        reader = {"Authorization": f"Bearer {snap.users['sleuth-reader'].token}"}
        authz = {"Authorization": f"Bearer {snap.users['sleuth-authz'].token}"}
        assert c.post(SSR, json={}, headers=[*reader.items(), *_as("alice", "team-a")]).status_code == 201
        assert c.get("/api/v1/namespaces", headers=authz).status_code == 200
        assert c.get("/api/v1/pods", headers=authz).status_code == 200
        assert c.get("/api/v1/secrets", headers=reader).status_code == 403  # never Secrets
        assert c.get("/api/v1/pods", headers={"Authorization": "Bearer a", **dict(_as("sleuth-reader"))}) \
            .status_code == 403


def test_a_snapshots_own_definition_wins(tmp_path: Path) -> None:
    _write(tmp_path / "snapshot.yaml", "name: t\nusers:\n  sleuth-reader: {groups: [readers], token: r}\n")
    _write(tmp_path / "cluster" / "rbac.yaml", yaml.safe_dump(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "sleuth-impersonator"}, "rules": []}))
    snap = load_snapshot(tmp_path)
    assert snap.users["sleuth-reader"].token == "r" and snap.users["sleuth-reader"].groups == ("readers",)
    with TestClient(create_app(snap), headers={"Authorization": "Bearer r"}) as c:
        assert c.get("/api/v1/pods", headers=_as("alice")).status_code == 403
