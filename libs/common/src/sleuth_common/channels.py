"""Posts that several people read (DESIGN §2; issue "channel posts scoped to every member").

Anything posted where several people read it — a web-chat channel, later a Mattermost channel —
is investigated with the **intersection** of the scopes of every member: an answer in a channel
shows only what every reader of that channel may read with their own credentials. Marking a
channel (``alerts on``) chooses whose identity reads the cluster, never widens what is shown.

A member entry is ``user:NAME``, ``group:NAME`` or a bare ``NAME`` (a user or a group: both are
intersected, the narrower wins). A group stands for the access membership in that group alone
gives (a review for the group with no user name): every member of it has at least that. A user
stands for their own bindings plus the groups Sleuth knows them by (see ``member_requesters``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.messages import ClusterScope, Requester, ScopeReply

__all__ = [
    "ChannelDirectory",
    "ChannelSettings",
    "audience_claims",
    "intersect_scopes",
    "member_entries",
    "member_requesters",
]


class ChannelSettings(BaseModel):
    """A named channel beside each person's private conversation (alert answers land here).

    ``members`` entries: ``user:NAME``, ``group:NAME``, or a bare ``NAME`` matching a user name or
    one of the user's groups (as authenticated from their token). Only members read or post, and
    what is posted there fits every member's access.
    """

    model_config = ConfigDict(extra="ignore")

    name: str
    """Channel name (``team-a-alerts``); the alert route's ``channel``."""
    members: list[str] = Field(default_factory=list)
    """Who may read and post: users and groups (see above)."""

    def admits(self, user: str, groups: tuple[str, ...]) -> bool:
        for entry in self.members:
            kind, _, name = entry.partition(":") if ":" in entry else ("", "", entry)
            if kind in ("", "user") and name == user:
                return True
            if kind in ("", "group") and name in groups:
                return True
        return False


class ChannelDirectory(BaseModel):
    """The channels of the stack (the ``gateway.channels`` section of the shared config file):
    services other than the gateway read it to know who reads a channel."""

    model_config = ConfigDict(extra="ignore")

    channels: list[ChannelSettings] = Field(default_factory=list)

    def channel(self, name: str) -> ChannelSettings | None:
        for c in self.channels:
            if c.name == name:
                return c
        return None


def member_entries(members: Iterable[str]) -> tuple[str, ...]:
    """Members normalised to ``user:NAME`` / ``group:NAME`` (a bare name as both), sorted."""
    out: set[str] = set()
    for entry in members:
        kind, _, name = entry.partition(":") if ":" in entry else ("", "", entry)
        name = name.strip()
        if not name:
            continue
        if kind in ("", "user"):
            out.add(f"user:{name}")
        if kind in ("", "group"):
            out.add(f"group:{name}")
    return tuple(sorted(out))


def member_requesters(members: Iterable[str], known: Iterable[Requester] = ()) -> tuple[Requester, ...]:
    """One identity per member whose scope must be resolved: a group as the access it alone
    gives; a user with the groups Sleuth knows them by (``known``: the identity investigating,
    e.g. the route's ``run_as``), else with none — groups come from the login, which Sleuth has
    not seen for that user, so the user counts with their own bindings only (fail closed: list a
    channel's groups as ``group:`` entries)."""
    groups_of = {r.user: tuple(r.groups) for r in known if r.user}
    out = []
    for entry in member_entries(members):
        kind, _, name = entry.partition(":")
        if kind == "user":
            out.append(Requester(user=name, groups=groups_of.get(name, ())))
        else:
            out.append(Requester(user="", groups=(name,)))
    return tuple(out)


def audience_claims(audience: Iterable[Requester]) -> tuple[str, ...]:
    """The members as signed into an assertion: ``user|group,group`` per identity, sorted, so a
    job's ``audience`` cannot be changed without breaking its signature."""
    return tuple(sorted({f"{r.user}|{','.join(sorted(set(r.groups)))}" for r in audience}))


def _meet(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    """Intersection where ``None`` is "everything"."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def intersect_scopes(replies: Sequence[ScopeReply]) -> ScopeReply:
    """What every one of ``replies`` may read: per cluster, the namespaces (and cluster-scoped
    kinds, and Secret namespaces) all of them have; ``cluster_wide`` only when all are; a cluster
    missing from one reply (no access, or its backend failed) is missing from the result.
    The first reply names the result (the identity that reads the cluster)."""
    if not replies:
        raise ValueError("no scopes to intersect")
    first = replies[0]
    clusters: dict[str, ClusterScope] = {}
    for name in first.clusters:
        parts = [r.clusters.get(name) for r in replies]
        if any(p is None for p in parts):
            continue
        namespaces: set[str] | None = None
        kinds: set[str] | None = None
        secrets: set[str] | None = None
        for p in parts:
            assert p is not None
            if p.cluster_wide:
                continue  # everything: narrows nothing
            namespaces = _meet(namespaces, set(p.namespaces))
            kinds = _meet(kinds, set(p.cluster_kinds))
            secrets = _meet(secrets, set(p.secret_namespaces))
        if namespaces is None:  # all cluster-wide
            clusters[name] = first.clusters[name]
            continue
        if namespaces:
            clusters[name] = ClusterScope(
                namespaces=tuple(sorted(namespaces)),
                cluster_kinds=tuple(sorted(kinds or ())),
                secret_namespaces=tuple(sorted((secrets or set()) & namespaces)),
            )
    errors: dict[str, str] = {}
    for r in replies:
        errors.update(r.errors)
    return ScopeReply(user=first.user, groups=first.groups, clusters=clusters, errors=errors,
                      cached=all(r.cached for r in replies))
