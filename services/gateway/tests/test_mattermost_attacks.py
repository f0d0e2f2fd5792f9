"""Attacks on the Mattermost bot, from its contract (README "In Mattermost", "Chat commands", the
alerts' Mattermost routes; ``MattermostSettings``): bob (team-b) and mallory (unmapped) try to read
an answer fitted to alice (team-a), or to make the bot ask as alice.

The gateway runs in-process against the fake Mattermost server (real REST v4 and WebSocket), real
nats-server and Valkey, with conftest.py's fake authz-cache and agent. The agent filters nothing:
what is checked is what the gateway sends it (``requester``, ``audience``, ``history``, the signed
``identity``) and what the bot posts where. An answer a person reads must come from a job whose
readers (requester and audience) include that person.

A test marked ``xfail(strict=True, reason="HOLE: ...")`` is a hole found: it states the safe
behaviour and fails today.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NatsClient

from sleuth_common.channels import audience_claims
from sleuth_common.messages import (
    AlertChannelReply,
    AlertChannelRequest,
    ChatPost,
    InvestigationJob,
    Requester,
)
from sleuth_common.subjects import Subjects
from sleuth_gateway.mattermost._text import for_mattermost
from tests.fakes.mattermost import Channel, FakeMattermost, User

from . import test_mattermost
from .conftest import default_result
from .test_mattermost import Bot, World, _verifier

pytestmark = pytest.mark.connected

# test_mattermost's fixtures, used here as they are there
world = test_mattermost.world
start_bot = test_mattermost.start_bot

ALICE = Requester(user="alice", groups=("team-a",))
BOB = Requester(user="bob", groups=("team-b",))
PEOPLE = [  # start_bot's mapping, and carol, whose address no Mattermost account holds at first
    {"email": "alice@example.com", "user": "alice", "groups": ["team-a"]},
    {"email": "bob@example.com", "user": "bob", "groups": ["team-b"]},
    {"email": "carol@example.com", "user": "carol", "groups": ["sre"]},
]
QUESTION = "@sleuth what is failing in team-a?"


# -- helpers ------------------------------------------------------------------------------------
def _tag(job_id: str) -> str:
    return f"job:{job_id}"


async def tagged(nc: NatsClient, subjects: Subjects, job: InvestigationJob) -> None:
    """conftest's diagnosis (in the requester's namespace), its text tagged with the job id, so a
    post can be traced to the job (and so to the readers) it was fitted to."""
    result = default_result(job)
    text = f"{result.answer_markdown}\n\n`{_tag(job.id)}`"
    await nc.publish(job.reply_subject, result.model_copy(update={"answer_markdown": text}).to_bytes())


@dataclass
class Gate:
    """An agent that holds each job until the test releases it (``received`` is set on arrival)."""

    received: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, nc: NatsClient, subjects: Subjects, job: InvestigationJob) -> None:
        self.received.set()
        await asyncio.wait_for(self.release.wait(), 10.0)
        await tagged(nc, subjects, job)


def unfit_for(bot: Bot, messages: list[str], reader: Requester) -> list[str]:
    """Of ``messages`` (what ``reader`` can read), those carrying an answer from a job whose
    readers (requester and audience) do not include ``reader``."""
    return [
        m for m in messages for job in bot.agent.jobs
        if _tag(job.id) in m and reader != job.requester and reader not in job.audience
    ]


def bot_messages(mm: FakeMattermost, bot: User, channel: Channel) -> list[str]:
    return [p["message"] for p in mm.posts_in(channel) if p["user_id"] == bot.id]


async def read_as(mm: FakeMattermost, user: User, channel: Channel) -> tuple[int, list[str]]:
    """``GET /channels/{id}/posts`` with ``user``'s own token: what they can read there."""
    async with httpx.AsyncClient(base_url=mm.url, timeout=5.0) as client:
        resp = await client.get(f"/api/v4/channels/{channel.id}/posts",
                                headers={"Authorization": f"Bearer {user.token}"})
    if resp.status_code != 200:
        return resp.status_code, []
    return 200, [p["message"] for p in resp.json()["posts"].values()]


async def settled(bot: Bot, sentinel_from: User) -> None:
    """Wait until everything posted before now has been looked at: a DM question posted after it
    is answered (posts are handled in the order their events arrive), then a little more."""
    dm = bot.mm.dm_channel(sentinel_from, bot.world.bot)
    await bot.answered(bot.mm.post_as(sentinel_from, dm, "what is failing? (sentinel)"))
    await asyncio.sleep(0.2)


