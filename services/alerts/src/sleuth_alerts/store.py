"""Alert state in Redis: open windows, cooldowns, channel marks and batches (DESIGN §1 State).

Nothing about alerts lives only in the process: a restart finds its open windows, the
cooldowns and the batches in flight here. Times are the service clock's (unix seconds; tests
pass a fake clock); Redis TTLs only collect garbage.

Keys (``<p>`` = ``<prefix>:alerts``):
- ``<p>:win:new:<window>`` / ``<p>:win:ctx:<window>`` hashes fingerprint → alert JSON: the new
  alerts and the ones riding along in cooldown, together at most ``max_stored`` per window;
  ``<window>`` = ``<chat target>|<cluster>``, the cluster a configured one, "" or
  ``triage.UNKNOWN_CLUSTER``, so a sender cannot open more than (clusters + 2) per channel;
- ``<p>:win:left:<window>`` hash ``over_request`` / ``over_window``: alerts counted, not stored;
- ``<p>:due`` sorted set window → closing time;
- ``<p>:cool:<target>:<fingerprint>`` → end of the cooldown;
- ``<p>:mark:<target>`` hash user, groups (JSON), at, members (JSON list of ``{user, groups}``):
  who said ``alerts on`` and, for a channel only the gateway knows the members of (not ``web:``),
  who read it as of the last ``alerts on|status`` (a mark written before ``members`` existed
  reads as members ``()``);
- ``<p>:batch:<id>`` hash: target, cluster, new / ctx (JSON lines), over_request, over_window,
  state, created …; expires ``batch_ttl`` after closing; once posted, the alerts are deleted and
  the rest (the "posted" marker) expires ``posted_ttl`` later;
- ``<p>:closed`` sorted set of batches waiting for an investigation slot (by closing time);
- ``<p>:inflight`` sorted set of batches being investigated (by deadline).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from redis.asyncio import Redis

from sleuth_common.messages import AlertRef, Requester

__all__ = ["Batch", "Mark", "Store", "unique_members"]

_ADD = """
-- KEYS: win_new, win_ctx, due, cool, win_left
-- ARGV: fp, alert, now, close_at, cool_until, cool_ttl_ms, window, max_stored
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return 'duplicate'
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0
   and redis.call('HLEN', KEYS[1]) + redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[8]) then
  redis.call('HINCRBY', KEYS[5], 'over_window', 1)
  redis.call('ZADD', KEYS[3], 'NX', ARGV[4], ARGV[7])
  return 'over_window'
end
local until_ = redis.call('GET', KEYS[4])
local disp
if until_ and tonumber(until_) > tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  disp = 'cooldown'
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[6])
  disp = 'queued'
end
redis.call('ZADD', KEYS[3], 'NX', ARGV[4], ARGV[7])
return disp
"""

_LEFT_OUT = """
-- KEYS: win_left, due ; ARGV: field, n, close_at, window
redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[4])
return 1
"""

_CLOSE = """
-- KEYS: win_new, win_ctx, due, batch, closed, win_left ; ARGV: window, now, batch_id, target, cluster, ttl_s
local at = redis.call('ZSCORE', KEYS[3], ARGV[1])
if not at or tonumber(at) > tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[3], ARGV[1])
local new = redis.call('HVALS', KEYS[1])
local ctx = redis.call('HVALS', KEYS[2])
local over_request = tonumber(redis.call('HGET', KEYS[6], 'over_request') or '0')
local over_window = tonumber(redis.call('HGET', KEYS[6], 'over_window') or '0')
redis.call('DEL', KEYS[1], KEYS[2], KEYS[6])
if #new == 0 and over_request + over_window == 0 then return -1 end
redis.call('HSET', KEYS[4], 'target', ARGV[4], 'cluster', ARGV[5], 'new', table.concat(new, '\\n'),
           'ctx', table.concat(ctx, '\\n'), 'over_request', over_request, 'over_window', over_window,
           'state', 'closed', 'created', ARGV[2])
redis.call('EXPIRE', KEYS[4], ARGV[6])
redis.call('ZADD', KEYS[5], ARGV[2], ARGV[3])
return 1
"""


_SET_MEMBERS = """
-- KEYS: mark ; ARGV: members JSON. Only an existing mark (an unmark in between wins).
if redis.call('HEXISTS', KEYS[1], 'user') == 0 then return 0 end
redis.call('HSET', KEYS[1], 'members', ARGV[1])
return 1
"""


@dataclass(frozen=True)
class Mark:
    """A channel marked with ``alerts on``: investigations run with this user's access."""

    user: str
    groups: tuple[str, ...] = ()
    at: float = 0.0
    members: tuple[Requester, ...] = ()
    """Who reads the channel, as the gateway said at the last ``alerts on|status`` (only for
    channels whose members are not in the config; () = not known)."""


