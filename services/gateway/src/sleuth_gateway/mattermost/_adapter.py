"""The Mattermost bot: listens as one replica (a Redis lease), answers each post once (a Redis
claim per post id), in the question's thread, as the Kubernetes identity the poster maps to,
fitted to everyone who reads the channel.

Listening. The lease holder opens the WebSocket, and after every (re)connect catches up
through ``/channels/{id}/posts?since=`` from a cursor kept in Redis (the newest post seen, less
an answer timeout, so a post whose replica died mid-answer is answered again). Posts are
claimed with ``SET NX`` before anything is said: ``working:<holder>`` while answering (expires
with the answer's deadline), ``done`` after; a claim held by nobody any more is taken over.
A gateway killed while it answered leaves its question pending (sleuth_gateway.pending): the
next gateway to start posts the answer into the same "working…" post (``resume_answer``), once
per job; a graceful stop hands the post back to the next listener's catch-up instead.

Answering. Direct messages always; elsewhere only when mentioned. A question in a channel is
investigated with the intersection of the asker's and every other member's scope (the job's
``audience``, signed by the gateway as ``sleuth-chat``): every member must map to a Kubernetes
identity, or the bot answers in direct messages only. Progress is one "working…" post, edited;
the answer replaces it, split into numbered posts past the post limit. Replies go in the
question's thread (in direct messages too); memory is kept per thread, and per direct-message
channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from sleuth_common.channels import audience_claims
from sleuth_common.messages import ChatPost, InvestigationResult, JobProgress, Requester
from sleuth_common.messages.audit import Authenticated
from sleuth_gateway import asking, audit
from sleuth_gateway.auth import Identity, is_refused
from sleuth_gateway.commands import parse_command, run_command
from sleuth_gateway.conversation import ConversationStore, answer_message, question_message
from sleuth_gateway.errors import ApiError, Busy, Forbidden, JobTimeout, RateLimited
from sleuth_gateway.mattermost._client import (
    MattermostApi,
    MattermostError,
    MattermostRefused,
)
from sleuth_gateway.mattermost._feedback import AnswerFeedback, fixed_by_text
from sleuth_gateway.mattermost._lease import Lease
from sleuth_gateway.mattermost._people import People, PeopleUnavailable, Person
from sleuth_gateway.mattermost._text import for_mattermost, mentions, split_post, without_mention
from sleuth_gateway.pending import PendingJob
from sleuth_gateway.runtime import Gateway
from sleuth_gateway.settings import MattermostSettings

log = logging.getLogger(__name__)

__all__ = ["MATTERMOST_PREFIX", "MattermostAdapter"]

MATTERMOST_PREFIX = "mattermost:"
"""Chat targets of Mattermost channels: ``mattermost:<channel id>``."""

WORKING = "🔎 Investigating…"
UNMAPPED = (
    "Sorry, I don't know who you are in Kubernetes, so I cannot look at any cluster for you. "
    "Ask your platform team to map your Mattermost account (by its email) to your Kubernetes "
    "user{extra}."
)
_UNMAPPED_EXTRA = {
    "not_sso": "; only accounts that sign in through single sign-on are mapped here",
    "no_email": "; I cannot see your account's email (the server hides it from me)",
}
TOO_LONG = (
    "Sorry, your message is {n} characters long; I take questions of up to {limit} characters. "
    "Could you shorten it?"
)
UNAVAILABLE = "Sorry, I cannot answer right now ({why}). Please try again in a minute."
CRASHED = "Sorry, something went wrong while answering this (reference `{ref}`). Please try again."


_CHANNEL_TTL = 60.0  # seconds a channel's type and team are remembered (a channel can be converted)


@dataclass(frozen=True)
class _Channel:
    id: str
    type: str  # O open, P private, D direct, G group
    team_id: str = ""

    @property
    def direct(self) -> bool:
        return self.type == "D"


class MattermostAdapter:
    """One gateway replica's part of the Mattermost bot (see the module docstring)."""

    def __init__(self, gw: Gateway, cfg: MattermostSettings, token: str) -> None:
        self.gw = gw
        self.cfg = cfg
        self.api = MattermostApi(cfg.url, token, timeout=cfg.request_timeout, ca_file=cfg.ca_file)
        self.state = "starting"
        """What ``/readyz`` shows: ``listening``, ``standby`` (another replica listens),
        ``degraded: <why>``, ``starting`` or ``stopped``."""
        self._bot: dict[str, Any] = {}
        self._channels: dict[str, tuple[float, _Channel]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._working: dict[str, str] = {}  # post id → the "working…" post answering it
        self._run_task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._people: People | None = None
        self._lease: Lease | None = None
        self._memory: ConversationStore | None = None
        self._feedback: AnswerFeedback | None = None
        self._prefix = f"{gw.settings.prefix}:gateway:mattermost"
        self._delay = cfg.reconnect_min

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        redis = self.gw.redis
        assert redis is not None, "start the gateway first"
        self._people = People(self.api, redis, f"{self.gw.settings.prefix}:gateway", self.cfg)
        self._lease = Lease(redis, f"{self._prefix}:lease", self.cfg.lease_ttl)
        self._memory = ConversationStore(redis, self._prefix, self.cfg.memory_ttl, max(1, self.cfg.memory_turns))
        self._feedback = AnswerFeedback(self.gw, redis, self._people, self._prefix, self.cfg.feedback_ttl,
                                        lambda: self.bot_id)
        self._run_task = asyncio.create_task(self._run(), name="mattermost")

    async def stop(self) -> None:
        self._stopping.set()
        if self._run_task is not None:
            self._run_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._run_task
        await self._drain()
        if self._lease is not None:
            with contextlib.suppress(RedisError, OSError):
                await self._lease.release()
        if self._people is not None:
            await self._people.aclose()
        await self.api.aclose()
        self.state = "stopped"

    async def _drain(self) -> None:
        """Stop answering: unfinished posts are handed back (claim dropped, working post
        edited) for the next listener's catch-up to answer."""
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)

    @property
    def bot_id(self) -> str:
        return str(self._bot.get("id", ""))

    @property
    def bot_name(self) -> str:
        return str(self._bot.get("username", ""))

    # ------------------------------------------------------------------ listening
    async def _run(self) -> None:
        assert self._lease is not None
        self._delay = self.cfg.reconnect_min
        while not self._stopping.is_set():
            try:
                if not await self._lease.acquire():
                    self.state = "standby"
                    await asyncio.sleep(self.cfg.lease_ttl / 3)
                    continue
                await self._listen_while_leased()
                if self.state == "standby":
                    continue  # the lease went to another replica
                self.state = "degraded: the WebSocket closed"
            except MattermostRefused as exc:
                self.state = f"degraded: {exc}"
            except MattermostError as exc:
                self.state = f"degraded: Mattermost unreachable ({exc})"
            except (RedisError, OSError) as exc:
                self.state = f"degraded: Redis unavailable ({type(exc).__name__})"
            except Exception as exc:  # the listener's edge: never let it die for good
                log.exception("the Mattermost listener failed")
                self.state = f"degraded: {type(exc).__name__}"
            self.gw.metrics.mattermost_connects.labels(outcome="failed").inc()
            log.warning("Mattermost bot %s; reconnecting in %.1f s", self.state, self._delay)
            with contextlib.suppress(RedisError, OSError):
                await self._lease.release()  # let a replica that can reach Mattermost listen
            await asyncio.sleep(self._delay)
            self._delay = min(self._delay * 2, self.cfg.reconnect_max)

    async def _listen_while_leased(self) -> None:
        """Listen until the connection closes or the lease is lost."""
        assert self._lease is not None
        self._bot = await self.api.me()
        listener = asyncio.create_task(self._listen(), name="mattermost-listen")
        try:
            while not listener.done():
                done, _ = await asyncio.wait({listener}, timeout=self.cfg.lease_ttl / 3)
                if not done and not await self._lease.renew():
                    log.warning("the Mattermost listener lease went to another replica; standing by")
                    listener.cancel()
                    self.state = "standby"
            if not listener.cancelled():
                listener.result()
        finally:
            if not listener.done():
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener

    async def _listen(self) -> None:
        async for event in self.api.events():
            kind = event.get("event")
            if kind == "hello":
                self.state = "listening"
                self._delay = self.cfg.reconnect_min
                self.gw.metrics.mattermost_connects.labels(outcome="ok").inc()
                log.info("Mattermost bot listening", extra={"bot": self.bot_name, "url": self.cfg.url})
                self._spawn(self._catch_up(), "mattermost-catch-up")
            elif kind == "posted":
                data = event.get("data") or {}
                try:
                    post = json.loads(data.get("post", ""))
                    mention_ids = json.loads(data["mentions"]) if "mentions" in data else None
                except (ValueError, TypeError):
                    log.warning("dropped a malformed Mattermost event")
                    continue
                if isinstance(post, dict):
                    self._spawn(self._on_post(post, mention_ids, live=True), "mattermost-post")
            elif kind == "reaction_added" and self._feedback is not None:
                try:
                    reaction = json.loads((event.get("data") or {}).get("reaction", ""))
                except (ValueError, TypeError):
                    log.warning("dropped a malformed Mattermost event")
                    continue
                if isinstance(reaction, dict):
                    self._spawn(self._feedback.on_reaction(reaction), "mattermost-reaction")
            elif kind == "user_updated":
                # An email changed, an account was (re)activated: map it again on its next post.
                user = (event.get("data") or {}).get("user")
                if isinstance(user, dict) and user.get("id") and self._people is not None:
                    self._spawn(self._people.forget(str(user["id"])), "mattermost-forget")

    def _spawn(self, coro: Awaitable[None], name: str) -> None:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _catch_up(self) -> None:
        """Answer posts made while nobody listened (from the stored cursor on)."""
        redis = self.gw.redis
        assert redis is not None
        try:
            cursor = await redis.get(f"{self._prefix}:cursor")
        except RedisError as exc:
            log.warning("cannot catch up on missed Mattermost posts: %s", exc)
            return
        if cursor is None:  # first start: nothing was missed
            await self._advance(int(time.time() * 1000))
            return
        now_ms = int(time.time() * 1000)
        # Back over posts that may have been claimed by a replica that died mid-answer.
        reach = int((self.gw.settings.gateway.answer_timeout + 60) * 1000)
        since = max(int(cursor) - reach, now_ms - int(self.cfg.catch_up_window * 1000))
        found = 0
        try:
            for channel_id in await self.api.my_channel_ids():
                for post in await self.api.posts_since(channel_id, since):
                    if int(post.get("create_at", 0)) <= since:
                        continue  # an older post edited since: edits are never questions
                    found += 1
                    self._spawn(self._on_post(post, None, live=False), "mattermost-post")
        except MattermostError as exc:
            log.warning("catching up on missed Mattermost posts failed: %s", exc)
            return
        log.info("Mattermost catch-up", extra={"since_ms": since, "posts": found})

    async def _advance(self, create_at: int) -> None:
        redis = self.gw.redis
        assert redis is not None
        with contextlib.suppress(RedisError, OSError):
            key = f"{self._prefix}:cursor"
            cur = await redis.get(key)
            if cur is None or int(cur) < create_at:
                await redis.set(key, str(create_at))

    # ------------------------------------------------------------------ one post
    def _ignored(self, reason: str) -> None:
        self.gw.metrics.mattermost_ignored.labels(reason=reason).inc()
        if reason not in ("own", "already_answered"):  # the bot's own posts; another replica's
            self.gw.metrics.message("mattermost", "rate_limited" if reason == "limited" else "ignored")

    async def _channel(self, channel_id: str) -> _Channel:
        now = time.monotonic()
        known = self._channels.get(channel_id)
        if known is not None and known[0] > now:
            return known[1]
        doc = await self.api.channel(channel_id)
        channel = _Channel(channel_id, str(doc.get("type", "O")), str(doc.get("team_id", "")))
        self._channels[channel_id] = (now + _CHANNEL_TTL, channel)
        return channel

    async def _on_post(self, post: dict[str, Any], mention_ids: list[str] | None, *, live: bool) -> None:
        """Decide whether ``post`` is for the bot and answer it; never raises (a crash is
        logged, counted and told to the poster)."""
        post_id = str(post.get("id", ""))
        try:
            if live:
                await self._advance(int(post.get("create_at", 0)))
            if post.get("user_id") == self.bot_id:
                return self._ignored("own")
            if post.get("type"):
                return self._ignored("system")
            props = post.get("props")
            if isinstance(props, dict) and props.get("from_webhook"):
                # Stored under the webhook creator's id: whoever holds the hook's URL would ask
                # as that person. Nobody's question.
                return self._ignored("webhook")
            channel = await self._channel(str(post.get("channel_id", "")))
            fix = await self._fix(post)
            if fix is None and not channel.direct and not self._addressed(post, mention_ids, channel):
                return self._ignored("not_mentioned")
            if not await self._claim(post_id):
                return self._ignored("already_answered")
        except Exception:
            self.gw.metrics.mattermost_errors.inc()
            self.gw.metrics.crashes.labels("gateway", "mattermost_post").inc()
            log.exception("a Mattermost post could not be looked at", extra={"post": post_id})
            return
        done = False
        try:
            if fix is not None:
                await self._on_fix(channel, post, *fix)
            else:
                await self._answer(post, channel)
            done = True
        except asyncio.CancelledError:
            raise
        except Exception:
            ref = uuid.uuid4().hex[:12]
            self.gw.metrics.mattermost_errors.inc()
            self.gw.metrics.crashes.labels("gateway", "mattermost_post").inc()
            log.exception("answering a Mattermost post failed", extra={"post": post_id, "ref": ref})
            with contextlib.suppress(Exception):
                await self._say(channel, post, CRASHED.format(ref=ref))
            done = True
        finally:
            await self._settle(post_id, done)

    async def _fix(self, post: dict[str, Any]) -> tuple[str, str] | None:
        """``(job id, text)`` of a "fixed by:" reply in the thread of one of the bot's answers, else None."""
        text = fixed_by_text(without_mention(str(post.get("message", "")), self.bot_name))
        if text is None or not post.get("root_id") or self._feedback is None:
            return None
        job_id = await self._feedback.job_of_thread(str(post["root_id"]))
        return None if job_id is None else (job_id, text)

    async def _on_fix(self, channel: _Channel, post: dict[str, Any], job_id: str, text: str) -> None:
        assert self._feedback is not None
        reply = await self._feedback.fixed_by(str(post.get("user_id", "")), job_id, text)
        if reply is not None:
            await self._say(channel, post, reply)

    def _addressed(self, post: dict[str, Any], mention_ids: list[str] | None, channel: _Channel) -> bool:
        if channel.type == "G":
            # Mattermost counts every post of a group message as mentioning every member: there
            # the bot answers only when its name is written (people talk among themselves too).
            return mentions(str(post.get("message", "")), self.bot_name)
        if mention_ids is not None and self.bot_id in mention_ids:
            return True
        props = post.get("props") or {}
        automated = bool(props.get("from_bot")) if isinstance(props, dict) else False
        # The server lists mentions for people's posts; a post by another bot (or one read
        # back while catching up) carries none: read its text.
        if mention_ids is None or automated:
            return mentions(str(post.get("message", "")), self.bot_name)
        return False

    def _claim_key(self, post_id: str) -> str:
        return f"{self._prefix}:post:{post_id}"

    async def _claim(self, post_id: str) -> bool:
        """Take ``post_id`` for this replica; False when it is answered or being answered."""
        redis = self.gw.redis
        assert redis is not None and self._lease is not None
        hold = int(self.gw.settings.gateway.answer_timeout + 60)
        mine = f"working:{self._lease.holder}"
        return bool(await redis.set(self._claim_key(post_id), mine, nx=True, ex=hold))

    async def _settle(self, post_id: str, done: bool) -> None:
        """``done``: the post is answered for good; else its claim is dropped (another listener's
        catch-up answers it)."""
        redis = self.gw.redis
        assert redis is not None
        with contextlib.suppress(RedisError, OSError):
            if done:
                await redis.set(self._claim_key(post_id), "done", ex=self.cfg.answered_ttl)
            else:
                await redis.delete(self._claim_key(post_id))

    async def _say(self, channel: _Channel, post: dict[str, Any], text: str) -> None:
        """Reply to ``post`` in its thread."""
        for part in split_post(text, self.cfg.max_post_chars):
            await self.api.create_post(channel.id, part, root_id=self._thread(post))

    @staticmethod
    def _thread(post: dict[str, Any]) -> str:
        """The thread a reply to ``post`` goes in (a direct message's too: one question, one thread)."""
        return str(post.get("root_id") or post.get("id") or "")

    async def _answer(self, post: dict[str, Any], channel: _Channel) -> None:
        assert self._people is not None
        cfg = self.gw.settings.gateway
        text = without_mention(str(post.get("message", "")), self.bot_name)
        if len(text) > cfg.question_limit:
            self.gw.metrics.mattermost_posts.labels(outcome="too_long").inc()
            return await self._say(channel, post, TOO_LONG.format(n=len(text), limit=cfg.question_limit))
        command = parse_command(text) if text else parse_command("help")
        poster_id = str(post.get("user_id", ""))
        # Per Mattermost account, before anything is looked up: an unmapped account cannot make
        # the bot call Mattermost and post without limit either.
        if not (await self.gw.ratelimiter.take(f"mattermost-account:{poster_id}")).allowed:
            return self._ignored("limited")
        if command is not None and command.name == "refresh":
            await self._people.forget(poster_id)
        try:
            person = await self._people.get(poster_id)
        except PeopleUnavailable as exc:
            self.gw.metrics.mattermost_posts.labels(outcome="unavailable").inc()
            return await self._say(channel, post, UNAVAILABLE.format(why=exc))
        if not person.mapped:
            await self._audit_unmapped(post, person)
            self.gw.metrics.mattermost_posts.labels(outcome="unmapped").inc()
            self.gw.metrics.message("mattermost", "denied")
            return await self._say(channel, post, UNMAPPED.format(extra=_UNMAPPED_EXTRA.get(person.why, "")))
        identity = Identity(person.user, person.groups)
        if is_refused(identity, cfg.refused_identities):
            audit.refusal(self.gw, Forbidden("refused identity", reason="identity"), entry="mattermost",
                          user=identity.user)
            self.gw.metrics.mattermost_posts.labels(outcome="refused").inc()
            self.gw.metrics.message("mattermost", "denied")
            return await self._say(channel, post, "Sorry, this identity may not use Sleuth.")
        audit.signed_in(self.gw, identity.user, identity.groups, "mattermost", chat_user_id=person.mm_id)
        members: tuple[Requester, ...] = ()
        if not channel.direct:
            members, problem = await self._readers(channel, person)
            if problem:
                self.gw.metrics.mattermost_posts.labels(outcome="readers").inc()
                self.gw.metrics.message("mattermost", "denied")
                return await self._say(channel, post, problem)
        try:
            if command is not None:
                await self._command(channel, post, identity, command, text, members)
            else:
                await self._investigate(channel, post, identity, text, members)
        except RateLimited as exc:
            audit.refusal(self.gw, exc, entry="mattermost", user=identity.user)
            self.gw.metrics.mattermost_posts.labels(outcome="limited").inc()
            await self._say(channel, post, f"Sorry: {exc.message}.")
        except Busy as exc:
            self.gw.metrics.mattermost_posts.labels(outcome="busy").inc()
            await self._say(channel, post, f"Sorry: {exc.message}.")
        except ApiError as exc:
            self.gw.metrics.mattermost_posts.labels(outcome="error").inc()
            await self._say(channel, post, f"Sorry: {exc.message}.")

    async def _reader_people(self, channel: _Channel) -> tuple[list[Person], bool]:
        """Everyone who can read ``channel`` but the bot, and whether there are more than
        ``max_channel_members``. An open channel is read by its whole team (any team member
        may open it without joining), a private or group one by its members."""
        assert self._people is not None
        limit = self.cfg.max_channel_members
        if channel.type == "O" and channel.team_id:
            ids = await self.api.team_member_ids(channel.team_id, limit + 1)
        else:
            ids = await self.api.channel_member_ids(channel.id, limit + 1)
        ids = [i for i in ids if i != self.bot_id]
        if len(ids) > limit:
            return [], True
        return list(await asyncio.gather(*(self._people.get(i) for i in ids))), False

    def _unknown(self, people: list[Person]) -> list[Person]:
        """Readers the bot cannot fit an answer to: active, unmapped, and not a bot account
        listed in ``ignored_members``."""
        ignored = set(self.cfg.ignored_members)
        return [p for p in people if p.active and not p.mapped and not (p.is_bot and p.username in ignored)]

    def _too_many(self, channel: _Channel) -> str:
        who = "everyone in the team can read this public channel" if channel.type == "O" else (
            "this channel has")
        return (
            f"An answer here must fit what every reader may see, and {who} more than "
            f"{self.cfg.max_channel_members} people, so I answer this in a direct message only (or ask in "
            "a smaller private channel)."
        )

    async def _readers(self, channel: _Channel, asker: Person) -> tuple[tuple[Requester, ...], str]:
        """Everyone else who reads ``channel``, as Kubernetes identities; or why the bot cannot
        answer there (too many readers, or readers it cannot map)."""
        try:
            people, too_many = await self._reader_people(channel)
        except (MattermostError, PeopleUnavailable) as exc:
            return (), UNAVAILABLE.format(why=f"I could not tell who reads this channel: {exc}")
        if too_many:
            return (), self._too_many(channel)
        people = [p for p in people if p.mm_id != asker.mm_id]
        unknown = sorted(f"@{p.username}" if p.username else "a member" for p in self._unknown(people))
        if unknown:
            where = "everyone in the team (this is a public channel)" if channel.type == "O" else (
                "everyone in this channel")
            return (), (
                f"An answer here must fit what {where} may read, and I don't know "
                f"who {', '.join(unknown[:10])}{' and others' if len(unknown) > 10 else ''} "
                "are in Kubernetes. Ask me in a direct message or a private channel instead."
            )
        readers = {Requester(user=p.user, groups=p.groups) for p in people if p.mapped}
        return tuple(sorted(readers, key=lambda r: (r.user, r.groups))), ""

    async def _strangers(self, channel: _Channel, allowed: set[str]) -> list[str] | None:
        """Readers of ``channel`` now whose identity is not among ``allowed`` (audience claims):
        @names, ``[]`` when everyone is, ``None`` when there are too many to tell."""
        people, too_many = await self._reader_people(channel)
        if too_many:
            return None
        ignored = set(self.cfg.ignored_members)
        return sorted(
            f"@{p.username}" for p in people
            if p.active and not (p.is_bot and p.username in ignored) and (
                not p.mapped or audience_claims((Requester(user=p.user, groups=p.groups),))[0] not in allowed)
        )

    async def _audit_unmapped(self, post: dict[str, Any], person: Person) -> None:
        log.warning("a Mattermost user without a Kubernetes identity asked",
                    extra={"mattermost_user_id": person.mm_id, "reason": person.why, "post": str(post.get("id", ""))})
        self.gw.audit.emit_nowait(Authenticated(
            entry="mattermost", decision="refused", reason=audit.code(f"unmapped_{person.why or 'user'}"),
            chat_user_id=person.mm_id,
        ))

    def _memory_key(self, channel: _Channel, post: dict[str, Any]) -> str:
        """One memory per direct-message channel, one per thread elsewhere."""
        return f"dm:{channel.id}" if channel.direct else f"thread:{self._thread(post)}"

    async def _command(
        self,
        channel: _Channel,
        post: dict[str, Any],
        identity: Identity,
        command: Any,
        text: str,
        members: tuple[Requester, ...],
    ) -> None:
        await asking.take_question(self.gw, identity, "messages", "mattermost")
        # Every reader, the asker included (an empty list would mean "unknown" to the services
        # that post here later: alerts, schedules, reports).
        everyone = (*members, Requester(user=identity.user, groups=identity.groups))
        answer = await run_command(
            self.gw, identity, command, surface="mattermost",
            channel=None if channel.direct else channel.id, members=everyone,
            target=f"{MATTERMOST_PREFIX}{channel.id}", thread=self._thread(post),
        )
        await self._say(channel, post, answer)
        self.gw.metrics.mattermost_posts.labels(outcome="command").inc()
        assert self._memory is not None
        key, rid = self._memory_key(channel, post), uuid.uuid4().hex
        await self._memory.append(key, question_message(text, rid))
        await self._memory.append(key, answer_message(answer, rid, command=command.name))

    async def _investigate(
        self, channel: _Channel, post: dict[str, Any], identity: Identity, text: str, members: tuple[Requester, ...]
    ) -> None:
        assert self._memory is not None
        gw = self.gw
        post_id = str(post.get("id", ""))
        await asking.check_capacity(gw, "mattermost")
        slot = await asking.admit(gw, identity, "mattermost")
        typing: asyncio.Task[None] | None = None
        submitted: asking.JobRef | None = None
        try:
            working = await self.api.create_post(channel.id, WORKING, root_id=self._thread(post))
            self._working[post_id] = str(working["id"])
            typing = asyncio.create_task(self._typing(channel, post), name="mattermost-typing")
            key = self._memory_key(channel, post)
            # Where a gateway restarted before the answer came posts it (``_resume_answer``).
            target = {"channel": channel.id, "type": channel.type, "team": channel.team_id, "post": post_id,
                      "thread": self._thread(post), "working": str(working["id"]), "memory": key,
                      "question": text, "members": [[m.user, list(m.groups)] for m in members]}
            asked = await asking.submit(
                gw, identity, None, text,
                request_id=uuid.uuid4().hex, origin="chat", audience=members,
                history=await self._memory.history(key, self.cfg.memory_turns), remember=False,
                slot=slot, surface="mattermost", target=target,
            )
            submitted = asked.job
            progress = _ProgressPost(self.api, str(working["id"]), self.cfg.progress_interval)
            try:
                payload = await asking.wait(gw, asked, progress.update, heartbeat=15.0)
            except JobTimeout:
                if await gw.pending.mark_delivered(asked.job.id, asked.job.deadline):
                    await self.api.patch_post(str(working["id"]), f"Sorry: {asking.TIMEOUT_MESSAGE}.")
                    gw.metrics.mattermost_posts.labels(outcome="timeout").inc()
                return
            finally:
                await progress.close()
            await self._post_answer(channel, target, identity, members, asked.request_id, asked.job.id,
                                    asked.job.deadline, str(payload["answer"]))
        except asyncio.CancelledError:
            if submitted is not None:  # a graceful stop: the next listener's catch-up answers it anew
                with contextlib.suppress(Exception):
                    await asyncio.shield(gw.pending.mark_delivered(submitted.id, submitted.deadline))
            working_id = self._working.get(post_id)
            if working_id:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.api.patch_post(working_id, "⏸ Interrupted (the bot restarted); "
                                                             "I'll answer again in a moment."))
            raise
        finally:
            self._working.pop(post_id, None)
            if typing is not None:
                typing.cancel()
            await asyncio.shield(gw.inflight.release(identity.user, slot))

    async def _post_answer(
        self, channel: _Channel, target: dict[str, Any], identity: Identity, members: tuple[Requester, ...],
        rid: str, job_id: str, deadline: float, answer: str,
    ) -> None:
        """The answer in place of the working post (more parts in the thread), once per job
        (whichever of this listener and a restarted gateway gets there first), and in the thread's
        memory; withheld when the channel's readers changed meanwhile."""
        assert self._memory is not None
        gw = self.gw
        if not await gw.pending.mark_delivered(job_id, deadline):
            return
        working = str(target["working"])
        if not channel.direct:
            # Who reads the channel may have changed while the investigation ran.
            asker = Requester(user=identity.user, groups=identity.groups)
            strangers = await self._strangers(channel, set(audience_claims((asker, *members))))
            if strangers is None or strangers:
                names = ", ".join(strangers[:10]) if strangers else "more people than I can check"
                await self.api.patch_post(working, (
                    f"The answer is withheld: it fits who read this channel when you asked, and {names} "
                    "can read it now but were not among them. Ask again to get an answer that fits "
                    "everyone here."))
                gw.metrics.mattermost_posts.labels(outcome="withheld").inc()
                return
        parts = split_post(for_mattermost(answer), self.cfg.max_post_chars)
        await self.api.patch_post(working, parts[0])
        posted = [working]
        for part in parts[1:]:
            posted.append(str((await self.api.create_post(channel.id, part, root_id=str(target["thread"])))["id"]))
        if self._feedback is not None:
            await self._feedback.remember(job_id, posted, str(target["thread"]))
        key, text = str(target["memory"]), str(target["question"])
        await self._memory.append(key, question_message(text, rid))
        await self._memory.append(key, answer_message(answer, rid, job_id=job_id))
        gw.metrics.mattermost_posts.labels(outcome="answered").inc()

    async def resume_answer(self, job: PendingJob, result: InvestigationResult | None) -> None:
        """A question this bot was answering when its gateway went away (``Gateway.deliverers``):
        its answer (or the timeout notice) into the working post, once; the post settled."""
        t = job.target
        channel = _Channel(str(t["channel"]), str(t["type"]), str(t.get("team", "")))
        members = tuple(Requester(user=u, groups=tuple(g)) for u, g in t.get("members", []))
        if not self._bot:
            self._bot = await self.api.me()
        if result is None:
            if await self.gw.pending.mark_delivered(job.job_id, job.deadline):
                await self.api.patch_post(str(t["working"]), f"Sorry: {asking.TIMEOUT_MESSAGE}.")
        else:
            await self._post_answer(channel, t, Identity(job.user, tuple(job.groups)), members, job.request_id,
                                    job.job_id, job.deadline, result.answer_markdown)
        await self._settle(str(t["post"]), True)
        if job.slot:
            await self.gw.inflight.release(job.user, job.slot)

    async def _typing(self, channel: _Channel, post: dict[str, Any]) -> None:
        parent = self._thread(post)
        while True:
            with contextlib.suppress(MattermostError):
                await self.api.typing(self.bot_id, channel.id, parent)
            await asyncio.sleep(self.cfg.typing_interval)

    # ------------------------------------------------------------------ alert answers
    async def deliver(self, post: ChatPost) -> bool:
        """Post a ``ChatPost`` for ``mattermost:<channel id>`` once: in ``meta["thread"]`` when it
        names one (a schedule's, a report's), alert answers threaded per cluster, the rest of a
        long post in the first part's thread. Withheld (with a notice) when the channel's readers
        are not all among ``meta["readers"]``. True when posted now."""
        redis = self.gw.redis
        assert redis is not None
        channel_id = post.target[len(MATTERMOST_PREFIX):]
        if not await redis.set(f"{self._prefix}:chat-post:{post.id}", "1", nx=True, ex=self.cfg.answered_ttl):
            return False
        try:
            text = await self._fit_to_channel(channel_id, post)
            root_key = ""
            root = post.meta.get("thread", "")
            if not root and post.origin == "alert":  # alert answers: one thread per cluster
                root_key = f"{self._prefix}:alert-root:{channel_id}:{post.meta.get('cluster', '')}"
                stored = await redis.get(root_key)
                root = stored.decode() if isinstance(stored, bytes) else stored or ""
            parts = split_post(for_mattermost(text), self.cfg.max_post_chars)
            for i, part in enumerate(parts):
                created = await self.api.create_post(channel_id, part, root_id=root, props={
                    "sleuth_post": post.id, "sleuth_part": i + 1,
                })
                if not root:
                    root = str(created["root_id"] or created["id"])
                    if root_key:
                        await redis.set(root_key, root, ex=30 * 86400)
        except BaseException:
            with contextlib.suppress(RedisError, OSError):
                await redis.delete(f"{self._prefix}:chat-post:{post.id}")
            raise
        return True

    async def _fit_to_channel(self, channel_id: str, post: ChatPost) -> str:
        """``post.text`` when everyone now in the channel was among its ``readers``; else a
        notice saying why it is withheld."""
        raw = post.meta.get("readers")
        if raw is None:
            return post.text  # nothing in it was fitted to a scope
        try:
            readers = json.loads(raw)
        except ValueError:
            readers = []  # unreadable: fits nobody known, so everyone is a stranger
        if not self._bot:
            self._bot = await self.api.me()
        allowed = {str(r) for r in readers} if isinstance(readers, list) else set()
        strangers = await self._strangers(await self._channel(channel_id), allowed)
        if strangers is None or strangers:
            names = ", ".join(strangers[:10]) if strangers else "more people than I can check"
            what = "An alert investigation" if post.origin == "alert" else "A scheduled answer or report"
            again = "Say `alerts on` again" if post.origin == "alert" else "Ask for it again here"
            return (
                f"{what} finished, but it is withheld here: it was fitted to who read this channel "
                f"before, and {names} can read it now but were not among them. {again} to get one "
                "that fits everyone here."
            )
        return post.text


class _ProgressPost:
    """The "working…" post, edited with each stage (at most every ``interval`` seconds)."""

    def __init__(self, api: MattermostApi, post_id: str, interval: float) -> None:
        self._api = api
        self._post_id = post_id
        self._interval = interval
        self._last = 0.0
        self._t0 = time.monotonic()
        self._pending: asyncio.Task[None] | None = None

    async def update(self, item: JobProgress | None) -> None:
        now = time.monotonic()
        if now - self._last < self._interval:
            return
        self._last = now
        if item is None:
            line = f"still investigating ({round(now - self._t0)} s)"
        else:
            line = f"{item.stage}: {item.message}" if item.message else item.stage
        # Not awaited in the progress loop: a slow edit never delays the answer.
        if self._pending is None or self._pending.done():
            self._pending = asyncio.create_task(self._edit(f"{WORKING}\n\n_{line}_"))

    async def _edit(self, text: str) -> None:
        with contextlib.suppress(MattermostError):
            await self._api.patch_post(self._post_id, text)

    async def close(self) -> None:
        """Let an edit in flight land first: it must never overwrite the answer."""
        if self._pending is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pending, 5.0)