# -- where answers are read ---------------------------------------------------------------------
async def test_an_answer_in_an_open_channel_is_read_by_team_members_who_never_joined(
    start_bot: Any, world: World
) -> None:
    """Attack: an open channel (type "O") where alice is alone with the bot. alice asks
    there; bob never joins, and reads the channel with his own token — Mattermost lets every team
    member read an open channel (HasPermissionToReadChannel falls back to the team's
    read_public_channel; the same lets him join, or post, at will).

    Safe: an answer bob can read was investigated with bob among its readers (an open channel's
    readers are the whole team), or the bot does not answer in open channels (says to ask in a
    private channel or a DM)."""
    lobby = world.mm.add_channel("lobby", members=[world.alice, world.bot])
    assert lobby.type == "O"
    async with start_bot(behaviour=tagged) as bot:
        question = world.mm.post_as(world.alice, lobby, QUESTION)
        await bot.answered(question)
        status, readable = await read_as(world.mm, world.bob, lobby)
        assert status == 200  # bob reads ~ops without being a member
        assert unfit_for(bot, readable, BOB) == [], "bob read an answer fitted to alice alone"


async def test_a_member_added_while_the_question_runs_does_not_read_an_answer_not_fitted_to_them(
    start_bot: Any, world: World
) -> None:
    """Attack: a private channel where alice is alone with the bot. alice asks; while the
    investigation runs bob is added (by any member or a team/system admin of Mattermost, who need
    no Kubernetes access at all), before the answer is posted.

    Safe: the readers are checked again before the answer is posted, and an answer not fitted to
    everyone now in the channel is withheld with a notice (as alert answers are), or investigated
    again with them."""
    room = world.mm.add_channel("team-a-room", type="P", members=[world.alice, world.bot])
    gate = Gate()
    async with start_bot(behaviour=gate) as bot:
        question = world.mm.post_as(world.alice, room, QUESTION)
        await asyncio.wait_for(gate.received.wait(), 5.0)
        assert bot.agent.jobs[0].audience == ()  # fitted to alice alone, rightly, when asked
        world.mm.add_member(room, world.bob)
        gate.release.set()
        await bot.answered(question)
        status, readable = await read_as(world.mm, world.bob, room)
        assert status == 200
        assert unfit_for(bot, readable, BOB) == [], "bob read an answer fitted to alice alone"


async def test_a_follow_up_in_alices_thread_carries_only_what_the_thread_shows(
    start_bot: Any, world: World
) -> None:
    """Attack: alice asked in a private channel she was alone in with the bot (the answer is
    fitted to team-a). bob is added later and asks a follow-up in her thread, hoping the thread's
    memory hands the agent (and so his answer) more of team-a than the channel shows.

    Safe: bob's job is asked as bob with alice (who still reads the thread) in its audience, and
    its history holds nothing but what the thread already shows: alice's question and the answer
    as posted."""
    room = world.mm.add_channel("war-room", type="P", members=[world.alice, world.bot])
    async with start_bot(behaviour=tagged) as bot:
        first = world.mm.post_as(world.alice, room, QUESTION)
        await bot.answered(first)
        world.mm.add_member(room, world.bob)
        follow = world.mm.post_as(world.bob, room, "@sleuth and what should we do about it?", root_id=first["id"])
        await bot.answered(follow)

        job = bot.agent.jobs[1]
        assert job.requester == BOB and job.audience == (ALICE,)
        assert _verifier(world.pub).verify(job.identity).members == audience_claims([ALICE])
        thread = "\n".join(p["message"] for p in world.mm.posts_in(room)  # as it was when bob asked
                           if first["id"] in (p["id"], p["root_id"]) and p["create_at"] < follow["create_at"])
        assert job.history, "the follow-up lost its thread"
        for turn in job.history:
            assert turn.text in thread or for_mattermost(turn.text) in thread, turn.text


async def test_posts_caught_up_after_a_reconnect_fit_who_reads_the_channel_now(
    start_bot: Any, world: World
) -> None:
    """Attack: while the bot is disconnected, alice asks in a private channel she is alone in
    with the bot, then bob is added; and bob edits an old unaddressed post of his in ~shared to
    name the bot. The catch-up after the reconnect answers from the channel's history.

    Safe: every job made from a caught-up post is fitted to whoever reads its channel when it is
    answered (bob in the first, alice in the second), and nothing reaches bob from a job without
    him."""
    room = world.mm.add_channel("night-shift", type="P", members=[world.alice, world.bot])
    async with start_bot(behaviour=tagged) as bot:
        old = world.mm.post_as(world.bob, world.shared, "what is failing in team-b?")  # not for the bot
        world.mm.refuse_connections(True)
        world.mm.drop_connections()
        await asyncio.sleep(0.3)
        missed = world.mm.post_as(world.alice, room, QUESTION)
        world.mm.add_member(room, world.bob)
        world.mm.edit_as(world.bob, old["id"], "@sleuth what is failing in team-b?")
        world.mm.refuse_connections(False)
        await bot.answered(missed)
        await asyncio.sleep(0.5)

        by_question = {j.question: j for j in bot.agent.jobs}
        job = by_question["what is failing in team-a?"]
        assert job.requester == ALICE and job.audience == (BOB,)
        # The edit is answered today (the catch-up takes a post edited while nobody listened as a
        # question, though live edits never are): it is bob's own question, fitted to alice.
        for j in bot.agent.jobs:
            if j is not job:
                assert j.requester == BOB and j.audience == (ALICE,)
        _, readable = await read_as(world.mm, world.bob, room)
        assert unfit_for(bot, readable, BOB) == []


