"""``kb add|show|list|rm``: the chat command on runbooks, answered by one agent
(``<prefix>.agent.kb``, queue group ``agent``).

- ``list`` and ``show`` give only runbooks the asker may see (:class:`Visibility` on any cluster of
  their scope); one they may not see is "not known", exactly like one that does not exist.
- ``add`` and ``rm`` are for editors (the gateway says who: cluster admins). ``add`` parses the
  runbook strictly and refuses it with the reason; the count cap counts every runbook loaded; a
  directory runbook (GitOps) cannot be replaced or removed from chat. A change is stored in Redis
  and this agent reloads at once; the others within ``knowledge.reload_interval``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from faststream.nats import NatsRouter
from prometheus_client import Counter
from redis.exceptions import RedisError

from sleuth_agent._responders import command_router
from sleuth_agent.knowledge._runbooks import Runbook, RunbookError, md_plain, no_images, parse_runbook
from sleuth_agent.knowledge._search import Visibility
from sleuth_agent.knowledge._store import Knowledge, RunbookStore
from sleuth_common.messages import KbReply, KbRequest
from sleuth_common.subjects import Subjects

log = logging.getLogger(__name__)

__all__ = ["KbResponder", "kb_router"]

_LIST_MAX = 100
NOT_EDITOR = "Only cluster admins may add or remove runbooks."


def _unknown(id: str) -> str:
    return f"No runbook `{id}` that you can read. `kb list` shows the ones you can."


class KbResponder:
    def __init__(self, knowledge: Knowledge, store: RunbookStore | None) -> None:
        self.knowledge = knowledge
        self.store = store

    async def reply(self, req: KbRequest) -> KbReply:
        log.info("kb %s by %s", req.op, req.user, extra={"runbook": req.id})
        if req.op == "list":
            return self._list(req)
        if req.op == "show":
            return self._show(req)
        if not req.editor:
            return KbReply(ok=False, text=NOT_EDITOR)
        if self.store is None:
            return KbReply(ok=False, text="Runbooks cannot be added through chat here (no Redis).")
        if req.op == "add":
            return await self._add(req)
        return await self._rm(req)

    def _visible(self, req: KbRequest, runbook: Runbook) -> bool:
        return any(Visibility(c, frozenset(s.namespaces), s.cluster_wide).allows(runbook)
                   for c, s in req.scope.clusters.items())

    def _find(self, id: str) -> Runbook | None:
        return next((r for r in self.knowledge.index.runbooks if r.id == id), None)

    def _list(self, req: KbRequest) -> KbReply:
        mine = [r for r in self.knowledge.index.runbooks if self._visible(req, r)]
        if not mine:
            return KbReply(ok=True, text="No runbooks you can read yet.")
        rows = [f"| `{r.id}` | {md_plain(r.title)}{' (standing instruction)' if r.type == 'instruction' else ''} | "
                f"{', '.join(f'`{t}`' for t in r.tags) or '—'} | {_origin(r)} |" for r in mine[:_LIST_MAX]]
        more = f"\n\n…and {len(mine) - _LIST_MAX} more." if len(mine) > _LIST_MAX else ""
        head = f"**Runbooks** ({len(mine)}): `kb show <id>` for one.\n\n| id | title | tags | from |\n|---|---|---|---|\n"
        return KbReply(ok=True, text=head + "\n".join(rows) + more)

    def _show(self, req: KbRequest) -> KbReply:
        rb = self._find(req.id)
        if rb is None or not self._visible(req, rb):
            return KbReply(ok=False, text=_unknown(req.id))
        tags = ", ".join(f"`{t}`" for t in rb.tags) or "none"
        kind = "" if rb.suppress is None else f"; marks {rb.suppress.describe()} as expected"
        kind = f"standing instruction{kind}; " if rb.type == "instruction" else ""
        return KbReply(ok=True, text=f"**{md_plain(rb.title)}** (`{rb.id}`, {kind}{_origin(rb)}; tags: {tags})\n\n{no_images(rb.body)}")

    async def _add(self, req: KbRequest) -> KbReply:
        kb = self.knowledge
        try:
            rb = parse_runbook(req.text, id=req.id, source=f"chat:{req.user}", max_bytes=kb.max_bytes,
                               updated=time.time())
        except RunbookError as e:
            return KbReply(ok=False, text=f"Not added: {e}.")
        current = self._find(rb.id)
        if current is not None and current.source.startswith("dir:"):
            return KbReply(ok=False, text=f"`{rb.id}` comes from the runbooks directory; change it there.")
        if current is None and len(kb.index) >= kb.max_runbooks:
            return KbReply(ok=False, text=f"Not added: there are already {kb.max_runbooks} runbooks (the limit).")
        try:
            await self.store.put(rb, req.text, by=req.user)  # type: ignore[union-attr]
        except (RedisError, OSError) as e:
            log.warning("cannot store runbook %s: %s", rb.id, e)
            return KbReply(ok=False, text="Not added: the runbook store (Redis) is unavailable; try again shortly.")
        await kb.refresh(force=True)
        what = "Replaced" if current is not None else "Added"
        tags = ", ".join(f"`{t}`" for t in rb.tags) or "no tags"
        return KbReply(ok=True, text=f"{what} `{rb.id}`: *{md_plain(rb.title)}* ({tags}).")

    async def _rm(self, req: KbRequest) -> KbReply:
        current = self._find(req.id)
        if current is not None and current.source.startswith("dir:"):
            return KbReply(ok=False, text=f"`{req.id}` comes from the runbooks directory; remove it there.")
        try:
            deleted = await self.store.delete(req.id)  # type: ignore[union-attr]
        except (RedisError, OSError) as e:
            log.warning("cannot remove runbook %s: %s", req.id, e)
            return KbReply(ok=False, text="Not removed: the runbook store (Redis) is unavailable; try again shortly.")
        if not deleted:
            return KbReply(ok=False, text=f"No runbook `{req.id}` was added through chat.")
        await self.knowledge.refresh(force=True)
        return KbReply(ok=True, text=f"Removed `{req.id}`.")


def _origin(rb: Runbook) -> str:
    kind, _, who = rb.source.partition(":")
    return f"added by {who}" if kind == "chat" else "directory"


KB_WORKERS = 4


def kb_router(responder: Callable[[], KbResponder | None], subjects: Subjects, *,
              crashes: Counter | None = None) -> NatsRouter:
    """The subscriber of ``<prefix>.agent.kb`` (see :func:`~sleuth_agent._responders.command_router`)."""
    return command_router(subjects.agent_kb, subjects.agent_queue, KbRequest, KbReply, responder, name="kb",
                          workers=KB_WORKERS, crashes=crashes)
