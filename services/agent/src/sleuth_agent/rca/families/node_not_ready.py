"""``node_not_ready``: the pods are lost with their node. The chain ends at the Node when the
asker can read it (cluster-wide access); a tenant gets the workload named and the node in the
wording, since the Node object is outside their scope."""

from __future__ import annotations

from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, family, phrase

__all__ = ["Rule"]


@family("node_not_ready")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        subject = symptom.subject
        if subject.kind == "Node":
            return Located(subject, subject)
        node = symptom.variables.get("node", "")
        if node and not node.startswith(("?", "(")) and graph.attrs(Ref.of("Node", "", node)).get("exists"):
            root = Ref.of("Node", "", node)
            return Located(root, subject, f"{phrase(subject)} are down → their node {node} is not ready")
        return super().locate(symptom, graph)