# -- who is asking ------------------------------------------------------------------------------
async def test_a_webhook_post_is_not_a_question_by_the_webhooks_creator(start_bot: Any, world: World) -> None:
    """Attack: alice made an incoming webhook (for her CI); whoever holds its URL posts through it.
    Mattermost stores such a post with user_id = the hook's creator (alice) and props
    ``from_webhook: "true"`` (an override_username shows another name), and notifies its
    mentions as for any post. bob, holding the URL, posts "@sleuth what is failing in team-a?".

    Safe: a post made through a webhook is no one's question — no job as alice (the bot ignores
    it or says integrations cannot ask). The channel intersection still bounds what bob reads here,
    but the bot must not act as alice for someone who is not her (her rate limits, her audit
    trail, `alerts on` stored as alice)."""
    async with start_bot() as bot:
        props = {"from_webhook": "true", "override_username": "deploy-bot"}
        world.mm.post_as(world.alice, world.shared, QUESTION, props=props)
        await settled(bot, world.bob)
        assert [j for j in bot.agent.jobs if j.requester == ALICE] == []


async def test_another_bot_naming_sleuth_is_no_one_and_is_a_reader_to_map(start_bot: Any, world: World) -> None:
    """Attack: mallory runs a bot account (its email maps to no one) in ~shared and has it post
    "@sleuth what is failing in team-a?"; a human's ``props.from_bot`` is no disguise either.

    Safe: the bot account gets no identity (no job, told it is unmapped), and as a member of the
    channel it reads answers too, so alice's question there is refused naming it, until the
    operator lists it in ``ignored_members``."""
    ci = world.mm.add_user("ci-bot", is_bot=True)
    world.mm.add_member(world.shared, ci)
    async with start_bot() as bot:
        asked = world.mm.post_as(ci, world.shared, QUESTION)
        [reply] = await bot.answered(asked)
        assert "don't know who you are" in reply["message"]
        world.mm.add_member(world.shared, world.mallory)
        disguised = world.mm.post_as(world.mallory, world.shared, QUESTION, props={"from_bot": "true"})
        [reply] = await bot.answered(disguised)
        assert "don't know who you are" in reply["message"]
        by_alice = world.mm.post_as(world.alice, world.shared, QUESTION)
        [refusal] = await bot.answered(by_alice)
        assert "@ci-bot" in refusal["message"] and "@mallory" in refusal["message"]
        assert "direct message" in refusal["message"]
        assert bot.agent.jobs == []


async def test_with_sso_only_a_mapped_address_nobody_holds_cannot_be_claimed(start_bot: Any, world: World) -> None:
    """Attack: carol (cluster-wide) is mapped by carol@example.com, which no Mattermost account
    holds yet; mallory sets her own email to it (no verification) and asks in a DM.

    Safe, as the README promises with ``sso_only: true``: accounts that do not sign in through
    SSO/LDAP are mapped to no one — mallory is told so and nothing is asked as carol.
    (Without ``sso_only`` this works for mallory; the README documents it as the operator's choice.)"""
    async with start_bot(people=PEOPLE, sso_only=True) as bot:
        world.mm.set_email(world.mallory, "carol@example.com")
        dm = world.mm.dm_channel(world.mallory, world.bot)
        [reply] = await bot.answered(world.mm.post_as(world.mallory, dm, "what is failing in team-a?"))
        assert "single sign-on" in reply["message"]
        await asyncio.sleep(0.1)
        assert bot.agent.jobs == []


