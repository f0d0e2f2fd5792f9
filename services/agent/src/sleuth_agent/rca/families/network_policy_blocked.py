"""``network_policy_blocked``: a NetworkPolicy that selects the caller (egress) or the callee
(ingress) admits no rule for the traffic, so connections time out. The chain ends at the policy
that drops the traffic; the workload whose connections fail is the affected one."""

from __future__ import annotations

from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.onset import before_onset
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, family, phrase

__all__ = ["Rule"]


@family("network_policy_blocked")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        name = symptom.variables.get("netpol_name", "")
        subject = symptom.subject
        if not name:
            return super().locate(symptom, graph)
        root = Ref.of("NetworkPolicy", symptom.variables.get("netpol_namespace") or subject.namespace, name)
        direction = symptom.variables.get("netpol_direction", "")
        what = {"egress": "drops their outgoing traffic", "ingress": "drops the traffic to the pods they call"}.get(direction, "drops their traffic")
        record = graph.attrs(root).get("record") or {}
        when = before_onset(record.get("created"), symptom.obs)
        chain = f"connections from {phrase(subject)} time out → NetworkPolicy {name} {what}" + (f" ({when})" if when else "")
        return Located(root, subject, chain)
