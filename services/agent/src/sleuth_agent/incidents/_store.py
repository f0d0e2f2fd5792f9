"""Where incidents live: Redis (the record), ``<prefix>.incidents.recorded`` (the news), and each
agent's :class:`IncidentIndex` (the search).

Redis, under the agent's own keys: ``<prefix>:agent:incidents:doc:<job id>`` (the incident as JSON,
expiring after ``max_age_days``) and the sorted set ``<prefix>:agent:incidents:by_time`` (job id by
time), trimmed at every write to ``max_incidents`` and the age limit.

:class:`IncidentMemory` loads the newest ``max_incidents`` at start — retried every
``reindex_interval`` while Redis is down, never holding up answers — and then hears each new
incident on the subject (every agent, including the one that recorded it: adding is idempotent by
job id). Searching happens in memory, in a worker thread, bounded by ``search_timeout``; storing
happens after the answer is out, bounded by ``redis_timeout``. Nothing here ever raises into a job.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from nats.errors import Error as NatsError
from pydantic import ValidationError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_agent.incidents._index import IncidentIndex, SeenBefore
from sleuth_agent.settings import IncidentsSettings
from sleuth_common.messages import Incident, IncidentRecorded, ScopeReply

log = logging.getLogger(__name__)

__all__ = ["IncidentMemory", "IncidentStore"]

_CHUNK = 500

Announce = Callable[[IncidentRecorded], Awaitable[None]]


class IncidentStore:
    def __init__(self, redis: Redis, prefix: str, *, max_incidents: int, max_age: float) -> None:
        self._redis = redis
        self._p = f"{prefix}:agent:incidents"
        self.max_incidents = max_incidents
        self.max_age = max_age

    def _doc(self, job_id: str) -> str:
        return f"{self._p}:doc:{job_id}"

    @property
    def _by_time(self) -> str:
        return f"{self._p}:by_time"

    async def put(self, incident: Incident, *, now: float | None = None) -> None:
        """Store (or replace) one incident and apply retention: age, then count (oldest first)."""
        now = time.time() if now is None else now
        ttl = max(1, int(self.max_age - (now - incident.at)))
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._doc(incident.job_id), incident.model_dump_json(), ex=ttl)
            pipe.zadd(self._by_time, {incident.job_id: incident.at})
            pipe.zremrangebyscore(self._by_time, "-inf", now - self.max_age)
            pipe.zrange(self._by_time, 0, -self.max_incidents - 1)
            *_, surplus = await pipe.execute()
        if surplus:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(*(self._doc(_s(j)) for j in surplus))
                pipe.zrem(self._by_time, *surplus)
                await pipe.execute()

    async def get(self, job_id: str) -> Incident | None:
        raw = await self._redis.get(self._doc(job_id))
        return _parse(raw)

    async def recent(self, *, now: float | None = None) -> list[Incident]:
        """The newest ``max_incidents`` incidents younger than the age limit."""
        now = time.time() if now is None else now
        raw = await self._redis.zrevrangebyscore(self._by_time, "+inf", now - self.max_age, start=0,
                                                 num=self.max_incidents)
        ids = [j.decode() if isinstance(j, bytes) else str(j) for j in raw]
        out: list[Incident] = []
        for n in range(0, len(ids), _CHUNK):
            for doc in await self._redis.mget([self._doc(j) for j in ids[n:n + _CHUNK]]):
                incident = _parse(doc)
                if incident is not None:
                    out.append(incident)
        return out


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _parse(raw: bytes | str | None) -> Incident | None:
    if raw is None:
        return None
    try:
        return Incident.model_validate_json(raw)
    except ValidationError:
        log.warning("an incident in Redis is unreadable; skipped")
        return None


class IncidentMemory:
    """This agent's incidents: loaded from Redis, fed from the bus, searched in memory."""

    def __init__(self, store: IncidentStore | None, settings: IncidentsSettings) -> None:
        self.settings = settings
        self._store = store
        self.index = IncidentIndex(settings.max_incidents, settings.max_age_days * 86400.0)
        self.loaded = store is None
        self._announce: Announce | None = None
        self._lock = asyncio.Lock()

    def announce_with(self, announce: Announce) -> None:
        self._announce = announce

    def heard(self, message: IncidentRecorded) -> None:
        """An incident announced by an agent (this one too)."""
        self.index.add([message.incident])

    async def load(self) -> bool:
        """Read Redis into the index (once it worked, never again). False while Redis is down."""
        if self.loaded or self._store is None:
            return True
        try:
            async with asyncio.timeout(self.settings.redis_timeout):
                stored = await self._store.recent()
        except (RedisError, OSError, TimeoutError) as e:
            log.warning("incidents in Redis are unavailable (%s); seen-before uses what it hears", e)
            return False
        self.index.add(stored)
        self.loaded = True
        log.info("incidents loaded: %d", len(self.index))
        return True

    async def run(self) -> None:
        """Load, then keep the BM25 index current, until cancelled."""
        while True:
            try:
                await self.load()
                if self.index.pending:
                    async with self._lock:
                        await asyncio.to_thread(self.index.rebuild)
            except Exception:  # a bug here must never stop answers
                log.exception("maintaining the incident index failed")
            await asyncio.sleep(self.settings.reindex_interval)

    async def search(self, query: Incident, scope: ScopeReply) -> list[SeenBefore]:
        """Earlier incidents like ``query`` in ``scope``; [] when there are none, the search takes
        longer than ``search_timeout`` or fails (logged)."""
        if not len(self.index):
            return []
        s = self.settings
        try:
            return await asyncio.wait_for(asyncio.to_thread(
                self.index.search, query, scope, k=s.shown, min_similarity=s.min_similarity), s.search_timeout)
        except TimeoutError:
            log.warning("seen-before search took longer than %gs; answering without it", s.search_timeout,
                        extra={"job_id": query.job_id})
        except Exception:
            log.exception("seen-before search failed; answering without it", extra={"job_id": query.job_id})
        return []

    async def find(self, job_id: str) -> Incident | None:
        """The incident of ``job_id`` as Redis holds it (the index, without Redis). Raises
        ``RedisError``/``OSError``/``TimeoutError`` when Redis fails — never falls back to the
        index then, so whether a job exists never shows in how a failure reads."""
        if self._store is None:
            return self.index.get(job_id)
        async with asyncio.timeout(self.settings.redis_timeout):
            return await self._store.get(job_id)

    async def replace(self, incident: Incident) -> bool:
        """Store ``incident`` in place of its earlier record (feedback), then index and announce it.
        False (nothing changed anywhere) when Redis cannot store it."""
        if self._store is not None:
            try:
                async with asyncio.timeout(self.settings.redis_timeout):
                    await self._store.put(incident)
            except (RedisError, OSError, TimeoutError) as e:
                log.warning("feedback not stored (%s)", e, extra={"job_id": incident.job_id})
                return False
        self.index.add([incident])
        if self._announce is not None:
            try:
                await self._announce(IncidentRecorded(incident=incident))
            except (NatsError, OSError, TimeoutError):  # the others load it from Redis at their next start
                log.warning("feedback not announced", exc_info=True, extra={"job_id": incident.job_id})
        return True

    async def record(self, incident: Incident) -> bool:
        """Store, announce and index ``incident`` (after its answer is out). False when it could
        not be stored (logged; the other agents still hear of it)."""
        self.index.add([incident])
        stored = self._store is None
        if self._store is not None:
            try:
                async with asyncio.timeout(self.settings.redis_timeout):
                    await self._store.put(incident)
                stored = True
            except (RedisError, OSError, TimeoutError) as e:
                log.warning("incident not stored (%s): it is remembered until the agents restart", e,
                            extra={"job_id": incident.job_id})
        if self._announce is not None:
            try:
                await self._announce(IncidentRecorded(incident=incident))
            except (NatsError, OSError, TimeoutError):  # the others load it from Redis at their next start
                log.warning("incident not announced", exc_info=True, extra={"job_id": incident.job_id})
        return stored
