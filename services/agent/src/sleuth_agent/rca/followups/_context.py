"""What the follow-ups of one cluster run share: the scoped tools, the evidence log, the
namespace-wide reads, a cache so that each list is read once per run, and what was learnt of the
cluster's StorageClasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sleuth_agent.rca._collect import Collected, Toolbox, _call
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_common.mcp import ToolResult

__all__ = ["FollowUpContext"]


@dataclass(eq=False)
class FollowUpContext:
    tools: Toolbox
    log: EvidenceLog
    got: Collected
    timeout: float
    cluster_wide: bool
    cache: dict[tuple[str, str], ToolResult] = field(default_factory=dict)
    # Filled by ``storage.storage_classes``: each StorageClass's volumeBindingMode and provisioner.
    binding_modes: dict[str, str] = field(default_factory=dict)
    provisioners: dict[str, str] = field(default_factory=dict)
    default_class: str = ""
    storage_result: ToolResult | None = None

    async def read(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """``tool`` called once per run for the same ``args`` (a failed read is kept too)."""
        key = (tool, repr(sorted(args.items())))
        if key not in self.cache:
            self.cache[key] = await _call(self.tools, self.log, tool, args, self.timeout)
        return self.cache[key]
