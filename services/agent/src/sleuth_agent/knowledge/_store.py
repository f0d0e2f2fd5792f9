"""Where runbooks come from, and the index every agent keeps of them.

- **A directory** (``knowledge.runbooks_dir``): ``*.md`` files, the GitOps way (a ConfigMap mounted
  into the agent pods). The id is the file name without ``.md``. A file that is not a valid runbook
  is skipped with one warning naming the file and the reason (and counted); the others load.
- **Redis** (``<prefix>:agent:kb:runbook:<id>``, the set ``<prefix>:agent:kb:ids``): runbooks added
  through chat (``kb add``). Each write bumps ``<prefix>:agent:kb:version``.

:class:`Knowledge` rebuilds its :class:`~sleuth_agent.knowledge.RunbookIndex` when the directory
(names, sizes, modification times) or the Redis version changed, checked every
``reload_interval`` seconds — cheap (one ``stat`` per file, one GET), and a restarted or new agent
needs no message to catch up. A directory runbook wins over a chat one with the same id. At most
``max_runbooks`` load (directory first, then by id). Redis down: the directory's runbooks still
serve, and the answer never fails because of the knowledge base.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_agent.knowledge._runbooks import Runbook, RunbookError, parse_runbook
from sleuth_agent.knowledge._search import Hit, RunbookIndex, Visibility

log = logging.getLogger(__name__)

__all__ = ["Knowledge", "RunbookStore"]


class RunbookStore:
    """Chat-added runbooks in Redis: the text as written, who wrote it, when."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self._redis = redis
        self._p = f"{prefix}:agent:kb"

    def _key(self, id: str) -> str:
        return f"{self._p}:runbook:{id}"

    async def version(self) -> int:
        raw = await self._redis.get(f"{self._p}:version")
        return int(raw or 0)

    async def all(self) -> list[tuple[str, dict[str, object]]]:
        ids = sorted((i.decode() if isinstance(i, bytes) else str(i)) for i in await self._redis.smembers(f"{self._p}:ids"))
        if not ids:
            return []
        raws = await self._redis.mget([self._key(i) for i in ids])
        out = []
        for id, raw in zip(ids, raws, strict=True):
            if raw is None:
                continue
            try:
                doc = json.loads(raw)
            except ValueError:
                log.warning("runbook %s in Redis is unreadable; skipped", id)
                continue
            if isinstance(doc, dict):
                out.append((id, doc))
        return out

    async def put(self, runbook: Runbook, text: str, by: str) -> None:
        doc = json.dumps({"text": text, "by": by, "updated": runbook.updated})
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._key(runbook.id), doc)
            pipe.sadd(f"{self._p}:ids", runbook.id)
            pipe.incr(f"{self._p}:version")
            await pipe.execute()

    async def delete(self, id: str) -> bool:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(id))
            pipe.srem(f"{self._p}:ids", id)
            pipe.incr(f"{self._p}:version")
            deleted, _, _ = await pipe.execute()
        return bool(deleted)


@dataclass(frozen=True)
class _Loaded:
    index: RunbookIndex
    dir_signature: tuple[tuple[str, int, int], ...]
    version: int
    skipped: int


