"""``image_pull``: The image reference (or its pull secret) is set in the workload's pod template: the workload is where the fix belongs."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("image_pull")
class Rule(FamilyRule):
    pass
