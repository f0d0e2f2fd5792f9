"""Web-chat channels: messages per channel in Redis, stored once per id, and the consumer of the
``CHAT`` stream that delivers other services' posts (alert answers) into them.

Keys: ``<prefix>:gateway:channel:<name>`` (list of message JSON, newest last, capped) and
``<prefix>:gateway:channel-ids:<name>`` (set of stored ids: a post redelivered by JetStream, or
published twice, is stored once).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js.api import AckPolicy, ConsumerConfig
from pydantic import ValidationError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_common.messages import ChatPost, web_channel
from sleuth_common.messages.schedules import conversation_user
from sleuth_common.subjects import Subjects
from sleuth_common.tracing import consumed
from sleuth_gateway.conversation import ConversationStore
from sleuth_gateway.errors import DependencyUnavailable

log = logging.getLogger(__name__)

__all__ = ["ChannelStore", "ChatConsumer", "channel_message"]

_APPEND = """
-- KEYS: list, ids ; ARGV: id, message, max
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
return 1
"""

CHAT_DURABLE = "gateway"


def channel_message(
    text: str,
    author: str,
    *,
    origin: str = "user",
    msg_id: str = "",
    created_at: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": msg_id or uuid.uuid4().hex,
        "author": author,
        "text": text[:20_000],
        "created_at": created_at if created_at is not None else time.time(),
        "origin": origin,
        **extra,
    }


class ChannelStore:
    def __init__(self, redis: Redis, key_prefix: str, max_messages: int) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self._max = max_messages
        self._append = redis.register_script(_APPEND)

    def _keys(self, channel: str) -> tuple[str, str]:
        return f"{self._prefix}:channel:{channel}", f"{self._prefix}:channel-ids:{channel}"

    async def append(self, channel: str, message: dict[str, Any]) -> bool:
        """Store ``message`` unless one with its id is already stored; True if stored now."""
        try:
            return bool(
                await self._append(
                    keys=list(self._keys(channel)), args=[message["id"], json.dumps(message), self._max]
                )
            )
        except RedisError as exc:
            raise DependencyUnavailable(
                "channels are unavailable: Redis is not answering; try again shortly"
            ) from exc

    async def messages(self, channel: str, limit: int = 200) -> list[dict[str, Any]]:
        try:
            raw = await self._redis.lrange(self._keys(channel)[0], -limit, -1)
        except RedisError as exc:
            raise DependencyUnavailable(
                "channels are unavailable: Redis is not answering; try again shortly"
            ) from exc
        out = []
        for item in raw:
            with contextlib.suppress(ValueError):
                out.append(json.loads(item))
        return out


class ChatConsumer:
    """Pulls posts from the CHAT stream (durable ``gateway``, shared by every replica) and stores
    those for web-chat channels; acks only after storing, so a post is never lost or doubled."""

    def __init__(
        self,
        nc: NatsClient,
        subjects: Subjects,
        store: ChannelStore,
        known: set[str],
        adapters: Mapping[str, Callable[[ChatPost], Awaitable[bool]]] | None = None,
        conversations: ConversationStore | None = None,
    ) -> None:
        self._nc = nc
        self._conversations = conversations
        self._adapters = adapters if adapters is not None else {}
        self._subjects = subjects
        self._store = store
        self._known = known
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sub: Any = None

    async def start(self) -> None:
        js = self._nc.jetstream()
        # Stays a hand-written nats-py loop, not a FastStream subscriber: FastStream 0.7.8's concurrent
        # pull subscriber fetches before a worker slot is free and holds what it fetched (no in-progress
        # heartbeats), so a busy replica would sit on work others could run (sleuth_common.bus, "JetStream").
        self._sub = await js.pull_subscribe(
            self._subjects.chat_outbound,
            durable=CHAT_DURABLE,
            stream=self._subjects.stream_chat,
            config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=30, max_deliver=-1),
        )
        self._task = asyncio.create_task(self._run(), name="gateway-chat")

    async def stop(self) -> None:
        # A flag as well as a cancel: nats-py's fetch can swallow a cancel on Python 3.11.
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._task, 5.0)
        if self._sub is not None:
            with contextlib.suppress(NatsError):
                await self._sub.unsubscribe()

    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                msgs = await self._sub.fetch(16, timeout=1.0)
            except TimeoutError:
                continue
            except NatsError as exc:
                log.warning("reading the CHAT stream failed: %s", exc)
                await asyncio.sleep(1.0)
                continue
            for msg in msgs:
                try:
                    post = ChatPost.model_validate_json(msg.data)
                except ValidationError:
                    log.error("dropped a malformed chat post")
                    await msg.term()
                    continue
                try:
                    with consumed(msg, "deliver chat post"):
                        await self.deliver(post)
                except Exception as exc:  # any adapter trouble: the post waits, nothing is lost
                    log.warning("chat post left for redelivery: %s", exc)
                    with contextlib.suppress(NatsError):
                        await msg.nak(delay=2.0)
                    continue
                with contextlib.suppress(NatsError):
                    await msg.ack()

    async def deliver(self, post: ChatPost) -> bool:
        person = conversation_user(post.target)
        if person is not None and self._conversations is not None:
            stored = await self._conversations.append_once(person, post.id, {
                "role": "assistant", "text": post.text[:20_000], "ts": post.created_at,
                "request_id": post.id, "origin": post.origin, "meta": post.meta,
            })
            log.info("chat post %s", "stored" if stored else "already stored",
                     extra={"post": post.id, "target": "conversation"})
            return stored
        channel = web_channel(post.target)
        for prefix, adapter in self._adapters.items():
            if channel is None and post.target.startswith(prefix):
                posted = await adapter(post)
                log.info("chat post %s", "posted" if posted else "already posted",
                         extra={"post": post.id, "target": post.target})
                return posted
        if channel is None:
            log.warning("no chat adapter for target %r; post dropped", post.target, extra={"post": post.id})
            return False
        if channel not in self._known:
            log.warning("post for unconfigured channel %r dropped", channel, extra={"post": post.id})
            return False
        stored = await self._store.append(
            channel,
            channel_message(
                post.text,
                post.author,
                origin=post.origin,
                msg_id=post.id,
                created_at=post.created_at,
                meta=post.meta,
            ),
        )
        log.info(
            "chat post %s",
            "stored" if stored else "already stored",
            extra={"post": post.id, "channel": channel},
        )
        return stored
