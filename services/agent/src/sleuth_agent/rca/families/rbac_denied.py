"""``rbac_denied``: The workload's service account lacks a permission; the workload is named, its service account in the wording."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("rbac_denied")
class Rule(FamilyRule):
    pass
