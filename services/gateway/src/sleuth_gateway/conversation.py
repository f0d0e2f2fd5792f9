"""Conversation memory per user in Redis: a capped list with a TTL, keyed by the user.

Only the caller's own key is ever read; nothing here takes a user name from the request body.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_common.messages import HistoryTurn, InvestigationResult
from sleuth_gateway.errors import DependencyUnavailable

log = logging.getLogger(__name__)

__all__ = ["ConversationStore", "answer_message", "question_message"]

_MAX_TEXT = 20_000


def question_message(text: str, request_id: str) -> dict[str, Any]:
    return {"role": "user", "text": text, "ts": time.time(), "request_id": request_id}


def answer_message(
    text: str,
    request_id: str,
    *,
    result: InvestigationResult | None = None,
    job_id: str = "",
    command: str = "",
) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "role": "assistant",
        "text": text[:_MAX_TEXT],
        "ts": time.time(),
        "request_id": request_id,
    }
    if job_id:
        msg["job_id"] = job_id
    if command:
        msg["command"] = command
    if result is not None:
        msg["status"] = result.status
        msg["evidence"] = [{"id": e.id, "summary": e.summary, "command": e.command} for e in result.evidence]
    return msg


class ConversationStore:
    def __init__(self, redis: Redis, key_prefix: str, ttl: int, max_messages: int) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self._ttl = ttl
        self._max = max_messages

    def key(self, user: str) -> str:
        return f"{self._prefix}:conversation:{user}"

    async def append(self, user: str, message: dict[str, Any]) -> None:
        """Best effort: a Redis failure here is logged, never turns an answer into an error."""
        key = self.key(user)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.rpush(key, json.dumps(message))
                pipe.ltrim(key, -self._max, -1)
                pipe.expire(key, self._ttl)
                await pipe.execute()
        except RedisError as exc:
            log.warning("could not store a conversation message: %s", exc, extra={"user": user})

    async def append_once(self, user: str, message_id: str, message: dict[str, Any]) -> bool:
        """Store a message another service posted (a schedule's answer) unless one with its id
        was stored before; True when stored now. Raises ``DependencyUnavailable`` when Redis does
        not answer (the post is then delivered again later)."""
        try:
            # Beside the conversations' keys, never inside them (a user name may hold a colon).
            seen = f"{self._prefix}:conversation-posted:{message_id}:{user}"
            if not await self._redis.set(seen, "1", nx=True, ex=self._ttl):
                return False
        except RedisError as exc:
            raise DependencyUnavailable("conversations are unavailable: Redis is not answering") from exc
        await self.append(user, message)
        return True

    async def messages(self, user: str) -> list[dict[str, Any]]:
        try:
            raw = await self._redis.lrange(self.key(user), 0, -1)
        except RedisError as exc:
            raise DependencyUnavailable(
                "conversation memory is unavailable: Redis is not answering; try again shortly"
            ) from exc
        out = []
        for item in raw:
            try:
                out.append(json.loads(item))
            except ValueError:
                continue
        return out

    async def clear(self, user: str) -> None:
        try:
            await self._redis.delete(self.key(user))
        except RedisError as exc:
            raise DependencyUnavailable(
                "conversation memory is unavailable: Redis is not answering; try again shortly"
            ) from exc

    async def history(self, user: str, turns: int) -> tuple[HistoryTurn, ...]:
        """The last ``turns`` messages as job history; empty when Redis is unavailable."""
        if turns <= 0:
            return ()
        try:
            raw = await self._redis.lrange(self.key(user), -turns, -1)
        except RedisError as exc:
            log.warning("no conversation history for the job: %s", exc, extra={"user": user})
            return ()
        out = []
        for item in raw:
            try:
                doc = json.loads(item)
                out.append(HistoryTurn(role=doc["role"], text=str(doc.get("text", ""))[:4000]))
            except (ValueError, KeyError, TypeError):
                continue
        return tuple(out)
