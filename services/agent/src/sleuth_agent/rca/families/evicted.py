"""``evicted``: Evictions are the node's doing, but the fix (requests, limits, sizeLimit) is in the workload: the workload is named."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("evicted")
class Rule(FamilyRule):
    pass
