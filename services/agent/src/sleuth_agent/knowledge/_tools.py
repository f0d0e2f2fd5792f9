"""``kb_search`` and ``kb_read``: the team's runbooks as tools of the AI model.

They answer from this agent's index, only with runbooks the asker (every reader) may see — one they
may not see is "not known", like one that does not exist. Their results are team knowledge, never
evidence: the loop gives them no evidence id (``Offered.evidence`` is False), so an answer cannot cite
a runbook as proof of what the cluster is doing, and the text is marked as data like any tool output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sleuth_agent.knowledge._search import Visibility
from sleuth_agent.knowledge._store import Knowledge
from sleuth_common.mcp import ToolInfo, ToolResult

__all__ = ["KB_TOOLS", "KnowledgeTools"]

_READ_CHARS = 8000
KB_TOOLS = ("kb_search", "kb_read")


class KnowledgeTools:
    """A toolbox (``Toolbox`` of the LLM catalog) over the runbooks ``visible`` allows."""

    def __init__(self, knowledge: Knowledge, visible: Sequence[Visibility]) -> None:
        self._knowledge = knowledge
        self._visible = list(visible)

    @property
    def tools(self) -> list[ToolInfo]:
        return [
            ToolInfo("kb_search", "Search the platform team's runbooks (their procedures, not evidence of the "
                     "cluster's state). Returns ids, titles, tags and the best matching step.",
                     {"type": "object", "properties": {"query": {"type": "string", "description": "what to look for"}},
                      "required": ["query"], "additionalProperties": False}),
            ToolInfo("kb_read", "Read one runbook of the platform team by id (from kb_search).",
                     {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"],
                      "additionalProperties": False}),
        ]

    async def call(self, tool: str, args: Mapping[str, Any] | None = None, *,
                   timeout: float | None = None) -> ToolResult:  # noqa: ASYNC109
        args = dict(args or {})
        if tool == "kb_search":
            query = args.get("query")
            if not isinstance(query, str) or not query.strip():
                return ToolResult(tool, "denied", error="kb_search needs a query", reason="invalid_arguments")
            hits = await self._knowledge.search(query[:500], frozenset(), self._visible, k=5)
            if not hits:
                return ToolResult(tool, "ok", text="No runbook matches.", args=args)
            lines = []
            for h in hits:
                step = f"; step {h.step[0]}: {h.step[1][:200]}" if h.step else ""
                lines.append(f"- {h.runbook.id}: {h.runbook.title} (tags: {', '.join(h.runbook.tags) or 'none'}){step}")
            return ToolResult(tool, "ok", text="\n".join(lines), args=args)
        if tool == "kb_read":
            id = args.get("id")
            rb = next((r for r in self._knowledge.index.runbooks if r.id == id), None) if isinstance(id, str) else None
            if rb is None or rb.type != "runbook" or not any(v.allows(rb) for v in self._visible):
                return ToolResult(tool, "denied", error=f"no runbook {str(id)[:70]!r} is known", reason="not_found")
            body = rb.body if len(rb.body) <= _READ_CHARS else rb.body[:_READ_CHARS] + "\n[… cut]"
            return ToolResult(tool, "ok", text=f"# {rb.title}\n\n{body}", args=args)
        return ToolResult(tool, "denied", error=f"no tool {tool!r}", reason="invalid_arguments")
