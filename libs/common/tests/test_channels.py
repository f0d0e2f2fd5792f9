"""A post several people read fits every reader: the intersection of their scopes."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sleuth_common.channels import intersect_scopes, member_entries, member_requesters
from sleuth_common.messages import ClusterScope, Requester, ScopeReply


def reply(user: str, **clusters: ClusterScope) -> ScopeReply:
    return ScopeReply(user=user, clusters=clusters)


WIDE = ClusterScope(namespaces=("team-a", "team-b", "kube-system"), cluster_wide=True,
                    cluster_kinds=("nodes", "storageclasses"), secret_namespaces=("team-a", "team-b", "kube-system"))
A = ClusterScope(namespaces=("team-a", "shared"), cluster_kinds=("storageclasses",), secret_namespaces=("team-a",))
B = ClusterScope(namespaces=("team-b", "shared"), secret_namespaces=("shared",))


@dataclass(frozen=True)
class Case:
    name: str
    replies: tuple[ScopeReply, ...]
    expect: dict[str, ClusterScope]


CASES = [
    Case("an admin's mark narrowed to the member", (reply("carol", demo=WIDE), reply("alice", demo=A)),
         {"demo": ClusterScope(namespaces=("shared", "team-a"), cluster_kinds=("storageclasses",),
                               secret_namespaces=("team-a",))}),
    Case("two tenants share only what both read", (reply("alice", demo=A), reply("bob", demo=B)),
         {"demo": ClusterScope(namespaces=("shared",))}),
    Case("nothing in common: no cluster", (reply("alice", demo=ClusterScope(namespaces=("team-a",))),
                                           reply("bob", demo=ClusterScope(namespaces=("team-b",)))), {}),
    Case("a cluster one member cannot read is left out", (reply("carol", demo=WIDE, prod=WIDE), reply("alice", demo=A)),
         {"demo": ClusterScope(namespaces=("shared", "team-a"), cluster_kinds=("storageclasses",),
                               secret_namespaces=("team-a",))}),
    Case("all cluster-wide stays cluster-wide", (reply("carol", demo=WIDE), reply("dave", demo=WIDE)), {"demo": WIDE}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_intersection(case: Case) -> None:
    got = intersect_scopes(case.replies)
    assert got.clusters == case.expect and got.user == case.replies[0].user


def test_members_become_identities_to_resolve() -> None:
    assert member_entries(["user:alice", "group:team-a", "ops", "group:team-a", "user:"]) == (
        "group:ops", "group:team-a", "user:alice", "user:ops")
    assert member_requesters(["user:alice", "group:platform-admins"]) == (
        Requester(user="", groups=("platform-admins",)), Requester(user="alice"))
