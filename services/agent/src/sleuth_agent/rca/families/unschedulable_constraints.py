"""``unschedulable_constraints``: nodeSelector, affinity and tolerations live in the workload's template: the workload is where the fix belongs."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("unschedulable_constraints")
class Rule(FamilyRule):
    pass
