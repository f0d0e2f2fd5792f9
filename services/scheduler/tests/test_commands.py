"""The schedule commands over the bus (real nats-server and Valkey): who sees which schedules,
who may change them, the limits, and what a refusal says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sleuth_common.messages import Requester
from sleuth_scheduler.commands import ID_ALPHABET
from sleuth_scheduler.grammar import EXAMPLE

from .conftest import ALICE, BOB, CAROL

pytestmark = pytest.mark.connected

CHANNEL = "web:team-a-alerts"
READERS = (ALICE, CAROL)


async def test_a_private_schedule_is_its_owners_alone(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        made = await r.ask("create", text="every weekday at 09:00 in Europe/Berlin what is failing in team-a?")
        assert made.ok, made.text
        (s,) = made.schedules
        assert len(s.id) >= 8 and set(s.id) <= set(ID_ALPHABET)
        assert (s.owner, s.target, s.spec, s.tz, s.question) == (
            "alice", "conversation:alice", "every weekday at 09:00", "Europe/Berlin", "what is failing in team-a?")
        assert len(s.next_runs) == 3 and all(t.endswith(("+01:00", "+02:00")) for t in s.next_runs)
        assert f"`{s.id}`" in made.text and "private conversation" in made.text

        mine = await r.ask("list")
        assert [x.id for x in mine.schedules] == [s.id]
        assert s.id in mine.text

        theirs = await r.ask("list", BOB, "conversation:bob")
        assert theirs.ok and theirs.schedules == () and s.id not in theirs.text
        for op in ("delete", "run", "pause", "resume"):
            refused = await r.ask(op, BOB, "conversation:bob", id=s.id)
            assert not refused.ok
            assert "I know no schedule" in refused.text and "alice" not in refused.text, op
            assert refused.schedules == ()
        assert [x.id for x in (await r.ask("list")).schedules] == [s.id]

        gone = await r.ask("delete", id=s.id)
        assert gone.ok and "Deleted" in gone.text
        assert (await r.ask("list")).schedules == ()


async def test_someone_elses_private_conversation_is_refused(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        for op in ("create", "list"):
            reply = await r.ask(op, BOB, "conversation:alice", text="every day q")
            assert not reply.ok and "someone else's private conversation" in reply.text


async def test_a_channel_schedule_is_seen_by_the_channel_and_changed_by_its_owner(
        start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        made = await r.ask("create", target=CHANNEL, members=READERS, thread="root-1",
                           text="every day at 08:00 how is checkout?")
        assert made.ok, made.text
        (s,) = made.schedules
        assert s.thread == "root-1"
        assert "2 readers of this channel" in made.text

        seen = await r.ask("list", CAROL, CHANNEL, members=READERS)
        assert [x.id for x in seen.schedules] == [s.id] and "**alice**" in seen.text
        refused = await r.ask("delete", CAROL, CHANNEL, id=s.id)
        assert not refused.ok and "Only **alice**, who made schedule" in refused.text
        assert (await r.ask("run", CAROL, CHANNEL, id=s.id)).ok is False

        # bob reads neither the channel nor alice's conversation: nothing of it shows for him
        assert (await r.ask("list", BOB, "conversation:bob")).schedules == ()
        assert "I know no schedule" in (await r.ask("pause", BOB, "conversation:bob", id=s.id)).text
        # the owner sees it from her private conversation too, with where it posts
        mine = await r.ask("list")
        assert [x.id for x in mine.schedules] == [s.id] and CHANNEL in mine.text

        paused = await r.ask("pause", target=CHANNEL, id=s.id)
        assert paused.ok and paused.schedules[0].paused and paused.schedules[0].next_runs == ()
        resumed = await r.ask("resume", id=s.id)
        assert resumed.ok and not resumed.schedules[0].paused and len(resumed.schedules[0].next_runs) == 3


async def test_a_channel_that_does_not_say_who_reads_it_gets_no_schedule(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        reply = await r.ask("create", target=CHANNEL, text="every day q")
        assert not reply.ok and "who reads this channel" in reply.text
        assert (await r.ask("list", target=CHANNEL)).schedules == ()


async def test_listing_a_channel_refreshes_its_readers_and_a_command_the_owners_groups(
        start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        (s,) = (await r.ask("create", target=CHANNEL, members=READERS, text="every day q")).schedules
        dave = Requester(user="dave", groups=("contractors",))
        await r.ask("list", CAROL, CHANNEL, members=(*READERS, dave))
        store = r.scheduler.store
        assert store is not None
        stored = await store.get(s.id)
        assert stored is not None and dave in stored.members and stored.audience() == (CAROL, dave)
        # alice lost a group at her identity provider: her next command says so
        await r.ask("list", Requester(user="alice", groups=()))
        stored = await store.get(s.id)
        assert stored is not None and stored.owner.groups == ()


async def test_unparsable_schedules_get_the_grammar_and_an_example(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        reply = await r.ask("create", text="whenever you like what is failing")
        assert not reply.ok and EXAMPLE in reply.text and "every <interval>" in reply.text
        zone = await r.ask("create", text="every day in Europe/Berln q")
        assert not zone.ok and "`Europe/Berln`" in zone.text
        often = await r.ask("create", text="every 2 minutes q")
        assert not often.ok and "5 minutes" in often.text
        assert (await r.ask("list")).schedules == ()


async def test_the_askers_zone_from_the_gateway_and_a_bad_one(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler(default_tz="Europe/Paris") as r:
        tokyo = await r.ask("create", text="every day at 09:00 q", tz="Asia/Tokyo")
        assert tokyo.schedules[0].tz == "Asia/Tokyo"
        fallback = await r.ask("create", text="every day at 09:00 q", tz="Nowhere/Special")
        assert fallback.schedules[0].tz == "Europe/Paris"


async def test_limits_per_person_and_per_target(start_scheduler: Callable[..., Any]) -> None:
    dave = Requester(user="dave", groups=("team-a",))
    everyone = (ALICE, BOB, CAROL, dave)
    async with start_scheduler(max_per_user=2, max_per_target=3) as r:
        for _ in range(2):
            assert (await r.ask("create", text="every day q")).ok
        full = await r.ask("create", target=CHANNEL, members=everyone, text="every day q")
        assert not full.ok and "You have 2 schedules already" in full.text
        for who in (CAROL, CAROL, BOB):
            assert (await r.ask("create", who, CHANNEL, members=everyone, text="every day q")).ok
        crowded = await r.ask("create", dave, CHANNEL, members=everyone, text="every day q")
        assert not crowded.ok and "This channel has 3 schedules already" in crowded.text
        assert len((await r.ask("list", dave, CHANNEL, members=everyone)).schedules) == 3


async def test_unknown_ids_and_malformed_requests(start_scheduler: Callable[..., Any]) -> None:
    async with start_scheduler() as r:
        reply = await r.ask("delete", id="nosuchid99")
        assert not reply.ok and "`nosuchid99`" in reply.text
        msg = await r.nc.request("sleuth.schedules.create", b"{not json", timeout=5)
        assert b"malformed" in msg.data