async def test_a_mapping_cached_before_an_email_change_lasts_no_longer_than_its_ttl(
    start_bot: Any, world: World
) -> None:
    """Attack: alice's account loses its mapped address (her email is changed to one nobody
    maps, e.g. as she leaves team-a) right after the bot cached her mapping; she keeps asking.

    Safe (as documented: "Mappings are cached for people_cache_ttl"): once ``people_cache_ttl``
    has passed since the lookup she is unmapped — no job as alice. (The bot hears Mattermost's
    ``user_updated`` for the change but does not use it: the window is the whole TTL, 300 s by
    default.)"""
    async with start_bot(people_cache_ttl=1) as bot:
        dm = world.mm.dm_channel(world.alice, world.bot)
        await bot.answered(world.mm.post_as(world.alice, dm, "what is failing in team-a?"))
        world.mm.set_email(world.alice, "alice@elsewhere.example")
        await asyncio.sleep(1.2)
        [reply] = await bot.answered(world.mm.post_as(world.alice, dm, "and now?"))
        assert "don't know who you are" in reply["message"]
        assert [j.requester for j in bot.agent.jobs] == [ALICE]


# -- edits, replies, odd posts ------------------------------------------------------------------
async def test_edits_and_replies_without_a_mention_are_not_questions(start_bot: Any, world: World) -> None:
    """Attack: bob edits an old post in ~shared to add "@sleuth …" (hoping to be answered out of
    turn), and replies without a mention in the thread of the bot's answer to alice.

    Safe: an edit is never a question and a reply that does not name the bot is not one either:
    no job but the ones asked by mentioning the bot."""
    async with start_bot() as bot:
        old = world.mm.post_as(world.bob, world.shared, "what is failing in team-a?")
        world.mm.edit_as(world.bob, old["id"], QUESTION)
        asked = world.mm.post_as(world.alice, world.shared, QUESTION)
        await bot.answered(asked)
        world.mm.post_as(world.bob, world.shared, "and what about team-a's secrets?", root_id=asked["id"])
        await settled(bot, world.bob)
        assert [(j.requester, j.question) for j in bot.agent.jobs] == [
            (ALICE, "what is failing in team-a?"), (BOB, "what is failing? (sentinel)")
        ]


async def test_huge_odd_and_misplaced_posts_get_no_investigation(start_bot: Any, world: World) -> None:
    """Attack: a post at Mattermost's size limit naming the bot; the bot's name only inside code;
    the bare mention (help); and "@sleuth …" in alice's DM with bob, where the bot is not.

    Safe: the long one is refused politely, code is not a mention, help in a channel shows
    nothing of the speaker's access, and the bot hears nothing of a conversation it is not in —
    no job at all."""
    async with start_bot(gateway={"question_limit": 4000}) as bot:
        huge = world.mm.post_as(world.bob, world.shared, "@sleuth " + "why " * 4000)
        [refusal] = await bot.answered(huge)
        assert "characters long" in refusal["message"]
        world.mm.post_as(world.bob, world.shared, "is `@sleuth what is failing?` the right syntax?")
        bare = world.mm.post_as(world.alice, world.shared, "@sleuth")
        [helped] = await bot.answered(bare)
        assert "Sleuth" in helped["message"] and "team-a" not in helped["message"]
        world.mm.post_as(world.alice, world.mm.dm_channel(world.alice, world.bob), QUESTION)
        await settled(bot, world.bob)
        assert [j.question for j in bot.agent.jobs] == ["what is failing? (sentinel)"]


async def test_floods_are_bounded_for_unmapped_and_mapped_accounts(start_bot: Any, world: World) -> None:
    """Attack: mallory (unmapped) floods the bot's DM with 25 posts, and bob sends 25 questions
    to ~shared at once.

    Safe: per-account limits before anything is looked up — mallory gets the bucket's burst (10)
    of replies and no job; bob at most a burst of jobs, each fitted to alice too. (The bucket
    refills so slowly here that no token comes back during the test: the counts are exact however
    long a busy machine takes to handle the posts.)"""
    async with start_bot(gateway={"rate_limit_capacity": 10, "rate_limit_refill_per_second": 0.001}) as bot:
        dm = world.mm.dm_channel(world.mallory, world.bot)
        for i in range(25):
            world.mm.post_as(world.mallory, dm, f"what is failing in team-a? ({i})")
        for i in range(25):
            world.mm.post_as(world.bob, world.shared, f"@sleuth what is failing? ({i})")

        def finished(channel: Channel) -> list[str]:
            return [m for m in bot_messages(world.mm, world.bot, channel) if not m.startswith(test_mattermost.WORKING)]

        # Each post let through gets one reply (mallory's: "not mapped"; bob's: an answer, or a
        # refusal while his others are in flight); then a later question of alice's is answered.
        await world.mm.wait_for_async(lambda: len(finished(dm)) >= 10 and len(finished(world.shared)) >= 10, 30.0)
        bob_jobs = list(bot.agent.jobs)
        await settled(bot, world.alice)
        assert len(finished(dm)) == 10
        assert len(bot_messages(world.mm, world.bot, world.shared)) == 10
        assert all(j.requester != Requester(user="mallory") for j in bot.agent.jobs)
        assert 1 <= len(bob_jobs) <= 10
        assert all(j.requester == BOB and j.audience == (ALICE,) for j in bob_jobs)
        assert [j for j in bot.agent.jobs if j.requester != ALICE] == bob_jobs


