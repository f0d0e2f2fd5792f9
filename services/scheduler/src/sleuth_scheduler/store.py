"""Schedules and their runs in Redis (DESIGN §1 State). Only keys under ``<prefix>:scheduler:``
(the scheduler's Redis ACL); no SCAN (the ACL does not grant it): every listing is an index.

Keys (``<p>`` = ``<prefix>:scheduler``):
- ``<p>:s:<id>`` hash: the schedule (owner, groups, target, thread, members, timing, question,
  created, paused, failures, disabled, next occurrence, counters);
- ``<p>:owner:<user>`` / ``<p>:target:<target>`` sets of ids (listing, the per-user and
  per-target maxima);
- ``<p>:due`` sorted set id → next occurrence + the schedule's jitter (active schedules only:
  paused, disabled and ended ones are not in it);
- ``<p>:fired:<id>:<occurrence>`` string, ``SET NX`` with a TTL: the replica that sets it fires
  that occurrence, nobody else (the claim also moves ``next`` on, atomically, in one script);
- ``<p>:run:<job>`` hash: one run (what its job and its post need, so a replica that did not
  start it can publish or answer it);
- ``<p>:pending`` sorted set job → claim time: claimed, not yet on the JOBS stream;
- ``<p>:runs`` sorted set job → deadline: on the JOBS stream, waiting for the answer.

Times are the service clock's unix seconds (occurrences as whole seconds).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError
from redis.asyncio import Redis

from sleuth_common.messages import Requester
from sleuth_scheduler.timing import Timing

__all__ = ["Run", "Schedule", "Store", "unique_members"]

_CREATE = """
-- KEYS: sched, owner set, target set, due ; ARGV: id, max_user, max_target, due score ('' = none), field pairs…
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[2]) then return -1 end
if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[3]) then return -2 end
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1]) end
return 1
"""

_DELETE = """
-- KEYS: sched, owner set, target set, due ; ARGV: id, user
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1
"""

_PAUSE = """
-- KEYS: sched, due ; ARGV: id, user, paused ('1'/'0'), due score, next ('' = ended)
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return 0 end
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'paused', '1')
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 1
end
redis.call('HSET', KEYS[1], 'paused', '0', 'disabled', '', 'failures', 0, 'next', ARGV[5])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) else redis.call('ZREM', KEYS[2], ARGV[1]) end
return 1
"""

_CLAIM = """
-- KEYS: sched, due, fired, run, pending
-- ARGV: id, expected next, new next ('' = ended), new due, fired ttl, job ('' = skip only), now,
--       skipped, run ttl, run field pairs…
local cur = redis.call('HGET', KEYS[1], 'next')
if (not cur) or cur ~= ARGV[2] then return 0 end
if redis.call('HGET', KEYS[1], 'paused') == '1' then return 0 end
local disabled = redis.call('HGET', KEYS[1], 'disabled')
if disabled and disabled ~= '' then return 0 end
if ARGV[6] ~= '' then
  if not redis.call('SET', KEYS[3], ARGV[6], 'NX', 'EX', ARGV[5]) then return 0 end
end
if ARGV[3] == '' then
  redis.call('HSET', KEYS[1], 'next', '')
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[1], 'next', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
end
if tonumber(ARGV[8]) > 0 then redis.call('HINCRBY', KEYS[1], 'skipped', ARGV[8]) end
if ARGV[6] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'runs', 1)
  redis.call('HSET', KEYS[4], unpack(ARGV, 10))
  redis.call('EXPIRE', KEYS[4], ARGV[9])
  redis.call('ZADD', KEYS[5], ARGV[7], ARGV[6])
end
return 1
"""

_TAKE = """
-- KEYS: due ; ARGV: now, lease until, limit. The due schedules this replica handles: their due
-- time moves to the end of a lease, so no other replica looks at them meanwhile (a replica that
-- dies holding them leaves them due again when the lease ends).
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
return ids
"""

_SET_FIELD = """
-- KEYS: sched ; ARGV: field, value. Only on a schedule that still exists.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

