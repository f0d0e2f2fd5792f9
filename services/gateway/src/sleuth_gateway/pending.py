"""Answers that survive a gateway restart: what a running question needs to find its answer again.

The agent publishes every answer on ``jobs.done.<job>`` through JetStream: the RESULTS stream keeps
it ``jetstream.results_max_age`` seconds (sleuth_common.streams). The gateway keeps in Redis, under
``<prefix>:gateway:``, for the job's deadline plus that age:

- ``job:<job>`` — a ``PendingJob``: who asked (user and groups), the request id, a digest of the
  question, the surface its answer goes to (the person's conversation, a Mattermost post) and
  where, the deadline and the asker's in-flight slot;
- ``request:<request id>:<user>`` → the job id. A person who sends the same request again
  (``X-Request-Id``: the web chat reconnecting, an MCP client or an API caller retrying) gets the
  answer of the job already running or finished, never a second investigation. The key holds the
  user: someone else sending that request id reaches nothing of the first person's;
- ``pending`` — a sorted set (score: deadline) of jobs whose answer is not delivered yet. A gateway
  that starts resumes every one (``Resumer``): the kept answer from RESULTS, or the live one until
  the deadline, delivered once on its surface (the conversation: once per job id; Mattermost: a
  ``delivered:<job>`` mark), the slot given back.

Nothing here holds a token: the job's signed identity stays in the job, never in Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_common.messages import InvestigationResult
from sleuth_gateway.errors import DependencyUnavailable

log = logging.getLogger(__name__)

__all__ = ["Deliverer", "PendingJob", "PendingStore", "question_digest"]

_UNAVAILABLE = "answers cannot be tracked: Redis is not answering; try again shortly"


def question_digest(question: str) -> str:
    """What a retry's question is compared by (the question itself is not kept here)."""
    return hashlib.sha256(question.strip().encode()).hexdigest()[:32]


@dataclass(frozen=True)
class PendingJob:
    """One submitted question, as a restarted gateway needs it."""

    job_id: str
    user: str
    groups: tuple[str, ...]
    deadline: float
    """Unix seconds: the job's own deadline."""
    request_id: str = ""
    origin: str = "api"
    question: str = ""
    """A digest of the question (``question_digest``)."""
    surface: str = "conversation"
    """Where the answer goes: ``conversation`` (the person's own), ``mattermost``, or ``none``
    (the caller keeps no memory: nothing to deliver without it)."""
    slot: str = ""
    """The asker's in-flight slot, given back when the answer is delivered."""
    target: dict[str, Any] = field(default_factory=dict)
    """Surface-specific: for Mattermost the channel, the post, its thread, the working post …"""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str | bytes) -> PendingJob | None:
        try:
            doc = json.loads(raw)
            return cls(**{**doc, "groups": tuple(doc.get("groups", ()))})
        except (ValueError, TypeError):
            return None


Deliverer = Callable[[PendingJob, InvestigationResult | None], Awaitable[None]]
"""Delivers a resumed job's answer (``None``: its deadline passed without one) on its surface, once."""


