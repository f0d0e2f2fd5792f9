"""The Mattermost bot against the fake Mattermost server (real REST v4 and WebSocket over
sockets), with the gateway in-process on real nats-server and Valkey and the fake authz-cache and
agent of conftest.py: who is asked as whom, where answers go, and what survives outages."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from nats.aio.client import Client as NatsClient

from sleuth.embedded import NatsServer, ValkeyServer
from sleuth_common.identity import IdentityVerifier, generate_keypair, load_public_key
from sleuth_common.messages import ChatPost, InvestigationJob, InvestigationResult, Requester
from sleuth_common.subjects import Subjects
from sleuth_gateway import create_app
from sleuth_gateway.mattermost import MattermostAdapter
from tests.fakes.mattermost import Channel, FakeMattermost, User

from .conftest import (
    PREFIX,
    Behaviour,
    FakeAgent,
    FakeAuthz,
    answer_with_progress,
    make_settings,
    pile_up,
    seen_by_gateway,
    serve,
)

pytestmark = pytest.mark.connected

WORKING = "🔎 Investigating…"


@dataclass
class World:
    """A Mattermost server with the bot, alice (team-a), bob (team-b), mallory (no mapping)."""

    mm: FakeMattermost
    bot: User
    alice: User
    bob: User
    mallory: User
    ops: Channel  # private: the bot and alice
    shared: Channel  # private: the bot, alice and bob
    pub: Path


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with FakeMattermost() as mm:
        bot = mm.add_user("sleuth", is_bot=True, system_admin=True)
        alice = mm.add_user("alice", email="alice@example.com")
        bob = mm.add_user("bob", email="Bob@Example.com")
        mallory = mm.add_user("mallory", email="mallory@example.com")
        # Private channels: their members are their readers (an open channel is read by the
        # whole team, mallory included: see test_an_open_channel_is_read_by_the_whole_team).
        ops = mm.add_channel("ops", type="P", members=[alice, bot])
        shared = mm.add_channel("shared", type="P", members=[alice, bob, bot])
        key, pub = generate_keypair()
        (tmp_path / "chat.key").write_bytes(key)
        (tmp_path / "chat.pub").write_bytes(pub)
        yield World(mm, bot, alice, bob, mallory, ops, shared, tmp_path / "chat.pub")


@dataclass
class Replica:
    url: str
    app: Any
    client: httpx.AsyncClient

    @property
    def adapter(self) -> MattermostAdapter:
        adapter = self.app.state.mattermost
        assert adapter is not None
        return adapter


@dataclass
class Bot:
    world: World
    replicas: list[Replica]
    nc: NatsClient
    subjects: Subjects
    agent: FakeAgent
    audits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mm(self) -> FakeMattermost:
        return self.world.mm

    async def answered(self, question: dict[str, Any], parts: int = 1, within: float = 10.0) -> list[dict[str, Any]]:
        """The bot's finished posts answering ``question`` (no "working…" left), ``parts`` of them."""
        def done() -> list[dict[str, Any]] | None:
            mine = [p for p in self.replies(question) if not p["message"].startswith(WORKING)]
            return mine if len(mine) >= parts and len(mine) == len(self.replies(question)) else None
        return await self.mm.wait_for_async(done, within)

    def replies(self, question: dict[str, Any]) -> list[dict[str, Any]]:
        """The bot's posts after ``question`` in its thread."""
        root = question["root_id"] or question["id"]
        return sorted(
            (p for p in self.mm.posts_by(self.world.bot)
             if p["root_id"] == root and p["create_at"] >= question["create_at"]),
            key=lambda p: (p["create_at"], p["message"]),
        )

    async def listening(self, within: float = 10.0) -> Replica:
        async def one() -> Replica:
            while True:
                for r in self.replicas:
                    if r.app.state.mattermost.state == "listening" and self.mm.connected(self.world.bot):
                        return r
                await asyncio.sleep(0.02)
        return await asyncio.wait_for(one(), within)


