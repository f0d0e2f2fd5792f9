"""Scope candidates from RoleBindings (bindings.py): the same scope as reviewing every namespace under
RBAC, never wider when the index is stale, and a fallback when the index cannot be had.

The backend here *is* an RBAC model: roles grant (verb, resource) pairs, bindings (cluster-wide or in
a namespace) give roles to users, groups and service accounts, matched as Kubernetes' RBAC does; a
SubjectAccessReview is evaluated against exactly those bindings, and ``role_bindings`` lists the
namespaced ones as the API server would. A resolution with candidates must equal one reviewing
every namespace, whatever the bindings.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_authz_cache.backend import Access, BackendError, Forbidden, TokenIdentity
from sleuth_authz_cache.bindings import BindingIndex, subject_keys
from sleuth_authz_cache.metrics import Metrics
from sleuth_authz_cache.scope import ScopeResolver
from sleuth_common.messages.authz import CLUSTER_KINDS

NAMESPACES = ["kube-system", "team-a", "team-b", "team-c", "shared"]
ROLES = {
    "view": {("get", "pods"), ("list", "pods")},
    "secrets": {("get", "secrets")},
    "cm-only": {("get", "configmaps")},
    "admin": {("*", "*")},
}


@dataclass(frozen=True)
class Binding:
    namespace: str | None  # None = ClusterRoleBinding
    role: str
    subjects: tuple[tuple[str, str, str], ...]  # (kind, name, namespace of a ServiceAccount or "")


def _applies(subject: tuple[str, str, str], binding_ns: str | None, user: str, groups: tuple[str, ...]) -> bool:
    kind, name, sa_ns = subject
    if kind == "User":
        return user == name
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        ns = sa_ns or binding_ns or ""
        return bool(ns) and user == f"system:serviceaccount:{ns}:{name}"
    return False


def _grants(role: str, verb: str, resource: str) -> bool:
    return any(v in (verb, "*") and r in (resource, "*") for v, r in ROLES[role])


@dataclass
class RbacBackend:
    bindings: list[Binding]
    namespaces_: list[str] = field(default_factory=lambda: list(NAMESPACES))
    forbid_rolebindings: bool = False
    fail_rolebindings: bool = False
    calls: Counter[str] = field(default_factory=Counter)

    async def access(self, cluster: str, user: str, groups: tuple[str, ...], access: Access) -> bool:
        self.calls["review"] += 1
        for b in self.bindings:
            if b.namespace is not None and b.namespace != access.namespace:
                continue  # a RoleBinding grants in its namespace only, never at cluster scope
            if not _grants(b.role, access.verb, access.resource):
                continue
            if any(_applies(s, b.namespace, user, groups) for s in b.subjects):
                return True
        return False

    async def review(self, cluster: str, user: str, groups: tuple[str, ...], namespace: str | None) -> bool:
        return await self.access(cluster, user, groups, Access("get", "pods", "", namespace))

    async def namespaces(self, cluster: str) -> list[str]:
        self.calls["namespaces"] += 1
        return list(self.namespaces_)

    async def role_bindings(self, cluster: str) -> list[dict]:
        self.calls["role_bindings"] += 1
        await asyncio.sleep(0)
        if self.forbid_rolebindings:
            raise Forbidden("authz identity may not list rolebindings (403)")
        if self.fail_rolebindings:
            raise BackendError("timed out after 2s")
        return [{"metadata": {"name": f"rb-{i}", "namespace": b.namespace},
                 "roleRef": {"kind": "ClusterRole", "name": b.role},
                 "subjects": [{"kind": k, "name": n, **({"namespace": ns} if ns else {})} for k, n, ns in b.subjects]}
                for i, b in enumerate(self.bindings) if b.namespace is not None]

    async def token_review(self, cluster: str, token: str) -> TokenIdentity:
        return TokenIdentity(False)

    async def list_objects(self, cluster: str, resource: str) -> list[dict]:
        return []

    async def aclose(self) -> None:
        pass


ALICE = ("alice", ("team-a", "system:authenticated"))
ROBOT = ("system:serviceaccount:team-b:deployer", ("system:serviceaccounts", "system:serviceaccounts:team-b",
                                                    "system:authenticated"))


def resolver(backend: RbacBackend, candidates: str = "rolebindings", ttl: float = 30.0) -> ScopeResolver:
    return ScopeResolver(["c"], backend, concurrency=4, metrics=Metrics(), candidates=candidates,  # type: ignore[arg-type]
                         bindings_ttl=ttl)


async def scope(r: ScopeResolver, who: tuple[str, tuple[str, ...]]) -> object:
    reply = await r.resolve(*who)
    assert not reply.errors, reply.errors
    return reply.clusters["c"]


# -- the same scope as reviewing every namespace ----------------------------------------------------

_subjects = st.sampled_from([
    ("User", "alice", ""), ("User", "bob", ""), ("Group", "team-a", ""), ("Group", "team-b", ""),
    ("Group", "system:authenticated", ""), ("Group", "system:serviceaccounts:team-b", ""),
    ("ServiceAccount", "deployer", ""), ("ServiceAccount", "deployer", "team-b"),
    ("ServiceAccount", "deployer", "team-c"), ("Kind", "alice", ""),
])
_bindings = st.lists(st.builds(
    Binding,
    st.one_of(st.none(), st.sampled_from(NAMESPACES)),
    st.sampled_from(sorted(ROLES)),
    st.lists(_subjects, min_size=1, max_size=3).map(tuple),
), max_size=8)
_people = st.sampled_from([ALICE, ROBOT, ("bob", ("team-b", "system:authenticated")), ("carol", ())])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bindings=_bindings, who=_people)
def test_candidates_give_the_same_scope_as_every_namespace(bindings: list[Binding], who) -> None:
    async def both() -> None:
        fast_backend, slow_backend = RbacBackend(bindings), RbacBackend(bindings)
        fast = await scope(resolver(fast_backend), who)
        slow = await scope(resolver(slow_backend, "all"), who)
        assert fast == slow
        # and it reviewed no namespace that no RoleBinding of theirs could grant
        assert fast_backend.calls["review"] <= slow_backend.calls["review"]

    asyncio.run(both())


async def test_a_tenant_is_reviewed_only_where_bindings_name_them() -> None:
    backend = RbacBackend([Binding("team-a", "view", (("Group", "team-a", ""),)),
                           Binding("team-b", "view", (("Group", "team-b", ""),)),
                           Binding("team-a", "secrets", (("User", "alice", ""),))])
    backend.namespaces_ = [*NAMESPACES, *(f"ns-{i}" for i in range(500))]
    s = await scope(resolver(backend), ALICE)
    assert s.namespaces == ("team-a",) and s.secret_namespaces == ("team-a",) and not s.cluster_wide
    # 1 cluster review + kinds + 1 namespace + 1 secret — not one per namespace of 505
    assert backend.calls["review"] == 1 + len(CLUSTER_KINDS) + 2, backend.calls
    assert backend.calls["namespaces"] == 0


async def test_a_service_account_matches_its_subject_with_or_without_a_namespace() -> None:
    backend = RbacBackend([Binding("team-b", "view", (("ServiceAccount", "deployer", ""),)),  # the binding's own ns
                           Binding("team-c", "view", (("ServiceAccount", "deployer", "team-b"),)),
                           Binding("shared", "view", (("ServiceAccount", "deployer", ""),))])  # shared's deployer
    s = await scope(resolver(backend), ROBOT)
    assert s.namespaces == ("team-b", "team-c")
    assert subject_keys(ROBOT[0], ())[-1] == "sa:team-b/deployer"
    assert subject_keys("system:serviceaccount:bad", ()) == ["user:system:serviceaccount:bad"]


async def test_cluster_wide_readers_get_secrets_reviewed_only_in_candidate_namespaces() -> None:
    backend = RbacBackend([Binding(None, "view", (("Group", "viewers", ""),)),
                           Binding("shared", "secrets", (("Group", "viewers", ""),))])
    backend.namespaces_ = [*NAMESPACES, *(f"ns-{i}" for i in range(300))]
    s = await scope(resolver(backend), ("vic", ("viewers",)))
    assert s.cluster_wide and len(s.namespaces) == 305 and s.secret_namespaces == ("shared",)
    assert backend.calls["review"] < 30, backend.calls


# -- stale, forbidden, failing ----------------------------------------------------------------------

async def test_a_stale_index_narrows_until_invalidated_never_widens() -> None:
    granted = Binding("team-b", "view", (("User", "alice", ""),))
    backend = RbacBackend([Binding("team-a", "view", (("Group", "team-a", ""),)), granted])
    r = resolver(backend)
    assert (await scope(r, ALICE)).namespaces == ("team-a", "team-b")
    backend.bindings.remove(granted)  # revoked: the index still names team-b, its review says no
    assert (await scope(r, ALICE)).namespaces == ("team-a",)
    backend.bindings.append(Binding("team-c", "view", (("User", "alice", ""),)))  # granted after the build
    assert (await scope(r, ALICE)).namespaces == ("team-a",)  # not yet seen: narrower, never wider
    assert backend.calls["role_bindings"] == 1
    r.invalidate()
    assert (await scope(r, ALICE)).namespaces == ("team-a", "team-c")
    assert backend.calls["role_bindings"] == 2


async def test_the_index_is_rebuilt_after_its_ttl() -> None:
    backend = RbacBackend([Binding("team-a", "view", (("Group", "team-a", ""),))])
    r = resolver(backend, ttl=0.05)
    await scope(r, ALICE)
    await scope(r, ALICE)
    assert backend.calls["role_bindings"] == 1
    await asyncio.sleep(0.06)
    await scope(r, ALICE)
    assert backend.calls["role_bindings"] == 2


async def test_concurrent_resolutions_share_one_build() -> None:
    backend = RbacBackend([Binding("team-a", "view", (("Group", "team-a", ""),))])
    r = resolver(backend)
    people = [(f"u{i}", ("team-a",)) for i in range(20)]
    scopes = await asyncio.gather(*(scope(r, p) for p in people))
    assert {s.namespaces for s in scopes} == {("team-a",)}
    assert backend.calls["role_bindings"] == 1


async def test_without_list_rolebindings_every_namespace_is_reviewed_and_the_403_is_remembered() -> None:
    backend = RbacBackend([Binding("team-a", "view", (("Group", "team-a", ""),))], forbid_rolebindings=True)
    r = resolver(backend)
    assert (await scope(r, ALICE)).namespaces == ("team-a",)
    assert (await scope(r, ("bob", ("team-a",)))).namespaces == ("team-a",)
    assert backend.calls["namespaces"] == 2 and backend.calls["role_bindings"] == 1
    assert r._metrics.binding_index.labels("c", "fallback")._value.get() == 2


async def test_an_index_that_cannot_be_built_fails_the_cluster_closed() -> None:
    backend = RbacBackend([Binding("team-a", "view", (("Group", "team-a", ""),))], fail_rolebindings=True)
    reply = await resolver(backend).resolve(*ALICE)
    assert reply.clusters == {} and "timed out" in reply.errors["c"]


def test_bindings_outside_a_namespace_or_without_names_are_ignored() -> None:
    index = BindingIndex()
    for doc in ({"metadata": {"name": "x"}, "subjects": [{"kind": "User", "name": "alice"}]},  # no namespace
                {"metadata": {"namespace": "a"}, "subjects": [{"kind": "User"}, "junk", {"kind": "Group", "name": ""}]},
                {"metadata": {"namespace": "b"}, "subjects": None},
                {"metadata": {"namespace": "c"}, "subjects": [{"kind": "Group", "name": "g"}]}):
        index.add(doc)
    assert index.candidates("alice", ["g"]) == {"c"}