class PendingStore:
    """The Redis side (see the module docstring)."""

    def __init__(self, redis: Redis, key_prefix: str, results_max_age: float) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self.results_max_age = results_max_age

    def _job_key(self, job_id: str) -> str:
        return f"{self._prefix}:job:{job_id}"

    def _request_key(self, request_id: str, user: str) -> str:
        # The request id is [A-Za-z0-9._-] (middleware): the user after it never makes two keys meet.
        return f"{self._prefix}:request:{request_id}:{user}"

    @property
    def _pending_key(self) -> str:
        return f"{self._prefix}:pending"

    def ttl(self, deadline: float) -> int:
        """Seconds a job's keys are kept: while its answer may still come and be kept in RESULTS."""
        return max(1, int(deadline - time.time() + self.results_max_age + 60))

    async def claim_request(self, user: str, request_id: str, job_id: str, deadline: float) -> str | None:
        """Take ``request_id`` of ``user`` for ``job_id``; the job id it names already when it was
        taken before (a retry), else ``None``."""
        key = self._request_key(request_id, user)
        try:
            if await self._redis.set(key, job_id, nx=True, ex=self.ttl(deadline)):
                return None
            held = await self._redis.get(key)
        except RedisError as exc:
            raise DependencyUnavailable(_UNAVAILABLE) from exc
        held = held.decode() if isinstance(held, bytes) else held
        return held or None

    async def job_of(self, user: str, request_id: str) -> str | None:
        """The job ``user`` asked with ``request_id``, if any."""
        try:
            held = await self._redis.get(self._request_key(request_id, user))
        except RedisError as exc:
            raise DependencyUnavailable(_UNAVAILABLE) from exc
        return (held.decode() if isinstance(held, bytes) else held) or None

    async def forget_request(self, user: str, request_id: str) -> None:
        """The job of a claimed request id was never submitted: the id is free again."""
        with contextlib.suppress(RedisError):
            await self._redis.delete(self._request_key(request_id, user))

    async def record(self, job: PendingJob) -> None:
        """Keep ``job`` and put it among the pending ones. Best effort: without Redis the question
        still runs, it only cannot be resumed."""
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.set(self._job_key(job.job_id), job.to_json(), ex=self.ttl(job.deadline))
                if job.surface != "none":
                    pipe.zadd(self._pending_key, {job.job_id: job.deadline})
                await pipe.execute()
        except RedisError as exc:
            log.warning("a question cannot be resumed after a restart: %s", exc, extra={"job_id": job.job_id})

    async def get(self, job_id: str) -> PendingJob | None:
        try:
            raw = await self._redis.get(self._job_key(job_id))
        except RedisError as exc:
            raise DependencyUnavailable(_UNAVAILABLE) from exc
        return PendingJob.from_json(raw) if raw else None

    async def done(self, job_id: str) -> None:
        """The answer (or the timeout notice) is delivered: nothing to resume any more."""
        with contextlib.suppress(RedisError):
            await self._redis.zrem(self._pending_key, job_id)

    async def pending(self) -> list[str]:
        """Jobs whose answer is not delivered, oldest deadline first; those whose answer can no
        longer be kept in RESULTS are dropped."""
        key = self._pending_key
        await self._redis.zremrangebyscore(key, "-inf", time.time() - self.results_max_age)
        return [m.decode() if isinstance(m, bytes) else str(m) for m in await self._redis.zrange(key, 0, -1)]

    async def mark_delivered(self, job_id: str, deadline: float) -> bool:
        """True for the one caller that delivers ``job_id``'s answer on a surface without a
        memory of its own (Mattermost); False for every later one."""
        try:
            return bool(await self._redis.set(
                f"{self._prefix}:delivered:{job_id}", "1", nx=True, ex=self.ttl(deadline)))
        except RedisError as exc:
            raise DependencyUnavailable(_UNAVAILABLE) from exc


class Resumer:
    """On start: the pending jobs' answers, delivered once by their surface's ``Deliverer``."""

    def __init__(
        self,
        store: PendingStore,
        watch: Callable[[str], Awaitable[Any]],
        deliverers: dict[str, Deliverer],
        *,
        grace: float = 5.0,
    ) -> None:
        self._store = store
        self._watch = watch
        self._deliverers = deliverers
        self._grace = grace
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Resume every pending job (one task each); how many. Nothing pending: nothing happens."""
        try:
            ids = await self._store.pending()
        except RedisError as exc:
            log.warning("cannot resume questions that were running: %s", exc)
            return 0
        count = 0
        for job_id in ids:
            try:
                job = await self._store.get(job_id)
            except DependencyUnavailable:
                continue
            if job is None:
                await self._store.done(job_id)  # its record expired: nothing left to deliver to
                continue
            if job.surface not in self._deliverers:
                continue  # a surface this replica does not run (Mattermost not configured here)
            task = asyncio.create_task(self._resume(job), name=f"resume-{job_id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            count += 1
        if count:
            log.info("resuming %d question(s) that were running before the restart", count)
        return count

    async def _resume(self, job: PendingJob) -> None:
        extra = {"job_id": job.job_id, "user": job.user}
        try:
            watch = await self._watch(job.job_id)
            try:
                result: InvestigationResult | None = await watch.result(job.deadline + self._grace)
            except TimeoutError:
                result = None
            finally:
                await watch.close()
            await self._deliverers[job.surface](job, result)
            await self._store.done(job.job_id)
            log.info("resumed a question's answer", extra={**extra, "answered": result is not None})
        except asyncio.CancelledError:
            raise
        except Exception:  # a task's edge: the job stays pending for the next start
            log.exception("resuming a question failed", extra=extra)

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    async def wait(self) -> None:
        """Until every resumed job is delivered (tests)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))
