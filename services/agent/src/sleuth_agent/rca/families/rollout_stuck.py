"""``rollout_stuck``: A stuck rollout is the Deployment's own state: the Deployment is the root cause."""

from sleuth_agent.rca.engine.registry import FamilyRule, family

__all__ = ["Rule"]


@family("rollout_stuck")
class Rule(FamilyRule):
    pass
