"""``unschedulable_resources``: The pod's requests are set in the workload's template (or the cluster needs capacity): the workload is the root cause."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("unschedulable_resources")
class Rule(FamilyRule):
    pass