_TAKEOVER = """
-- KEYS: pending ; ARGV: job, claimed at (as read), now. One replica takes a stale claim over.
local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not at) or tonumber(at) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
"""

_FINISH = """
-- KEYS: run, runs, pending, sched, due ; ARGV: job, outcome, failed ('1'/'0'), max failures, reason, now, id, ttl
if redis.call('EXISTS', KEYS[1]) == 0 then return -2 end
if redis.call('HSETNX', KEYS[1], 'done', ARGV[2]) == 0 then return -1 end
redis.call('EXPIRE', KEYS[1], ARGV[8])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('EXISTS', KEYS[4]) == 0 then return 0 end
redis.call('HSET', KEYS[4], 'last_status', ARGV[2], 'last_run', ARGV[6])
if ARGV[3] == '1' then
  local failures = redis.call('HINCRBY', KEYS[4], 'failures', 1)
  local disabled = redis.call('HGET', KEYS[4], 'disabled')
  if failures >= tonumber(ARGV[4]) and ((not disabled) or disabled == '') then
    redis.call('HSET', KEYS[4], 'disabled', ARGV[5])
    redis.call('ZREM', KEYS[5], ARGV[7])
    return 2
  end
  return 1
end
redis.call('HSET', KEYS[4], 'failures', 0)
return 1
"""


def unique_members(members: Iterable[Requester]) -> tuple[Requester, ...]:
    """``members`` with each identity once (same user and set of groups), groups sorted."""
    seen = {(r.user, tuple(sorted(set(r.groups)))) for r in members}
    return tuple(Requester(user=u, groups=g) for u, g in sorted(seen))


def _requesters_json(members: Iterable[Requester]) -> str:
    return json.dumps([{"user": r.user, "groups": list(r.groups)} for r in members])


