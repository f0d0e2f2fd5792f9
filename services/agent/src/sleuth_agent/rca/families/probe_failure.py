"""``probe_failure``: Probes are part of the workload's template: the workload is where the fix belongs."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("probe_failure")
class Rule(FamilyRule):
    pass
