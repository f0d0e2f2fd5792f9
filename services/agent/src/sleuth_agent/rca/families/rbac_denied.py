"""``rbac_denied``: the API server refuses the workload's own calls. The identity that lacks the
permission is the workload's ServiceAccount (named in the refusal, ``system:serviceaccount:ns:sa``):
the chain ends there — binding it a Role with the verb is the fix. The Role and RoleBinding are
usually not readable by a tenant, so the ServiceAccount is the object named."""

from __future__ import annotations

from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, are, family, phrase

__all__ = ["Rule"]


@family("rbac_denied")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        v, subject = symptom.variables, symptom.subject
        sa = v.get("service_account", "")
        if not sa:
            return super().locate(symptom, graph)
        root = Ref.of("ServiceAccount", subject.namespace, sa)
        what = " ".join(x for x in (v.get("verb", ""), v.get("api_resource", "")) if x) or "what it calls"
        return Located(root, subject, f"{phrase(subject)} {are(subject)} refused by the API server → ServiceAccount {sa} may not {what}")