@pytest.fixture
def start_bot(nats_server: NatsServer, valkey: ValkeyServer, world: World, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``async with start_bot(replicas=1, behaviour=..., **mattermost_settings) as bot``."""
    monkeypatch.setenv("SLEUTH_MATTERMOST_TOKEN", world.bot.token)

    @asynccontextmanager
    async def _start(
        *, replicas: int = 1, behaviour: Behaviour = answer_with_progress, gateway: dict[str, Any] | None = None,
        **mattermost: Any,
    ) -> AsyncIterator[Bot]:
        subjects = Subjects(PREFIX)
        nc = await nats.connect(nats_server.url)
        await FakeAuthz(nc, subjects).start()
        agent = FakeAgent(nc, subjects, behaviour)
        bot = Bot(world, [], nc, subjects, agent)

        async def on_audit(msg: Any) -> None:
            bot.audits.append(json.loads(msg.data))

        await nc.subscribe(subjects.audit_all, cb=on_audit)
        people = [
            {"email": "alice@example.com", "user": "alice", "groups": ["team-a"]},
            {"email": "bob@example.com", "user": "bob", "groups": ["team-b"]},
        ]
        cfg = {"url": world.mm.url, "people": people, "lease_ttl": 2.0, "reconnect_min": 0.2,
               "reconnect_max": 1.0, "progress_interval": 0.0, "typing_interval": 0.2, **mattermost}
        try:
            async with AsyncExitStack() as stack:
                for _ in range(replicas):
                    settings = make_settings(nats_server.url, valkey.url, mattermost=cfg, **(gateway or {}))
                    settings.identity.signing_key_file = str(world.pub.with_name("chat.key"))
                    app = create_app(settings)
                    await stack.enter_async_context(serve(app, settings))
                    url = f"http://127.0.0.1:{settings.gateway.port}"
                    client = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=15.0))
                    bot.replicas.append(Replica(url, app, client))
                await agent.start()
                await bot.listening()
                yield bot
        finally:
            await agent.stop()
            await nc.close()

    return _start


def _verifier(pub: Path) -> IdentityVerifier:
    key = load_public_key(pub.read_text())
    return IdentityVerifier(issuer_keys={"sleuth-chat": [key]}, issuers=(), audience="sleuth-agent", max_ttl=600)


async def test_a_direct_message_is_answered_as_the_mapped_user(start_bot: Any, world: World) -> None:
    async with start_bot() as bot:
        dm = world.mm.dm_channel(world.alice, world.bot)
        question = world.mm.post_as(world.alice, dm, "why is api crashing?")
        [answer] = await bot.answered(question)

        # Asked as alice in Kubernetes, signed by the gateway as sleuth-chat, read by alice alone.
        [job] = bot.agent.jobs
        assert (job.requester.user, job.requester.groups, job.origin) == ("alice", ("team-a",), "chat")
        assert job.question == "why is api crashing?" and job.audience == ()
        who = _verifier(world.pub).verify(job.identity)
        assert (who.issuer, who.user, who.groups, who.job, who.members) == (
            "sleuth-chat", "alice", ("team-a",), job.id, ()
        )
        # One post, in the question's thread, edited from "working…" (with progress) into the answer.
        assert answer["root_id"] == question["id"]
        assert "team-a" in answer["message"] and "`E01`" in answer["message"]
        edits = [c.body["message"] for c in world.mm.calls("PUT", f"/api/v4/posts/{answer['id']}/patch")]
        assert any(e.startswith(WORKING) and "reading pods" in e for e in edits), edits
        assert edits[-1] == answer["message"]
        assert any(t.user_id == world.bot.id and t.channel_id == dm.id for t in world.mm.typing_events)


async def test_channel_posts_need_a_mention_and_get_answers_in_their_thread(start_bot: Any, world: World) -> None:
    async with start_bot() as bot:
        adapter = bot.replicas[0].adapter
        world.mm.post_as(world.alice, world.ops, "what is failing in team-a?")  # not for the bot
        question = world.mm.post_as(world.alice, world.ops, "@sleuth what is failing in team-a?")
        [answer] = await bot.answered(question)
        assert answer["root_id"] == question["id"]
        assert len(bot.agent.jobs) == 1 and bot.agent.jobs[0].question == "what is failing in team-a?"
        ignored = adapter.gw.metrics.mattermost_ignored.labels(reason="not_mentioned")._value.get()
        assert ignored == 1

        # A follow-up in the thread carries the thread's history (and nothing of other threads).
        follow = world.mm.post_as(world.alice, world.ops, "@sleuth and since when?", root_id=question["id"])
        await bot.answered(follow)
        history = bot.agent.jobs[1].history
        assert [t.role for t in history] == ["user", "assistant"]
        assert history[0].text == "what is failing in team-a?" and "OOM" in history[1].text
        # Its own posts are never questions (its two "working…" posts came back as events).
        assert adapter.gw.metrics.mattermost_ignored.labels(reason="own")._value.get() == 2
        assert len(bot.agent.jobs) == 2


async def test_a_shared_channel_answer_fits_every_member(start_bot: Any, world: World) -> None:
    async with start_bot() as bot:
        question = world.mm.post_as(world.bob, world.shared, "@sleuth what is failing?")
        await bot.answered(question)
        [job] = bot.agent.jobs
        assert job.requester == Requester(user="bob", groups=("team-b",))
        # alice reads the channel too: the agent investigates with the intersection, and the
        # signed identity names her, so the audience cannot be changed on the way.
        assert job.audience == (Requester(user="alice", groups=("team-a",)),)
        assert _verifier(world.pub).verify(job.identity).members == ("alice|team-a",)


async def test_a_group_message_is_answered_when_the_bot_is_named(start_bot: Any, world: World) -> None:
    async with start_bot() as bot:
        group = world.mm.group_channel(world.alice, world.bob, world.bot)
        world.mm.post_as(world.alice, group, "bob, is checkout down for you too?")
        question = world.mm.post_as(world.alice, group, "@sleuth what is failing?")
        await bot.answered(question)
        [job] = bot.agent.jobs  # the first post was between people
        assert job.audience == (Requester(user="bob", groups=("team-b",)),)


async def test_an_open_channel_is_read_by_the_whole_team(start_bot: Any, world: World) -> None:
    """Anyone in the team may read an open channel without joining it: its readers are the team."""
    async with start_bot() as bot:
        town = world.mm.add_channel("town-square", members=[world.alice, world.bot])
        asked = world.mm.post_as(world.alice, town, "@sleuth what is failing in team-a?")
        [refusal] = await bot.answered(asked)
        assert "public channel" in refusal["message"] and "@mallory" in refusal["message"]
        assert bot.agent.jobs == []
        # With mallory gone from the team's readers (deactivated), it is answered for the team.
        world.mm.deactivate(world.mallory)
        again = world.mm.post_as(world.alice, town, "@sleuth what is failing in team-a?")
        await bot.answered(again)
        [job] = bot.agent.jobs
        assert job.audience == (Requester(user="bob", groups=("team-b",)),)


async def test_a_reader_who_joins_while_it_runs_withholds_the_answer(start_bot: Any, world: World) -> None:
    async def join_then_answer(nc: NatsClient, subjects: Subjects, job: InvestigationJob) -> None:
        world.mm.add_member(world.ops, world.bob)
        await answer_with_progress(nc, subjects, job)

    async with start_bot(behaviour=join_then_answer) as bot:
        asked = world.mm.post_as(world.alice, world.ops, "@sleuth what is failing in team-a?")
        [post] = await bot.answered(asked)
        assert "withheld" in post["message"] and "@bob" in post["message"]
        assert "team-a" not in post["message"].replace("team-a?", "")
        # Nothing of the withheld answer is remembered for the thread either.
        follow = world.mm.post_as(world.bob, world.ops, "@sleuth and now?", root_id=asked["id"])
        await bot.answered(follow)
        assert bot.agent.jobs[1].history == ()


async def test_an_email_change_is_seen_at_once(start_bot: Any, world: World) -> None:
    """Mattermost's user_updated event drops the cached mapping: no cache-TTL window in which a
    changed account keeps its old identity."""
    async with start_bot(people_cache_ttl=3600) as bot:
        dm = world.mm.dm_channel(world.alice, world.bot)
        await bot.answered(world.mm.post_as(world.alice, dm, "what is failing?"))
        world.mm.set_email(world.alice, "alice@elsewhere.example")
        await asyncio.sleep(0.3)
        [reply] = await bot.answered(world.mm.post_as(world.alice, dm, "what is failing now?"))
        assert "don't know who you are" in reply["message"]
        assert len(bot.agent.jobs) == 1


async def test_unmapped_people_get_no_identity(start_bot: Any, world: World) -> None:
    async with start_bot() as bot:
        dm = world.mm.dm_channel(world.mallory, world.bot)
        question = world.mm.post_as(world.mallory, dm, "what is failing in team-a?")
        [reply] = await bot.answered(question)
        assert "don't know who you are in Kubernetes" in reply["message"]
        async with asyncio.timeout(5):
            while not (refused := [a for a in bot.audits if a["kind"] == "audit.authenticated"]):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert refused[0]["decision"] == "refused" and refused[0]["reason"].startswith("unmapped")
        assert refused[0]["entry"] == "mattermost" and refused[0]["chat_user_id"] == world.mallory.id
        assert refused[0]["user"] == "" and world.mallory.username not in json.dumps(refused[0])

        # In a channel mallory reads, alice is not answered there either (the answer must fit
        # mallory, who has no known access), and is told why.
        world.mm.add_member(world.shared, world.mallory)
        asked = world.mm.post_as(world.alice, world.shared, "@sleuth what is failing in team-a?")
        [refusal] = await bot.answered(asked)
        assert "@mallory" in refusal["message"] and "direct message" in refusal["message"]
        assert bot.agent.jobs == []


async def _long_answer(nc: NatsClient, subjects: Subjects, job: InvestigationJob) -> None:
    paragraphs = [f"Paragraph {i}: " + ("pod api-7d9 in team-a restarted. " * 20) for i in range(12)]
    answer = "## Problem\n\n" + "\n\n".join(paragraphs) + "\n\n```\nkubectl get pods -n team-a\n```"
    result = InvestigationResult(job_id=job.id, user=job.requester.user, status="diagnosed", answer_markdown=answer)
    await nc.publish(job.reply_subject, result.to_bytes())


async def test_a_long_answer_is_split_into_numbered_posts_in_the_thread(start_bot: Any, world: World) -> None:
    async with start_bot(behaviour=_long_answer, max_post_chars=2000) as bot:
        question = world.mm.post_as(world.alice, world.ops, "@sleuth why?")

        def total(posts: list[dict[str, Any]]) -> int:
            return int(posts[0]["message"].split("/", 1)[1].split(")", 1)[0]) if posts else 0

        first = await bot.answered(question)
        parts = await world.mm.wait_for_async(
            lambda: ((p := bot.replies(question)) and len(p) == total(first) and p) or None)
        n = len(parts)
        assert n >= 5
        numbered = sorted(parts, key=lambda p: int(p["message"][2:].split("/")[0]))
        for i, part in enumerate(numbered, 1):
            assert part["root_id"] == question["id"]
            assert part["message"].startswith(f"*({i}/{n})*")
            assert len(part["message"]) <= 2000
        # Posted in order (the first is the "working…" post, edited).
        assert [p["create_at"] for p in numbered] == sorted(p["create_at"] for p in numbered)
        parts = numbered
        text = "".join(p["message"] for p in parts)
        assert all(f"Paragraph {i}:" in text for i in range(12))  # nothing lost
        assert parts[-1]["message"].rstrip().endswith("```")


async def test_bad_input_gets_a_polite_answer_and_the_listener_goes_on(
    start_bot: Any, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with start_bot(gateway={"question_limit": 60}) as bot:
        adapter = bot.replicas[0].adapter
        long = world.mm.post_as(world.alice, world.ops, "@sleuth " + "why " * 40)
        [refusal] = await bot.answered(long)
        assert "characters long" in refusal["message"] and bot.agent.jobs == []

        # A crash while handling one post is logged, counted and told; the next post is answered.
        original = adapter._answer
        calls = 0

        async def crash_once(post: dict[str, Any], channel: Any) -> None:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("boom")
            await original(post, channel)

        monkeypatch.setattr(adapter, "_answer", crash_once)
        broken = world.mm.post_as(world.alice, world.ops, "@sleuth what broke?")
        [sorry] = await bot.answered(broken)
        assert "something went wrong" in sorry["message"]
        assert adapter.gw.metrics.mattermost_errors._value.get() == 1
        fine = world.mm.post_as(world.alice, world.ops, "@sleuth what is failing?")
        await bot.answered(fine)


async def test_commands_answer_in_mattermost(start_bot: Any, world: World) -> None:
    async with start_bot() as bot:
        requests: list[Any] = []

        async def on_alerts(msg: Any) -> None:
            from sleuth_common.messages import AlertChannelReply, AlertChannelRequest

            requests.append(AlertChannelRequest.model_validate_json(msg.data))
            await msg.respond(AlertChannelReply(text="Alerts in this channel are on.").to_bytes())

        await bot.nc.subscribe(bot.subjects.alerts_channels_all, cb=on_alerts)
        dm = world.mm.dm_channel(world.alice, world.bot)
        access = world.mm.post_as(world.alice, dm, "access?")
        [mine] = await bot.answered(access)
        assert "team-a" in mine["message"]
        private = world.mm.post_as(world.alice, world.shared, "@sleuth access")
        [refused] = await bot.answered(private)
        assert "private conversation" in refused["message"] and "team-a" not in refused["message"]
        on = world.mm.post_as(world.alice, world.shared, "@sleuth alerts on please")
        [reply] = await bot.answered(on)
        assert reply["message"] == "Alerts in this channel are on."
        [req] = requests
        assert (req.op, req.channel, req.user) == ("on", f"mattermost:{world.shared.id}", "alice")
        assert set(req.members) == {Requester(user="bob", groups=("team-b",)), Requester(user="alice", groups=("team-a",))}
        assert bot.agent.jobs == []


async def test_a_schedule_made_in_a_thread_answers_in_that_thread(start_bot: Any, world: World) -> None:
    from sleuth_common.messages.schedules import ScheduleReply, ScheduleRequest

    async with start_bot(gateway={"schedules": True}) as bot:
        made: list[ScheduleRequest] = []

        async def on_schedule(msg: Any) -> None:
            made.append(ScheduleRequest.model_validate_json(msg.data))
            await msg.respond(ScheduleReply(text="Scheduled `abcd2345ef`.").to_bytes())

        await bot.nc.subscribe(bot.subjects.schedules_all, cb=on_schedule)
        asked = world.mm.post_as(world.bob, world.shared, "@sleuth schedule every day at 09:00 what is failing?")
        [reply] = await bot.answered(asked)
        assert reply["message"] == "Scheduled `abcd2345ef`."
        [req] = made
        assert (req.op, req.target, req.thread) == ("create", f"mattermost:{world.shared.id}", asked["id"])
        assert set(req.members) == {Requester(user="alice", groups=("team-a",)), Requester(user="bob", groups=("team-b",))}

        # A run's answer comes back on the CHAT stream and lands in the schedule's thread.
        readers = json.dumps(["alice|team-a", "bob|team-b"])
        post = ChatPost(id="s-abcd2345ef-1", target=req.target, origin="schedule", text="⏰ run one",
                        meta={"schedule": "abcd2345ef", "thread": req.thread, "readers": readers})
        await bot.nc.jetstream().publish(bot.subjects.chat_outbound, post.to_bytes())
        run = await world.mm.wait_for_async(lambda: next(
            (p for p in world.mm.posts_in(world.shared) if p["message"] == "⏰ run one"), None))
        assert run["root_id"] == asked["id"]


async def test_missed_posts_are_caught_up_after_a_reconnect(start_bot: Any, world: World) -> None:
    async with start_bot() as bot:
        first = world.mm.post_as(world.alice, world.ops, "@sleuth what is failing?")
        await bot.answered(first)
        world.mm.refuse_connections(True)
        world.mm.drop_connections()
        await asyncio.sleep(0.3)
        dm = world.mm.dm_channel(world.alice, world.bot)
        missed = [world.mm.post_as(world.alice, dm, "what is failing in team-a?"),
                  world.mm.post_as(world.alice, world.ops, "@sleuth and now?")]
        world.mm.refuse_connections(False)
        for q in missed:
            await bot.answered(q)
        await asyncio.sleep(0.5)  # a second answer would have come by now
        assert len(bot.agent.jobs) == 3
        for q in [first, *missed]:
            assert len(bot.replies(q)) == 1


async def test_two_replicas_answer_each_post_once_and_one_takes_over(start_bot: Any, world: World) -> None:
    limits = {"max_inflight_per_user": 20, "rate_limit_capacity": 20}
    async with start_bot(replicas=2, gateway=limits) as bot:
        holder = await bot.listening()
        other = next(r for r in bot.replicas if r is not holder)
        assert other.adapter.state == "standby"
        dm = world.mm.dm_channel(world.alice, world.bot)
        questions = [world.mm.post_as(world.alice, dm if i % 2 else world.ops,
                                      f"{'' if i % 2 else '@sleuth '}what is failing? ({i})") for i in range(10)]
        latencies = []
        for q in questions:
            [answer] = await bot.answered(q)
            latencies.append(((answer["create_at"] - q["create_at"]), (answer["update_at"] - q["create_at"])))
        await asyncio.sleep(0.5)
        twice = sum(len(bot.replies(q)) - 1 for q in questions)
        assert twice == 0 and len(bot.agent.jobs) == 10
        first_ms = sorted(a for a, _ in latencies)[len(latencies) // 2]
        answer_ms = sorted(b for _, b in latencies)[len(latencies) // 2]
        print(f"\nMattermost, two replicas: post → working post (first progress) median {first_ms} ms, "
              f"post → answer median {answer_ms} ms; posts answered twice: {twice} of {len(questions)}")

        # The holder dies (it never gives the lease back): the other listens within the lease TTL.
        holder.adapter._lease.release = _never  # type: ignore[method-assign,union-attr]
        t0 = time.monotonic()
        await holder.adapter.stop()
        assert (await bot.listening(within=10.0)) is other
        print(f"takeover after the listener died: {time.monotonic() - t0:.1f} s (lease TTL 2 s)")
        after = world.mm.post_as(world.alice, dm, "and now?")
        await bot.answered(after)
        assert len(bot.agent.jobs) == 11


async def _never() -> None:
    return None


async def test_mattermost_down_or_the_token_revoked_never_takes_the_gateway_down(
    start_bot: Any, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    async with start_bot() as bot:
        replica = bot.replicas[0]
        world.mm.set_down(True)
        world.mm.drop_connections()
        caplog.set_level(logging.WARNING, logger="sleuth_gateway.mattermost._adapter")
        await asyncio.sleep(1.5)
        ready = await replica.client.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["mattermost"].startswith("degraded")
        # The web chat and the API keep working.
        r = await replica.client.post("/v1/query", json={"query": "what is failing?"},
                                      headers={"Authorization": "Bearer t-alice"})
        assert r.status_code == 200, r.text
        attempts = [r for r in caplog.records if "reconnecting in" in r.getMessage()]
        assert 1 <= len(attempts) <= 4  # one line per attempt, backing off (0.2, 0.4, 0.8 s…)
        world.mm.set_down(False)
        await bot.listening()

        world.mm.revoke_token(world.bot.token)
        world.mm.drop_connections()
        await asyncio.sleep(0.8)
        state = (await replica.client.get("/readyz")).json()["mattermost"]
        assert "refused" in state and (await replica.client.get("/readyz")).status_code == 200


async def test_alert_answers_are_posted_once_threaded_per_cluster(start_bot: Any, world: World) -> None:
    async with start_bot() as bot:
        js = bot.nc.jetstream()
        readers = ["alice|team-a", "bob|team-b"]

        async def publish(post_id: str, cluster: str, text: str, who: list[str] | None = readers) -> None:
            meta = {"cluster": cluster}
            if who is not None:
                meta["readers"] = json.dumps(who)
            post = ChatPost(id=post_id, target=f"mattermost:{world.shared.id}", text=text, origin="alert", meta=meta)
            await js.publish(bot.subjects.chat_outbound, post.to_bytes())

        await publish("b1", "prod-1", "**prod-1**: 2 alerts, answer one")
        await publish("b1", "prod-1", "**prod-1**: 2 alerts, answer one")  # redelivered
        await publish("b2", "prod-1", "**prod-1**: answer two")
        await publish("b3", "prod-2", "**prod-2**: answer three")

        def posted() -> list[dict[str, Any]] | None:
            posts = [p for p in world.mm.posts_in(world.shared) if p["user_id"] == world.bot.id]
            return posts if len(posts) >= 3 else None

        posts = await world.mm.wait_for_async(posted)
        await asyncio.sleep(0.3)
        posts = posted() or []
        assert [p["message"] for p in posts].count("**prod-1**: 2 alerts, answer one") == 1 and len(posts) == 3
        one, two, three = sorted(posts, key=lambda p: p["create_at"])
        assert two["root_id"] == one["id"] and three["root_id"] == ""

        # mallory joined after alerts were marked on: the next answer is withheld, with a notice.
        world.mm.add_member(world.shared, world.mallory)
        await publish("b4", "prod-1", "**prod-1**: team-a secrets")
        notice = await world.mm.wait_for_async(lambda: next(
            (p for p in world.mm.posts_in(world.shared) if "withheld" in p["message"]), None))
        assert "@mallory" in notice["message"] and "team-a secrets" not in json.dumps(world.mm.posts_in(world.shared))


async def test_a_question_while_the_agents_are_swamped_is_told_to_come_back(start_bot: Any, world: World) -> None:
    async with start_bot(gateway={"max_queue_depth": 1, "busy_retry_after": 12}) as bot:
        await pile_up(bot.nc, bot.subjects, bot.agent, 2)
        js = bot.nc.jetstream()
        await seen_by_gateway(bot.replicas[0].app.state.gateway, 2)
        dm = world.mm.dm_channel(world.alice, world.bot)
        question = world.mm.post_as(world.alice, dm, "why is api crashing?")
        [reply] = await bot.answered(question)
        assert reply["message"] == "Sorry: Sleuth is busy with other questions; try again in 12 s."
        assert (await js.stream_info(bot.subjects.stream_jobs)).state.messages == 2  # nothing submitted
        # Commands still answer.
        [helped] = await bot.answered(world.mm.post_as(world.alice, dm, "help"))
        assert "Sleuth is busy" not in helped["message"]
        metrics = (await bot.replicas[0].client.get("/metrics")).text
        assert 'sleuth_gateway_mattermost_posts_total{outcome="busy"} 1.0' in metrics
        assert 'sleuth_gateway_messages_total{outcome="busy",surface="mattermost"} 1.0' in metrics
