"""``oom_killed``: a container is killed at its memory limit. The limit usually comes from the
workload's own template (the workload is where the fix belongs); when the LimitRanger admission
plugin injected it (annotation ``kubernetes.io/limit-ranger``), the chain ends at the LimitRange
whose default set it."""

from __future__ import annotations

from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, are, family, phrase

__all__ = ["Rule"]


@family("oom_killed")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        subject = symptom.subject
        if symptom.variables.get("limit_source") == "LimitRange":
            ranges = sorted(graph.find("LimitRange", subject.namespace))
            name = symptom.variables.get("limit_range") or (ranges[0].name if len(ranges) == 1 else "")
            if name:
                root = Ref.of("LimitRange", subject.namespace, name)
                limit = symptom.variables.get("memory_limit", "")
                return Located(
                    root, subject,
                    f"{phrase(subject)} {are(subject)} OOMKilled → the {limit} memory limit is LimitRange {name}'s default, not set by the workload",
                )
        return super().locate(symptom, graph)