def unique_members(members: Iterable[Requester]) -> tuple[Requester, ...]:
    """``members`` with each identity once (same user and set of groups), groups sorted, in a
    stable order."""
    seen = {(r.user, tuple(sorted(set(r.groups)))) for r in members}
    return tuple(Requester(user=u, groups=g) for u, g in sorted(seen))


def _members_json(members: Iterable[Requester]) -> str:
    return json.dumps([{"user": r.user, "groups": list(r.groups)} for r in unique_members(members)])


def _members(blob: str) -> tuple[Requester, ...]:
    """Stored members; anything unreadable counts as "not known" (fail closed: a channel whose
    readers are not known gets no investigation)."""
    try:
        raw = json.loads(blob or "[]")
        return unique_members(Requester.model_validate(m) for m in raw) if isinstance(raw, list) else ()
    except (ValueError, ValidationError):
        return ()


@dataclass(frozen=True)
class Batch:
    id: str
    target: str
    cluster: str
    new: tuple[AlertRef, ...]
    ctx: tuple[AlertRef, ...] = ()
    state: str = "closed"
    created: float = 0.0
    meta: dict[str, str] = field(default_factory=dict)
    over_request: int = 0
    """Alerts of this window left out by ``max_alerts_per_request`` (counted, not stored)."""
    over_window: int = 0
    """Alerts of this window left out by ``max_stored_per_window``."""


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _alerts(blob: str) -> tuple[AlertRef, ...]:
    out = []
    for line in blob.split("\n"):
        if line.strip():
            out.append(AlertRef.model_validate_json(line))
    return tuple(sorted(out, key=lambda a: (a.starts_at, a.fingerprint)))


