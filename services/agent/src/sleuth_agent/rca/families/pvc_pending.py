"""``pvc_pending``: the pods wait for a PersistentVolumeClaim that is not bound. The chain ends
at the claim (its storage class, size or access mode is what needs fixing)."""

from __future__ import annotations

from sleuth_agent.rca.engine.graph import Graph, Ref, Rel
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, are, family, phrase

__all__ = ["Rule"]


@family("pvc_pending")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        subject = symptom.subject
        claim = symptom.variables.get("pvc", "")
        if not claim or claim.startswith("<"):
            claims = sorted({c for p in graph.pods_of(subject) for c in graph.out(p, Rel.MOUNTS, "PersistentVolumeClaim")})
            claim = claims[0].name if len(claims) == 1 else ""
        if not claim:
            return super().locate(symptom, graph)
        root = Ref.of("PersistentVolumeClaim", subject.namespace, claim)
        return Located(root, subject, f"{phrase(subject)} {are(subject)} Pending → the PersistentVolumeClaim {claim} is not bound")
