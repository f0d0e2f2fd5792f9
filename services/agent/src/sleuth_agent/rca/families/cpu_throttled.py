"""``cpu_throttled``: The CPU limit is set in the workload's template: the workload is where the fix belongs."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("cpu_throttled")
class Rule(FamilyRule):
    pass