class Store:
    def __init__(
        self, redis: Redis, prefix: str, *, batch_ttl: float = 3600.0, posted_ttl: float = 3600.0
    ) -> None:
        self.redis = redis
        self.p = f"{prefix}:alerts"
        self.batch_ttl = max(int(batch_ttl), 1)
        self.posted_ttl = max(int(posted_ttl), 1)
        self._add = redis.register_script(_ADD)
        self._left_out = redis.register_script(_LEFT_OUT)
        self._close = redis.register_script(_CLOSE)
        self._set_members = redis.register_script(_SET_MEMBERS)

    # ------------------------------------------------------------------ windows
    @staticmethod
    def window(target: str, cluster: str) -> str:
        return f"{target}|{cluster}"

    def _win_keys(self, window: str) -> tuple[str, str]:
        return f"{self.p}:win:new:{window}", f"{self.p}:win:ctx:{window}"

    def _left_key(self, window: str) -> str:
        return f"{self.p}:win:left:{window}"

    async def add(
        self,
        target: str,
        cluster: str,
        alert: AlertRef,
        *,
        now: float,
        window: float,
        cooldown: float,
        max_stored: int = 500,
    ) -> str:
        """Put one alert in its open window: ``queued`` (new, cooldown starts), ``cooldown`` (rides
        along as context), ``duplicate`` (already in this window) or ``over_window`` (the window
        holds ``max_stored`` alerts: counted, not stored). Opens the window if needed."""
        win = self.window(target, cluster)
        new, ctx = self._win_keys(win)
        cool = f"{self.p}:cool:{target}:{alert.fingerprint}"
        ttl_ms = int(max(cooldown, 1.0) * 1000) + 60_000
        res = await self._add(
            keys=[new, ctx, f"{self.p}:due", cool, self._left_key(win)],
            args=[
                alert.fingerprint,
                alert.model_dump_json(),
                now,
                now + window,
                now + cooldown,
                ttl_ms,
                win,
                max_stored,
            ],
        )
        return _s(res)

    async def left_out(self, target: str, cluster: str, n: int, *, now: float, window: float) -> None:
        """Count ``n`` alerts of this window left out by ``max_alerts_per_request`` (opens the
        window if needed, so its post reports them)."""
        win = self.window(target, cluster)
        await self._left_out(
            keys=[self._left_key(win), f"{self.p}:due"], args=["over_request", n, now + window, win]
        )

    async def due_windows(self, now: float) -> list[str]:
        found = await self.redis.zrangebyscore(f"{self.p}:due", "-inf", now)
        return [_s(w) for w in found]

    async def close(self, window: str, now: float) -> str | None:
        """Close a due window into a batch (atomic: with several replicas only one closes it).
        Returns the batch id, or None if it was not due, already closed, or held nothing new."""
        target, _, cluster = window.rpartition("|")
        new, ctx = self._win_keys(window)
        batch_id = uuid.uuid4().hex
        res = await self._close(
            keys=[
                new,
                ctx,
                f"{self.p}:due",
                f"{self.p}:batch:{batch_id}",
                f"{self.p}:closed",
                self._left_key(window),
            ],
            args=[window, now, batch_id, target, cluster, self.batch_ttl],
        )
        return batch_id if int(res) == 1 else None

    async def pending_alerts(self) -> int:
        """New alerts waiting in open windows (the ``sleuth_alerts_pending`` gauge)."""
        windows = await self.redis.zrange(f"{self.p}:due", 0, -1)
        if not windows:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for w in windows:
            pipe.hlen(self._win_keys(_s(w))[0])
        return int(sum(await pipe.execute()))

    # ------------------------------------------------------------------ batches
    async def batch(self, batch_id: str) -> Batch | None:
        raw = await self.redis.hgetall(f"{self.p}:batch:{batch_id}")
        if not raw:
            return None
        d = {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in raw.items()
        }
        meta = {k[5:]: v for k, v in d.items() if k.startswith("meta.")}
        return Batch(
            id=batch_id,
            target=d.get("target", ""),
            cluster=d.get("cluster", ""),
            new=_alerts(d.get("new", "")),
            ctx=_alerts(d.get("ctx", "")),
            state=d.get("state", ""),
            created=float(d.get("created", 0) or 0),
            meta=meta,
            over_request=int(d.get("over_request", 0) or 0),
            over_window=int(d.get("over_window", 0) or 0),
        )

    async def closed_batches(self, limit: int) -> list[str]:
        if limit <= 0:
            return []
        found = await self.redis.zrange(f"{self.p}:closed", 0, limit - 1)
        return [_s(b) for b in found]

    async def inflight_count(self) -> int:
        return int(await self.redis.zcard(f"{self.p}:inflight"))

    async def overdue(self, now: float) -> list[str]:
        found = await self.redis.zrangebyscore(f"{self.p}:inflight", "-inf", now)
        return [_s(b) for b in found]

    async def submitted(self, batch_id: str, deadline: float, **meta: str) -> None:
        """The job is on the JOBS stream: the batch moves from waiting to in flight."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(
            f"{self.p}:batch:{batch_id}",
            mapping={"state": "submitted", **{f"meta.{k}": v for k, v in meta.items()}},
        )
        pipe.zadd(f"{self.p}:inflight", {batch_id: deadline})
        pipe.zrem(f"{self.p}:closed", batch_id)
        await pipe.execute()

    async def posted(self, batch_id: str, **meta: str) -> bool:
        """Mark the batch answered; False when it already was (the answer is not posted twice).
        Its alerts are deleted; the marker stays ``posted_ttl`` for a late or redelivered answer."""
        key = f"{self.p}:batch:{batch_id}"
        # HSETNX on a dedicated field makes "first answer wins" atomic across replicas.
        first = bool(await self.redis.hsetnx(key, "posted", "1"))
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(key, mapping={"state": "posted", **{f"meta.{k}": v for k, v in meta.items()}})
        pipe.hdel(key, "new", "ctx", "meta.asked", "meta.over", "meta.ctx")
        pipe.expire(key, self.posted_ttl)
        pipe.zrem(f"{self.p}:inflight", batch_id)
        pipe.zrem(f"{self.p}:closed", batch_id)
        await pipe.execute()
        return first

    async def is_posted(self, batch_id: str) -> bool:
        return bool(await self.redis.hexists(f"{self.p}:batch:{batch_id}", "posted"))

    # ------------------------------------------------------------------ marks
    async def mark(
        self, target: str, user: str, groups: tuple[str, ...], now: float, members: Iterable[Requester] = ()
    ) -> None:
        """Mark ``target`` as ``user``'s (replacing any mark, its members too)."""
        await self.redis.hset(
            f"{self.p}:mark:{target}",
            mapping={"user": user, "groups": json.dumps(list(groups)), "at": now, "members": _members_json(members)},
        )

    async def set_members(self, target: str, members: Iterable[Requester]) -> bool:
        """Replace the marked channel's members; False (nothing written) when it is not marked."""
        res = await self._set_members(keys=[f"{self.p}:mark:{target}"], args=[_members_json(members)])
        return bool(int(res))

    async def unmark(self, target: str) -> Mark | None:
        old = await self.get_mark(target)
        await self.redis.delete(f"{self.p}:mark:{target}")
        return old

    async def get_mark(self, target: str) -> Mark | None:
        raw = await self.redis.hgetall(f"{self.p}:mark:{target}")
        if not raw:
            return None
        d = {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in raw.items()
        }
        return Mark(
            user=d.get("user", ""),
            groups=tuple(json.loads(d.get("groups", "[]"))),
            at=float(d.get("at", 0) or 0),
            members=_members(d.get("members", "")),
        )

    async def cooling(self, target: str) -> int:
        """Alerts of this channel currently in cooldown (for ``alerts status``)."""
        n = 0
        async for _ in self.redis.scan_iter(match=f"{self.p}:cool:{target}:*", count=500):
            n += 1
        return n
