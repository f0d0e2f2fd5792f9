"""``quota_exceeded``: the API server refuses the workload's pods because a ResourceQuota is used
up or a LimitRange bound is crossed. The chain ends at the quota or LimitRange the refusal names
(the one object in the namespace when the message does not name it)."""

from __future__ import annotations

import re

from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, family

__all__ = ["Rule"]

_QUOTA = re.compile(r"exceeded quota: ([a-z0-9]([-a-z0-9.]*[a-z0-9])?)", re.IGNORECASE)


@family("quota_exceeded")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        subject, v = symptom.subject, symptom.variables
        m = _QUOTA.search(v.get("quota_message", "") or v.get("event_message", ""))
        if m:
            root = Ref.of("ResourceQuota", subject.namespace, m.group(1))
            return Located(root, subject, f"{subject.kind} {subject.name} cannot create its pods → ResourceQuota {root.name} is used up")
        if v.get("limit_message") or v.get("lr_resource"):
            ranges = sorted(graph.find("LimitRange", subject.namespace))
            name = v.get("lr_name") or (ranges[0].name if len(ranges) == 1 else "")
            if name:
                root = Ref.of("LimitRange", subject.namespace, name)
                return Located(root, subject, f"{subject.kind} {subject.name} cannot create its pods → LimitRange {name} refuses their resources")
        quotas = sorted(graph.find("ResourceQuota", subject.namespace))
        if len(quotas) == 1:
            return Located(quotas[0], subject, f"{subject.kind} {subject.name} cannot create its pods → ResourceQuota {quotas[0].name} is used up")
        return super().locate(symptom, graph)
