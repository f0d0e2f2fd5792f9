"""``dns_failure``: The host name comes from the workload's configuration: the workload that resolves it is named."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("dns_failure")
class Rule(FamilyRule):
    pass
