"""``volume_mount_failed``: The volume is declared by the workload's template; the workload is named, the volume in the wording."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("volume_mount_failed")
class Rule(FamilyRule):
    pass
