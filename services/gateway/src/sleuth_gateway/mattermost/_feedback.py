"""Feedback on the bot's answers in Mattermost: a 👍/👎 reaction (``+1``/``-1``) on an answer post and a
thread reply starting "fixed by:" become feedback on that answer's job (``sleuth_gateway.feedback``).

The person is mapped to a Kubernetes identity exactly as for a question; an unmapped (or refused)
person is ignored and counted. The agent decides whether they may give it (the answer's asker or a
reader it was shown to). A reaction is taken silently (no post per reaction); a "fixed by:" reply is
answered in its thread with the agent's reply.

Which job a post is from: when the bot posts an answer it keeps ``answer:<post id>`` (each part) and
``answer-thread:<root id>`` (the latest answer in a thread) → job id under
``<prefix>:gateway:mattermost:feedback:`` for ``feedback_ttl`` seconds. Reactions added while no
replica listened are not caught up (posts are).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_gateway.auth import Identity, is_refused
from sleuth_gateway.errors import ApiError, NotFound
from sleuth_gateway.feedback import give_feedback
from sleuth_gateway.mattermost._people import People, PeopleUnavailable
from sleuth_gateway.runtime import Gateway

log = logging.getLogger(__name__)

__all__ = ["VERDICTS", "AnswerFeedback", "fixed_by_text"]

VERDICTS = {"+1": "up", "thumbsup": "up", "-1": "down", "thumbsdown": "down"}
"""Reactions that are a verdict (Mattermost's emoji names for 👍 and 👎 and their aliases)."""
_FIXED_BY = re.compile(r"\s*fixed[ -]?by\s*:(.*)\Z", re.IGNORECASE | re.DOTALL)


def fixed_by_text(message: str) -> str | None:
    """What follows "fixed by:" at the start of ``message`` (any case), as one line (a reply over several
    lines is joined: the fix is shown to others on one line), or None when it is no such reply."""
    match = _FIXED_BY.match(message)
    return " ".join(match.group(1).split()) if match else None


class AnswerFeedback:
    """Answer posts' jobs in Redis, and reactions and "fixed by:" replies turned into feedback."""

    def __init__(self, gw: Gateway, redis: Redis, people: People, prefix: str, ttl: int,
                 bot_id: Callable[[], str]) -> None:
        self._gw = gw
        self._redis = redis
        self._people = people
        self._prefix = f"{prefix}:feedback"
        self._ttl = ttl
        self._bot_id = bot_id

    async def remember(self, job_id: str, post_ids: list[str], thread: str) -> None:
        """``post_ids`` (an answer's parts) and ``thread`` are ``job_id``'s answer; never raises (an answer
        is never lost for this: it only cannot take feedback)."""
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for post_id in post_ids:
                    pipe.set(f"{self._prefix}:answer:{post_id}", job_id, ex=self._ttl)
                if thread:
                    pipe.set(f"{self._prefix}:answer-thread:{thread}", job_id, ex=self._ttl)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            log.warning("cannot remember an answer's posts for feedback: %s", type(exc).__name__,
                        extra={"job_id": job_id})

    async def _job(self, kind: str, post_id: str) -> str | None:
        if not post_id:
            return None
        raw = await self._redis.get(f"{self._prefix}:{kind}:{post_id}")
        return raw.decode() if isinstance(raw, bytes) else raw

    async def job_of_thread(self, root_id: str) -> str | None:
        """The job of the latest answer in the thread ``root_id``; None when none (or Redis is down)."""
        try:
            return await self._job("answer-thread", root_id)
        except (RedisError, OSError):
            return None

    def _count(self, how: str, outcome: str) -> None:
        self._gw.metrics.mattermost_feedback.labels(how=how, outcome=outcome).inc()

    async def _identity(self, user_id: str, how: str) -> Identity | None:
        """Who ``user_id`` is in Kubernetes, or None (counted) when nobody, refused or rate-limited."""
        if not (await self._gw.ratelimiter.take(f"mattermost-account:{user_id}")).allowed:
            self._count(how, "limited")
            return None
        try:
            person = await self._people.get(user_id)
        except PeopleUnavailable:
            self._count(how, "unavailable")
            return None
        if not person.mapped:
            self._count(how, "unmapped")
            return None
        identity = Identity(person.user, person.groups)
        if is_refused(identity, self._gw.settings.gateway.refused_identities):
            self._count(how, "refused")
            return None
        return identity

    async def on_reaction(self, reaction: dict[str, Any]) -> None:
        """A ``reaction_added``: a verdict on an answer post by a mapped person is given, silently. Never
        raises (the listener's edge)."""
        verdict = VERDICTS.get(str(reaction.get("emoji_name", "")))
        user_id, post_id = str(reaction.get("user_id", "")), str(reaction.get("post_id", ""))
        if verdict is None or not user_id or user_id == self._bot_id():
            return
        job_id: str | None = None
        try:
            job_id = await self._job("answer", post_id)
            if job_id is None:
                return  # not one of the bot's answers
            identity = await self._identity(user_id, "reaction")
            if identity is None:
                return
            await give_feedback(self._gw, identity, job_id, verdict, "", "mattermost")
            self._count("reaction", "taken")
        except NotFound:
            self._count("reaction", "unknown")
        except ApiError as exc:
            self._count("reaction", "error")
            log.warning("a Mattermost reaction could not be kept as feedback: %s", exc.message,
                        extra={"job_id": job_id})
        except (RedisError, OSError) as exc:
            self._count("reaction", "error")
            log.warning("a Mattermost reaction could not be looked at: %s", type(exc).__name__)

    async def fixed_by(self, user_id: str, job_id: str, text: str) -> str | None:
        """A "fixed by:" reply by ``user_id`` in ``job_id``'s thread: what to answer in the thread, or None
        (an unmapped, refused or rate-limited person: ignored)."""
        identity = await self._identity(user_id, "fixed_by")
        if identity is None:
            return None
        try:
            reply = await give_feedback(self._gw, identity, job_id, "", text, "mattermost")
        except NotFound as exc:
            self._count("fixed_by", "unknown")
            return exc.message
        except ApiError as exc:
            self._count("fixed_by", "error")
            return f"Sorry: {exc.message}."
        self._count("fixed_by", "taken")
        return reply.text