class Knowledge:
    """The runbooks this agent answers with, kept fresh; searching never raises."""

    def __init__(self, runbooks_dir: str, store: RunbookStore | None, *, max_runbooks: int = 1000,
                 max_bytes: int = 65_536, reload_interval: float = 10.0, search_timeout: float = 0.5) -> None:
        self._dir = Path(runbooks_dir) if runbooks_dir else None
        self._store = store
        self.max_runbooks = max_runbooks
        self.max_bytes = max_bytes
        self._interval = reload_interval
        self._search_timeout = search_timeout
        self._loaded = _Loaded(RunbookIndex([]), (), -1, 0)
        self._checked = 0.0
        self._lock = asyncio.Lock()

    @property
    def index(self) -> RunbookIndex:
        return self._loaded.index

    @property
    def enabled(self) -> bool:
        return self._dir is not None or self._store is not None

    def _dir_signature(self) -> tuple[tuple[str, int, int], ...]:
        if self._dir is None:
            return ()
        try:
            files = sorted(self._dir.glob("*.md"))
            return tuple((f.name, (st := f.stat()).st_size, st.st_mtime_ns) for f in files if f.is_file())
        except OSError as e:
            log.warning("cannot read the runbooks directory %s: %s", self._dir, e)
            return ()

    async def refresh(self, *, force: bool = False) -> bool:
        """Reload when something changed, checked at most every ``reload_interval`` (``force``: check
        now). Returns whether the index was rebuilt."""
        now = time.monotonic()
        if not force and now - self._checked < self._interval:
            return False
        async with self._lock:
            self._checked = time.monotonic()
            signature = await asyncio.to_thread(self._dir_signature)
            version = self._loaded.version
            if self._store is not None:
                try:
                    version = await self._store.version()
                except (RedisError, OSError) as e:
                    log.warning("runbooks in Redis are unavailable (%s); keeping what is loaded", e)
            if signature == self._loaded.dir_signature and version == self._loaded.version:
                return False
            runbooks, skipped, store_ok = await self._load(signature)
            index = await asyncio.to_thread(RunbookIndex, runbooks)
            if not store_ok:
                version = -1  # read them again at the next check
            self._loaded = _Loaded(index, signature, version, skipped)
            log.info("runbooks loaded: %d (%d skipped)", len(index), skipped)
            return True

    async def _load(self, signature: Sequence[tuple[str, int, int]]) -> tuple[list[Runbook], int, bool]:
        found: dict[str, Runbook] = {}
        skipped, store_ok = 0, True
        if self._dir is not None:
            for name, _, mtime in signature:
                id = name[:-3]
                try:
                    text = (self._dir / name).read_text("utf-8")
                    found[id] = parse_runbook(text, id=id, source=f"dir:{name}", max_bytes=self.max_bytes,
                                              updated=mtime / 1e9)
                except (OSError, UnicodeDecodeError, RunbookError) as e:
                    skipped += 1
                    log.warning("runbook file %s skipped: %s", name, e)
        if self._store is not None:
            try:
                stored = await self._store.all()
            except (RedisError, OSError) as e:
                log.warning("runbooks in Redis are unavailable (%s); the directory's only", e)
                stored, store_ok = [], False
            for id, doc in stored:
                if id in found:
                    continue  # the directory (GitOps) wins
                updated = doc.get("updated")
                try:
                    found[id] = parse_runbook(str(doc.get("text", "")), id=id, source=f"chat:{doc.get('by', '')}",
                                              max_bytes=self.max_bytes,
                                              updated=float(updated) if isinstance(updated, int | float) else 0.0)
                except (RunbookError, TypeError, ValueError) as e:
                    skipped += 1
                    log.warning("runbook %s from Redis skipped: %s", id, e)
        dir_first = sorted(found.values(), key=lambda r: (not r.source.startswith("dir:"), r.id))
        if len(dir_first) > self.max_runbooks:
            skipped += len(dir_first) - self.max_runbooks
            log.warning("more than %d runbooks: %d left out", self.max_runbooks, len(dir_first) - self.max_runbooks)
        return dir_first[: self.max_runbooks], skipped, store_ok

    async def run(self) -> None:
        """Check for changes every ``reload_interval`` seconds until cancelled."""
        while True:
            try:
                await self.refresh()
            except Exception:  # a bug here must never stop answers
                log.exception("reloading runbooks failed")
            await asyncio.sleep(self._interval)

    async def search(self, text: str, tags: frozenset[str], visible: Sequence[Visibility], *, k: int = 1,
                     tagged_only: bool = False) -> list[Hit]:
        """The best runbooks any of ``visible`` allows; [] when nothing matches, the search takes
        longer than ``search_timeout`` or fails (logged)."""
        index = self.index
        if not len(index) or not visible:
            return []

        def run() -> list[Hit]:
            seen: dict[str, Hit] = {}
            for v in visible:
                for hit in index.search(text, tags, visible=v, k=k, tagged_only=tagged_only):
                    seen.setdefault(hit.runbook.id, hit)
            return sorted(seen.values(), key=lambda h: (-h.weight, -h.score, h.runbook.id))[:k]

        try:
            return await asyncio.wait_for(asyncio.to_thread(run), self._search_timeout)
        except TimeoutError:
            log.warning("runbook search took longer than %gs; answering without it", self._search_timeout)
        except Exception:
            log.exception("runbook search failed; answering without it")
        return []
