"""``job_failed``: a Job reached its backoff limit or deadline. When a CronJob owns the Job, the
fix (image, command, deadlines, concurrency) belongs in the CronJob's template: the chain ends
there and the failed Job is the affected one."""

from __future__ import annotations

from sleuth_agent.rca.engine.graph import Graph
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, family, phrase

__all__ = ["Rule"]


@family("job_failed")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        subject = symptom.subject
        top = graph.top_owner(subject)
        if top.kind == "CronJob":
            return Located(top, subject, f"{phrase(subject)} failed → it runs the template of CronJob {top.name}")
        return super().locate(symptom, graph)
