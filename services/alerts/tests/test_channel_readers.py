"""Who an alert answer is fitted to, in a chat whose members only the gateway knows
(``mattermost:<channel_id>``): the members it lists with ``alerts on|status`` are stored with the
mark, intersected with the marker's scope, signed into the job, and named on the post
(``meta["readers"]``) so the gateway can refuse it to anyone else. Real nats-server and Valkey."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sleuth_alerts.store import Store
from sleuth_common.channels import audience_claims
from sleuth_common.identity import IdentityVerifier, generate_keypair, load_public_key
from sleuth_common.messages import AlertChannelReply, AlertChannelRequest, Requester
from sleuth_common.messages.audit import parse_audit_event
from sleuth_common.subjects import Subjects

from .conftest import ROUTES, Running, alert, payload

pytestmark = pytest.mark.connected

MM = "mattermost:c0ffee42"
ROUTES_MM: list[dict[str, Any]] = [
    *ROUTES,
    {"name": "mm", "channel": MM, "token_env": "TEST_ALERTS_TOKEN_A", "run_as": {"user": "alice", "groups": ["team-a"]}},
]
ALICE = Requester(user="alice", groups=("team-a",))
BOB = Requester(user="bob", groups=("team-b",))
# alice and bob share one namespace; each has their team's alone.
SHARED = {"alice": {"demo": ("shared", "team-a")}, "bob": {"demo": ("shared", "team-b")}}
TEAM_A_POD, SHARED_POD = "payroll-db-0", "ingress-gw-5f6c7d8e9-q2w3e"


@pytest.fixture
def signing(tmp_path: Path) -> tuple[dict[str, Any], IdentityVerifier]:
    """Identity settings signing with a fresh key, and the agent's verifier of it."""
    private, public = generate_keypair()
    (tmp_path / "alerts.key").write_bytes(private)
    verifier = IdentityVerifier(
        issuer_keys={"sleuth-alerts": [load_public_key(public)]}, issuers=(), audience="sleuth-agent"
    )
    return {"signing_key_file": str(tmp_path / "alerts.key"), "signing_key_env": ""}, verifier


async def ask(
    s: Running, op: str, who: Requester, members: tuple[Requester, ...] = (), channel: str = MM
) -> AlertChannelReply:
    req = AlertChannelRequest(op=op, channel=channel, user=who.user, groups=who.groups, members=members)
    msg = await s.bus.nc.request(f"{s.settings.prefix}.alerts.channels.{op}", req.to_bytes(), timeout=5)
    return AlertChannelReply.model_validate_json(msg.data)


def store(s: Running) -> Store:
    return Store(s.alerts.redis, s.settings.prefix)


async def audit_events(nc: Any, at_least: int) -> list[Any]:
    """The events stored in the AUDIT stream so far (waiting until there are ``at_least``)."""
    subjects, events = Subjects("sleuth"), []
    sub = await nc.jetstream().subscribe(subjects.audit_all, stream=subjects.stream_audit, ordered_consumer=True)
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=5 if len(events) < at_least else 0.3)
            except TimeoutError:
                return events
            events.append(parse_audit_event(msg.data))
    finally:
        await sub.unsubscribe()


def pods(job_or_text: Any) -> set[str]:
    return {a.labels["pod"] for a in job_or_text.alerts}


