"""What the reporter keeps in Redis, per report, so that any replica can finish a report another
one started (keys under ``<prefix>:reporter:``, all expiring after ``state_ttl``):

- ``r:<id>`` hash: who asked, where it goes and who reads it, its state (``ReportState``), the
  agent's answer once it came (``result``, dropped when the report is done: a redelivered task
  never asks the agent twice), whether it was posted, and the email's state and tries;
- ``email:<id>``: the one send of a report's email: ``sending:<token>`` while one replica sends
  it (a lease, so a replica that dies mid-send does not block it for ever), ``sent`` after;
- ``active:<target>``: the report being made for a target (a second ``report`` there gets its id
  instead of starting another), ``last:<target>``: the latest report of a target (``status``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError
from redis.asyncio import Redis

from sleuth_common.messages import InvestigationResult, ReportInfo, ReportState, ReportTask

__all__ = ["EmailClaim", "Record", "Store"]

EmailClaim = Literal["claimed", "sent", "busy"]

_RELEASE = """
-- KEYS: key ; ARGV: expected value
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass
class Record:
    """One report as stored."""

    id: str
    owner: str
    target: str
    thread: str = ""
    readers: str = "[]"
    """``meta["readers"]`` of its posts (JSON, ``audience_claims`` of the asker and the members)."""
    state: ReportState = "queued"
    created: float = 0.0
    finished: float = 0.0
    status: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    email: str = ""
    email_to: int = 0
    email_attempts: int = 0
    email_error: str = ""
    posted: bool = False
    result: InvestigationResult | None = None

    def info(self) -> ReportInfo:
        return ReportInfo(id=self.id, owner=self.owner, target=self.target, state=self.state,
                          created=self.created, finished=self.finished, status=self.status,
                          counts=self.counts, email=self.email, email_attempts=self.email_attempts)


class Store:
    def __init__(self, redis: Redis, prefix: str, ttl: float) -> None:
        self.redis = redis
        self.p = f"{prefix}:reporter"
        self.ttl = max(60, int(ttl))
        self._release = redis.register_script(_RELEASE)

    def _r(self, report_id: str) -> str:
        return f"{self.p}:r:{report_id}"

    def _email(self, report_id: str) -> str:
        return f"{self.p}:email:{report_id}"

    def _active(self, target: str) -> str:
        return f"{self.p}:active:{target}"

    def _last(self, target: str) -> str:
        return f"{self.p}:last:{target}"

    # ------------------------------------------------------------------ reports
    async def create(self, task: ReportTask, readers: str) -> None:
        req = task.request
        key = self._r(task.id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={
                "owner": req.user, "target": req.target, "thread": req.thread, "readers": readers,
                "state": "queued", "created": repr(task.created), "email": "pending" if task.emails else "none",
                "email_to": str(len(task.emails)),
            })
            pipe.expire(key, self.ttl)
            pipe.set(self._last(req.target), task.id, ex=self.ttl)
            await pipe.execute()

    async def forget(self, report_id: str, target: str) -> None:
        """Undo ``create`` (the task could not be queued)."""
        await self.redis.delete(self._r(report_id))
        await self._release(keys=[self._active(target)], args=[report_id])

    async def get(self, report_id: str) -> Record | None:
        raw: dict[str, str] = await self.redis.hgetall(self._r(report_id))  # type: ignore[assignment]
        if not raw or "owner" not in raw:
            return None
        result = None
        if raw.get("result"):
            try:
                result = InvestigationResult.model_validate_json(raw["result"])
            except ValidationError:
                result = None  # written by another version: ask the agent again
        return Record(
            id=report_id, owner=raw["owner"], target=raw.get("target", ""), thread=raw.get("thread", ""),
            readers=raw.get("readers", "[]"), state=raw.get("state", "queued"),  # type: ignore[arg-type]
            created=float(raw.get("created") or 0), finished=float(raw.get("finished") or 0),
            status=raw.get("status", ""), counts=json.loads(raw.get("counts") or "{}"),
            email=raw.get("email", ""), email_to=int(raw.get("email_to") or 0),
            email_attempts=int(raw.get("email_attempts") or 0), email_error=raw.get("email_error", ""),
            posted=bool(raw.get("posted")), result=result,
        )

    async def update(self, report_id: str, **fields: str) -> None:
        key = self._r(report_id)
        mapping: dict[Any, Any] = dict(fields)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, self.ttl)
            await pipe.execute()

    async def save_result(self, report_id: str, result: InvestigationResult) -> None:
        counts = result.report.counts if result.report is not None else {}
        await self.update(report_id, result=result.model_dump_json(), status=_status(result),
                          counts=json.dumps(counts))

    async def mark_posted(self, report_id: str) -> bool:
        """True the first time (metrics count a report once, whichever replica posts it)."""
        first = bool(await self.redis.hsetnx(self._r(report_id), "posted", repr(time.time())))
        await self.update(report_id, state="posted", finished=repr(time.time()))
        return first

    async def finish(self, report_id: str, state: ReportState, **fields: str) -> None:
        key = self._r(report_id)
        mapping: dict[Any, Any] = {"state": state, **fields}
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=mapping)
            pipe.hdel(key, "result")
            pipe.expire(key, self.ttl)
            await pipe.execute()

    # ------------------------------------------------------------------ one report per target at a time
    async def claim_active(self, target: str, report_id: str, ttl: float) -> str:
        """The id of the report being made for ``target``: ``report_id`` when none was."""
        key = self._active(target)
        if await self.redis.set(key, report_id, nx=True, ex=max(1, int(ttl))):
            return report_id
        current = await self.redis.get(key)
        return str(current) if current else report_id

    async def release_active(self, target: str, report_id: str) -> None:
        await self._release(keys=[self._active(target)], args=[report_id])

    async def last(self, target: str) -> str:
        return str(await self.redis.get(self._last(target)) or "")

    # ------------------------------------------------------------------ the email, once
    async def claim_email(self, report_id: str, token: str, lease: float) -> tuple[EmailClaim, float]:
        """``claimed`` (send it now), ``sent`` (already sent), or ``busy`` with the seconds left
        of another replica's lease."""
        key = self._email(report_id)
        if await self.redis.set(key, f"sending:{token}", nx=True, px=max(1, int(lease * 1000))):
            return "claimed", 0.0
        value = await self.redis.get(key)
        if value == "sent":
            return "sent", 0.0
        if value is None:  # the lease ran out just now
            return await self.claim_email(report_id, token, lease)
        left = await self.redis.pttl(key)
        return "busy", max(0.1, left / 1000 if left and left > 0 else lease)

    async def email_sent(self, report_id: str) -> None:
        await self.redis.set(self._email(report_id), "sent", ex=self.ttl)
        await self.update(report_id, email="sent", email_error="")

    async def email_failed(self, report_id: str, token: str, error: str) -> int:
        """Release the claim and count the try; returns the tries so far."""
        await self._release(keys=[self._email(report_id)], args=[f"sending:{token}"])
        tries = int(await self.redis.hincrby(self._r(report_id), "email_attempts", 1))
        await self.update(report_id, email="retrying", email_error=error[:300])
        return tries


def _status(result: InvestigationResult) -> str:
    if result.report is not None:
        return result.report.status
    return "denied" if result.status == "denied" else "error"