def _requesters(blob: str) -> tuple[Requester, ...] | None:
    """Stored identities; None when unreadable (the caller fails closed)."""
    try:
        raw = json.loads(blob or "[]")
        if not isinstance(raw, list):
            return None
        return tuple(Requester.model_validate(m) for m in raw)
    except (ValueError, ValidationError):
        return None


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _decode(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {_s(k): _s(v) for k, v in raw.items()}


@dataclass(frozen=True)
class Schedule:
    id: str
    owner: Requester
    target: str
    timing: Timing
    question: str
    thread: str = ""
    members: tuple[Requester, ...] = ()
    """Everyone who reads ``target`` (the gateway's list, the owner included); () = only the owner."""
    created: float = 0.0
    paused: bool = False
    failures: int = 0
    disabled: str = ""
    next: int | None = None
    skipped: int = 0
    runs: int = 0
    readable: bool = True
    """False when the stored members could not be read: such a schedule does not run."""
    what: Literal["question", "report"] = "question"
    """``question``: each run is an investigation job; ``report``: a best-practice report (the
    reporter makes and posts it)."""

    def audience(self) -> tuple[Requester, ...]:
        """The readers other than the owner (who is the requester, with the groups of their last
        command): the job's ``audience``."""
        return tuple(m for m in unique_members(self.members) if m.user != self.owner.user)

    def fields(self) -> dict[str, str]:
        t = self.timing
        return {
            "owner": self.owner.user, "groups": json.dumps(list(self.owner.groups)), "target": self.target,
            "thread": self.thread, "members": _requesters_json(unique_members(self.members)),
            "kind": t.kind, "every": str(t.every), "anchor": str(t.anchor), "cron": t.cron, "tz": t.tz,
            "text": t.text, "question": self.question, "created": repr(self.created),
            "paused": "1" if self.paused else "0", "failures": str(self.failures), "disabled": self.disabled,
            "next": "" if self.next is None else str(self.next), "skipped": str(self.skipped),
            "runs": str(self.runs), "what": self.what,
        }

    @classmethod
    def from_fields(cls, sid: str, d: Mapping[str, str]) -> Schedule:
        members = _requesters(d.get("members", ""))
        kind: Literal["interval", "cron"] = "interval" if d.get("kind") == "interval" else "cron"
        timing = Timing(kind=kind, tz=d.get("tz", "UTC"), text=d.get("text", ""),
                        every=int(d.get("every") or 0), anchor=int(d.get("anchor") or 0), cron=d.get("cron", ""))
        try:
            groups = tuple(json.loads(d.get("groups") or "[]"))
        except ValueError:
            groups = ()
        nxt = d.get("next", "")
        return cls(
            id=sid, owner=Requester(user=d.get("owner", ""), groups=groups), target=d.get("target", ""),
            timing=timing, question=d.get("question", ""), thread=d.get("thread", ""), members=members or (),
            created=float(d.get("created") or 0), paused=d.get("paused") == "1",
            failures=int(d.get("failures") or 0), disabled=d.get("disabled", ""),
            next=int(nxt) if nxt else None, skipped=int(d.get("skipped") or 0), runs=int(d.get("runs") or 0),
            readable=members is not None, what="report" if d.get("what") == "report" else "question",
        )


@dataclass(frozen=True)
class Run:
    """One run of a schedule: everything its job and its post need."""

    job: str
    schedule: str
    occurrence: int
    owner: Requester
    audience: tuple[Requester, ...]
    target: str
    thread: str
    question: str
    header: str
    manual: bool = False
    done: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    what: Literal["question", "report"] = "question"

    def fields(self) -> dict[str, str]:
        return {
            "job": self.job, "schedule": self.schedule, "occurrence": str(self.occurrence),
            "owner": self.owner.user, "groups": json.dumps(list(self.owner.groups)),
            "audience": _requesters_json(self.audience), "target": self.target, "thread": self.thread,
            "question": self.question, "header": self.header, "manual": "1" if self.manual else "0",
            "what": self.what,
        }

    @classmethod
    def from_fields(cls, d: Mapping[str, str]) -> Run | None:
        audience = _requesters(d.get("audience", ""))
        if audience is None or not d.get("job"):
            return None
        try:
            groups = tuple(json.loads(d.get("groups") or "[]"))
        except ValueError:
            return None
        return cls(
            job=d["job"], schedule=d.get("schedule", ""), occurrence=int(d.get("occurrence") or 0),
            owner=Requester(user=d.get("owner", ""), groups=groups), audience=audience,
            target=d.get("target", ""), thread=d.get("thread", ""), question=d.get("question", ""),
            header=d.get("header", ""), manual=d.get("manual") == "1", done=d.get("done", ""),
            what="report" if d.get("what") == "report" else "question",
        )


def _flat(fields: Mapping[str, str]) -> list[str]:
    return [x for kv in fields.items() for x in kv]


class Store:
    def __init__(self, redis: Redis, prefix: str, *, fired_ttl: float = 172800.0, run_ttl: float = 86400.0) -> None:
        self.redis = redis
        self.p = f"{prefix}:scheduler"
        self.fired_ttl = max(int(fired_ttl), 1)
        self.run_ttl = max(int(run_ttl), 1)
        self._create = redis.register_script(_CREATE)
        self._delete = redis.register_script(_DELETE)
        self._pause = redis.register_script(_PAUSE)
        self._claim = redis.register_script(_CLAIM)
        self._takeover = redis.register_script(_TAKEOVER)
        self._set_field = redis.register_script(_SET_FIELD)
        self._take = redis.register_script(_TAKE)
        self._finish = redis.register_script(_FINISH)

    # ------------------------------------------------------------------ keys
    def _sched(self, sid: str) -> str:
        return f"{self.p}:s:{sid}"

    def _owner(self, user: str) -> str:
        return f"{self.p}:owner:{user}"

    def _target(self, target: str) -> str:
        return f"{self.p}:target:{target}"

    def _run(self, job: str) -> str:
        return f"{self.p}:run:{job}"

    @property
    def _due(self) -> str:
        return f"{self.p}:due"

    @property
    def _pending(self) -> str:
        return f"{self.p}:pending"

    @property
    def _runs(self) -> str:
        return f"{self.p}:runs"

    # ------------------------------------------------------------------ schedules
    async def create(self, s: Schedule, due: float | None, *, max_user: int, max_target: int) -> str:
        """``created``, or why not: ``user_full``, ``target_full``, ``exists``."""
        res = int(await self._create(
            keys=[self._sched(s.id), self._owner(s.owner.user), self._target(s.target), self._due],
            args=[s.id, max_user, max_target, "" if due is None else repr(due), *_flat(s.fields())],
        ))
        return {1: "created", -1: "user_full", -2: "target_full"}.get(res, "exists")

    async def get(self, sid: str) -> Schedule | None:
        raw = await self.redis.hgetall(self._sched(sid))
        return Schedule.from_fields(sid, _decode(raw)) if raw else None

    async def many(self, ids: Iterable[str]) -> list[Schedule]:
        ids = sorted(ids)
        if not ids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for sid in ids:
            pipe.hgetall(self._sched(sid))
        out = []
        for sid, raw in zip(ids, await pipe.execute(), strict=True):
            if raw:
                out.append(Schedule.from_fields(sid, _decode(raw)))
        return out

    async def of_owner(self, user: str) -> list[Schedule]:
        return await self.many(_s(x) for x in await self.redis.smembers(self._owner(user)))

    async def of_target(self, target: str) -> list[Schedule]:
        return await self.many(_s(x) for x in await self.redis.smembers(self._target(target)))

    async def delete(self, s: Schedule, user: str) -> bool:
        res = await self._delete(
            keys=[self._sched(s.id), self._owner(s.owner.user), self._target(s.target), self._due], args=[s.id, user]
        )
        return bool(int(res))

    async def pause(self, s: Schedule, user: str) -> bool:
        res = await self._pause(keys=[self._sched(s.id), self._due], args=[s.id, user, "1", "0", ""])
        return bool(int(res))

    async def resume(self, s: Schedule, user: str, nxt: int | None, due: float) -> bool:
        res = await self._pause(
            keys=[self._sched(s.id), self._due],
            args=[s.id, user, "0", repr(due), "" if nxt is None else str(nxt)],
        )
        return bool(int(res))

    async def set_groups(self, ids: Iterable[str], groups: Iterable[str]) -> None:
        """The owner's groups as the gateway authenticated them last, on these schedules."""
        blob = json.dumps(sorted(set(groups)))
        for sid in ids:
            await self._set_field(keys=[self._sched(sid)], args=["groups", blob])

    async def set_members(self, target: str, members: Iterable[Requester]) -> int:
        """Replace the readers stored with every schedule of ``target``; how many were changed."""
        ids = [_s(x) for x in await self.redis.smembers(self._target(target))]
        if not ids:
            return 0
        blob = _requesters_json(unique_members(members))
        for sid in ids:
            await self._set_field(keys=[self._sched(sid)], args=["members", blob])
        return len(ids)

    async def take_due(self, now: float, lease: float, limit: int) -> list[str]:
        """Up to ``limit`` schedules due by ``now``, leased to the caller for ``lease`` seconds
        (``claim`` moves each on to its next occurrence; ``set_due`` puts one back)."""
        found = await self._take(keys=[self._due], args=[repr(now), repr(now + lease), limit])
        return [_s(x) for x in found]

    async def earliest_due(self) -> float | None:
        """When the next schedule is due (None: none is active)."""
        found = await self.redis.zrange(self._due, 0, 0, withscores=True)
        return float(found[0][1]) if found else None

    async def set_due(self, sid: str, due: float) -> None:
        await self.redis.zadd(self._due, {sid: due}, xx=True)

    async def active(self) -> int:
        return int(await self.redis.zcard(self._due))

    async def remove_due(self, sid: str) -> None:
        """Take an id whose schedule is gone out of the due set."""
        await self.redis.zrem(self._due, sid)

    # ------------------------------------------------------------------ runs
    async def claim(self, s: Schedule, occurrence: int, nxt: int | None, due: float, *, skipped: int,
                    run: Run | None, now: float) -> bool:
        """Move ``s`` on from its stored next occurrence to ``nxt`` (next due time ``due``),
        counting ``skipped`` occurrences passed over; with ``run``, also claim ``occurrence`` for it
        (``SET NX`` of its fired mark) and record the run as pending. False when another replica
        got there first (or the schedule was paused, disabled or changed meanwhile)."""
        fired = f"{self.p}:fired:{s.id}:{occurrence}"
        res = await self._claim(
            keys=[self._sched(s.id), self._due, fired, self._run(run.job if run else "-"), self._pending],
            args=[s.id, "" if s.next is None else str(s.next), "" if nxt is None else str(nxt), repr(due), self.fired_ttl,
                  run.job if run else "", repr(now), skipped, self.run_ttl, *(_flat(run.fields()) if run else [])],
        )
        return bool(int(res))

    async def start_run(self, run: Run, now: float) -> None:
        """Record a run started by hand (``run <id>``) as pending."""
        pipe = self.redis.pipeline(transaction=True)
        fields: dict[Any, Any] = run.fields()
        pipe.hset(self._run(run.job), mapping=fields)
        pipe.expire(self._run(run.job), self.run_ttl)
        pipe.hincrby(self._sched(run.schedule), "runs", 1)
        pipe.zadd(self._pending, {run.job: now})
        await pipe.execute()

    async def published(self, job: str, deadline: float) -> None:
        """The run's job is on the JOBS stream; its answer is due by ``deadline``."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.zrem(self._pending, job)
        pipe.zadd(self._runs, {job: deadline})
        await pipe.execute()

    async def run(self, job: str) -> Run | None:
        raw = await self.redis.hgetall(self._run(job))
        return Run.from_fields(_decode(raw)) if raw else None

    async def waiting(self) -> set[str]:
        """Jobs claimed or on the stream whose answer has not been handled."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrange(self._pending, 0, -1)
        pipe.zrange(self._runs, 0, -1)
        pending, runs = await pipe.execute()
        return {_s(x) for x in (*pending, *runs)}

    async def stale_claims(self, before: float) -> list[tuple[str, float]]:
        found: list[Any] = await self.redis.zrangebyscore(
            self._pending, "-inf", before, withscores=True, start=0, num=100)
        return [(_s(item[0]), float(item[1])) for item in found]

    async def take_over(self, job: str, claimed_at: float, now: float) -> bool:
        return bool(int(await self._takeover(keys=[self._pending], args=[job, repr(claimed_at), repr(now)])))

    async def forget(self, job: str) -> None:
        """Drop a job whose run record is gone (expired) from the waiting sets."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.zrem(self._pending, job)
        pipe.zrem(self._runs, job)
        await pipe.execute()

    async def overdue(self, now: float) -> list[str]:
        return [_s(x) for x in await self.redis.zrangebyscore(self._runs, "-inf", now, start=0, num=100)]

    async def finish(self, run: Run, outcome: str, *, failed: bool, max_failures: int, reason: str,
                     now: float) -> str:
        """Record the run's outcome once: ``first`` (counted now), ``disabled`` (and that
        disabled the schedule), ``again`` (already recorded), ``gone`` (no such run)."""
        res = int(await self._finish(
            keys=[self._run(run.job), self._runs, self._pending, self._sched(run.schedule), self._due],
            args=[run.job, outcome, "1" if failed else "0", max_failures, reason, repr(now), run.schedule,
                  self.run_ttl],
        ))
        return {2: "disabled", 1: "first", 0: "first", -1: "again"}.get(res, "gone")