async def test_a_mattermost_channel_is_fitted_to_the_members_the_gateway_listed(start_alerts, signing):
    identity, verifier = signing
    async with start_alerts(routes=ROUTES_MM, identity=identity) as s:
        s.bus.scopes = SHARED
        # The gateway lists everyone in the channel, alice too; a repeat is tolerated.
        on = await ask(s, "on", ALICE, members=(ALICE, BOB, Requester(user="bob", groups=("team-b", "team-b"))))
        assert on.ok and on.marked_by == "alice" and on.run_as == "alice"
        assert "2 members of this channel" in on.text
        assert (await store(s).get_mark(MM)).members == (ALICE, BOB)  # type: ignore[union-attr]

        await s.post("mm", payload(alert(TEAM_A_POD, "team-a"), alert(SHARED_POD, "shared")))
        (post,) = await s.bus.wait_posts(1)
        (job,) = s.bus.jobs
        assert job.requester == ALICE and BOB in job.audience and job.chat_target == MM
        assert {r.user for r in s.bus.scope_requests} == {"alice", "bob"}
        # bob reads the channel: team-a is not what everyone here may read, so only the shared
        # namespace's alert is investigated, and the team-a one is counted, never named.
        assert pods(job) == {SHARED_POD}
        assert "payroll" not in post.text and "1 outside" in post.text
        who = verifier.verify(job.identity)
        assert who.user == "alice" and set(who.members) == set(audience_claims(job.audience))
        assert json.loads(post.meta["readers"]) == ["alice|team-a", "bob|team-b"]

        # The audit trail: the mark, the webhook post, the batch investigated; counts, never a pod.
        events = await audit_events(s.bus.nc, 3)
        marked, received, batched = (next(e for e in events if e.kind == f"audit.{k}")
                                     for k in ("channel_marked", "alert_received", "alert_batched"))
        assert (marked.user, marked.op, marked.channel, marked.decision, marked.counts) == (
            "alice", "on", MM, "allowed", {"members": 2})
        assert (received.route, received.entry, received.decision, received.counts["alerts"]) == (
            "mm", "alertmanager", "allowed", 2)
        assert (batched.job_id, batched.user, batched.decision) == (job.id, "alice", "allowed")
        assert (batched.counts["alerts"], batched.counts["hidden"]) == (1, 1)
        assert all(e.service == "alerts" for e in events)
        assert not any(name in e.model_dump_json() for e in events for name in (TEAM_A_POD, SHARED_POD, "payroll"))

        # bob left: the gateway's member list with the next `alerts status` replaces the stored one.
        status = await ask(s, "status", ALICE, members=(ALICE,))
        assert status.run_as == "alice" and "1 member of this channel" in status.text
        assert (await store(s).get_mark(MM)).members == (ALICE,)  # type: ignore[union-attr]
        again = payload(alert("checkout-api-2", "team-a"))
        again["groupKey"] = "other"
        await s.post("mm", again)
        await s.bus.wait_posts(2)
        assert pods(s.bus.jobs[1]) == {"checkout-api-2"}
        assert set(audience_claims(s.bus.jobs[1].audience)) == set(verifier.verify(s.bus.jobs[1].identity).members)
        assert json.loads(s.bus.posts[1].meta["readers"]) == ["alice|team-a"]


async def test_alerts_on_without_members_is_refused_and_nothing_is_investigated(start_alerts):
    async with start_alerts(routes=ROUTES_MM) as s:
        on = await ask(s, "on", ALICE)
        assert not on.ok and "cannot tell me who reads the channel" in on.text and on.run_as == ""
        assert await store(s).get_mark(MM) is None
        status = await ask(s, "status", ALICE)
        assert status.run_as == "" and "route's own identity is not used" in status.text

        # The route names alice, but nobody knows who reads the channel: listed, not investigated.
        await s.post("mm", payload(alert(TEAM_A_POD, "team-a")))
        (post,) = await s.bus.wait_posts(1)
        assert not s.bus.jobs and not s.bus.scope_requests
        assert post.meta["outcome"] == "no_readers" and "readers" not in post.meta
        assert "does not know who reads this channel" in post.text and "`alerts on`" in post.text


async def test_a_mark_stored_without_members_still_loads(start_alerts):
    async with start_alerts(routes=ROUTES_MM) as s:
        old = {"user": "bob", "groups": json.dumps(["team-b"]), "at": "1700000000.5"}
        for target in ("web:lost", MM):
            await s.alerts.redis.hset(f"{s.settings.prefix}:alerts:mark:{target}", mapping=old)  # type: ignore[misc]
            mark = await store(s).get_mark(target)
            assert mark is not None and (mark.user, mark.groups, mark.members) == ("bob", ("team-b",), ())

        # A web channel: as before, investigated as bob.
        await s.post("nobody", payload(alert("inventory-db-1", "team-b")))
        (post,) = await s.bus.wait_posts(1)
        assert s.bus.jobs[0].requester == BOB and json.loads(post.meta["readers"]) == ["bob|team-b"]

        # Elsewhere the readers are unknown: listed, not investigated, until `alerts status` lists them.
        await s.post("mm", payload(alert("inventory-db-2", "team-b")))
        await s.bus.wait_posts(2)
        assert len(s.bus.jobs) == 1 and s.bus.posts[1].meta["outcome"] == "no_readers"
        assert "`alerts status`" in s.bus.posts[1].text
        assert (await ask(s, "status", BOB)).run_as == ""  # still no members: nothing changes
        assert (await ask(s, "status", BOB, members=(BOB,))).run_as == "bob"
        again = payload(alert("inventory-db-3", "team-b"))
        again["groupKey"] = "other"
        await s.post("mm", again)
        await s.bus.wait_posts(3)
        assert len(s.bus.jobs) == 2 and s.bus.jobs[1].audience == (BOB,)


async def test_a_web_channel_post_names_its_configured_readers(start_alerts):
    gateway = {"channels": [{"name": "team-a-alerts", "members": ["user:alice", "user:bob"]}]}
    async with start_alerts(gateway=gateway) as s:
        await s.post("team-a", payload(alert(TEAM_A_POD, "team-a")))
        (post,) = await s.bus.wait_posts(1)
        # bob reads team-a-alerts too: alice's team-a alert is outside what they both may read.
        assert not s.bus.jobs and post.meta["outcome"] == "outside_access"
        assert json.loads(post.meta["readers"]) == ["alice|team-a", "bob|"]
