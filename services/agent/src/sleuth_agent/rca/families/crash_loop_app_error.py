"""``crash_loop_app_error``: The fix is in the workload itself (its code, image or arguments): the crashing workload is the root cause."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("crash_loop_app_error")
class Rule(FamilyRule):
    pass
