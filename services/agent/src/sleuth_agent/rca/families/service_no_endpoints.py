"""``service_no_endpoints``: The symptom is observed on the Service itself (selector or targetPort): the Service is the root cause."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("service_no_endpoints")
class Rule(FamilyRule):
    pass
