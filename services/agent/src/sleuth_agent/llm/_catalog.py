"""The tools a model is offered: every cluster's scoped tools, tagged by cluster, named
``<cluster>__<tool>`` within the provider's length limit, trimmed to ``max_tools`` with the
clusters the question names first."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sleuth_common.config import ClusterSettings
from sleuth_common.llm import ToolSpec
from sleuth_common.mcp import ToolInfo, ToolResult
from sleuth_common.messages import InvestigationJob

__all__ = ["Offered", "ToolCatalog", "Toolbox", "choose_clusters", "tool_name"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_SEP = "__"


class Toolbox(Protocol):
    """One cluster's scoped tools (``ClusterTools`` fits)."""

    async def call(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> ToolResult: ...

    @property
    def tools(self) -> list[ToolInfo]: ...


def tool_name(cluster: str, tool: str, limit: int = 64) -> str:
    """``<cluster>__<tool>``; a long cluster name is shortened with a hash so that the tool name
    stays whole and the result fits ``limit``."""
    c, t = _UNSAFE.sub("_", cluster), _UNSAFE.sub("_", tool)
    name = f"{c}{_SEP}{t}"
    if len(name) <= limit:
        return name
    h = hashlib.sha1(f"{cluster}/{tool}".encode()).hexdigest()[:6]
    room = limit - len(t) - len(_SEP) - len(h) - 1
    if room >= 1:
        return f"{c[:room]}_{h}{_SEP}{t}"
    return f"{h}{_SEP}{t}"[: limit - 7] + "_" + h


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![a-z0-9.-]){re.escape(word.lower())}(?![a-z0-9-])", text.lower()) is not None


def choose_clusters(
    job: InvestigationJob, clusters: Sequence[ClusterSettings], in_scope: Iterable[str]
) -> tuple[list[ClusterSettings], bool]:
    """(clusters whose tools are offered, whether the question named them). Named = the job's
    ``clusters``, alert ``cluster``/``region`` labels, names or aliases in the question; a question
    that names clusters gets only those; otherwise every cluster the caller can read."""
    scoped = set(in_scope)

    def lookup(word: str) -> ClusterSettings | None:
        w = word.lower()
        return next((c for c in clusters if c.name.lower() == w or w in (a.lower() for a in c.aliases)), None)

    words = [*job.clusters]
    for alert in job.alerts:
        words.extend(alert.labels[k] for k in ("cluster", "region") if alert.labels.get(k))
    for c in clusters:
        if any(_mentions(job.question, w) for w in (c.name, *c.aliases)):
            words.append(c.name)
    named: list[ClusterSettings] = []
    for w in words:
        hit = lookup(w)
        if hit is not None and hit.name in scoped and hit not in named:
            named.append(hit)
    if named:
        return named, True
    return [c for c in clusters if c.name in scoped], False


@dataclass(frozen=True)
class Offered:
    name: str
    cluster: str
    tool: str
    toolbox: Toolbox
    spec: ToolSpec
    evidence: bool = True
    """Its results are evidence (cluster reads: each gets an id the answer may cite); False for the
    team's runbooks (``kb_search``/``kb_read``), which are knowledge, never proof."""


@dataclass
class ToolCatalog:
    offered: list[Offered] = field(default_factory=list)
    dropped: dict[str, list[str]] = field(default_factory=dict)
    max_tools: int = 0

    @classmethod
    def build(
        cls, boxes: Sequence[tuple[str, Toolbox]], *, max_tools: int, name_limit: int = 64,
        knowledge: Toolbox | None = None,
    ) -> ToolCatalog:
        """``boxes`` in priority order (named clusters first); ``knowledge``'s tools (the runbooks)
        first, under their own names, as not-evidence."""
        cat = cls(max_tools=max_tools)
        taken: set[str] = set()
        if knowledge is not None:
            for info in list(knowledge.tools):
                schema = dict(info.input_schema or {}) or {"type": "object", "properties": {}}
                desc = f"[team runbooks, not evidence] {info.description}".strip()[:1024]
                cat.offered.append(Offered(info.name, "", info.name, knowledge, ToolSpec(info.name, desc, schema),
                                           evidence=False))
                taken.add(info.name)
        for cluster, box in boxes:
            for info in list(getattr(box, "tools", None) or []):
                if len(cat.offered) >= max_tools:
                    cat.dropped.setdefault(cluster, []).append(info.name)
                    continue
                name = tool_name(cluster, info.name, name_limit)
                if name in taken:
                    continue
                taken.add(name)
                schema = dict(info.input_schema or {}) or {"type": "object", "properties": {}}
                schema.setdefault("type", "object")
                desc = f"[cluster {cluster}] {info.description}".strip()[:1024]
                cat.offered.append(Offered(name, cluster, info.name, box, ToolSpec(name, desc, schema)))
        return cat

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(o.spec for o in self.offered)

    @property
    def dropped_count(self) -> int:
        return sum(len(v) for v in self.dropped.values())

    def lookup(self, name: str) -> Offered | None:
        return next((o for o in self.offered if o.name == name), None)

    def note(self) -> str:
        """What was not offered (tool names of clusters the caller can read), or ""."""
        if not self.dropped:
            return ""
        parts = [f"cluster {c}: {', '.join(names)}" for c, names in self.dropped.items()]
        return (
            f"Only {self.max_tools} tools can be offered, so these were left out: "
            + "; ".join(parts)
            + ". Ask the person to name one cluster if you need them."
        )