# -- commands -----------------------------------------------------------------------------------
async def test_commands_in_shared_places_show_nothing_of_the_speaker_and_refresh_only_the_speaker(
    start_bot: Any, world: World
) -> None:
    """Attack: alice is tricked into saying `access`, `diagnostics` or `help` in a group message
    or channel bob reads; bob says `refresh` in ~shared hoping to reset alice's mapping too.

    Safe: `access`/`diagnostics` are answered only in private, `help` in a channel names none of
    the speaker's namespaces, and `refresh` forgets only the speaker's own mapping (alice is not
    looked up again after bob's)."""
    async with start_bot() as bot:
        group = world.mm.group_channel(world.alice, world.bob, world.bot)
        for where, text in [(group, "@sleuth access?"), (world.shared, "@sleuth Access, please!"),
                            (world.shared, "@sleuth diagnostics"), (group, "@sleuth help")]:
            [reply] = await bot.answered(world.mm.post_as(world.alice, where, text))
            assert "team-a" not in reply["message"], (text, reply["message"])
            if "help" not in text:
                assert "private conversation" in reply["message"]
        alice_lookups = len(world.mm.calls("GET", f"/api/v4/users/{world.alice.id}"))
        bob_lookups = len(world.mm.calls("GET", f"/api/v4/users/{world.bob.id}"))
        [done] = await bot.answered(world.mm.post_as(world.bob, world.shared, "@sleuth refresh"))
        assert done["message"].startswith("Done")
        assert len(world.mm.calls("GET", f"/api/v4/users/{world.bob.id}")) == bob_lookups + 1
        assert len(world.mm.calls("GET", f"/api/v4/users/{world.alice.id}")) == alice_lookups
        assert bot.agent.jobs == []


# -- alerts -------------------------------------------------------------------------------------
async def test_alerts_on_by_bob_fits_alice_and_a_newcomer_withholds_the_next_answer(
    start_bot: Any, world: World
) -> None:
    """Attack: bob says `alerts on` in ~shared, which alice reads, so alerts are investigated as
    bob there; later carol (mapped, and able to read more than both) joins the channel.

    Safe: the alerts service is told every reader (alice and bob, as the gateway maps them); an
    answer fitted to them is posted; once carol joined, the next one is withheld with a notice
    naming her, its text never posted."""
    async with start_bot(people=PEOPLE) as bot:
        requests: list[AlertChannelRequest] = []

        async def on_alerts(msg: Any) -> None:
            requests.append(AlertChannelRequest.model_validate_json(msg.data))
            await msg.respond(AlertChannelReply(text="Alerts in this channel are on.").to_bytes())

        await bot.nc.subscribe(bot.subjects.alerts_channels_all, cb=on_alerts)
        await bot.answered(world.mm.post_as(world.bob, world.shared, "@sleuth alerts on"))
        [req] = requests
        assert (req.op, req.user, req.channel) == ("on", "bob", f"mattermost:{world.shared.id}")
        assert set(req.members) == {ALICE, BOB}
        readers = json.dumps(list(audience_claims(req.members)))
        js = bot.nc.jetstream()

        async def publish(post_id: str, text: str) -> None:
            post = ChatPost(id=post_id, target=f"mattermost:{world.shared.id}", text=text, origin="alert",
                            meta={"cluster": "prod-1", "readers": readers})
            await js.publish(bot.subjects.chat_outbound, post.to_bytes())

        await publish("b1", "**prod-1**: fitted to alice and bob")
        await world.mm.wait_for_async(lambda: "**prod-1**: fitted to alice and bob" in
                                      bot_messages(world.mm, world.bot, world.shared))
        carol = world.mm.add_user("carol", email="carol@example.com")
        world.mm.add_member(world.shared, carol)
        await publish("b2", "**prod-1**: team-a and team-b secrets")
        notice = await world.mm.wait_for_async(lambda: next(
            (m for m in bot_messages(world.mm, world.bot, world.shared) if "withheld" in m), None))
        assert "@carol" in notice
        assert not any("secrets" in m for m in bot_messages(world.mm, world.bot, world.shared))
