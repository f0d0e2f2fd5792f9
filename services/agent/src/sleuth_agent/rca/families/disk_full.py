"""``disk_full``: The full volume belongs to the workload (a StatefulSet's claim): the workload is named."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("disk_full")
class Rule(FamilyRule):
    pass
