"""``dns_failure``: a host name does not resolve. The name is configuration: when a ConfigMap
the pods read holds it (followups/config_hosts), the chain ends at that ConfigMap and key; when
the name is set in the workload's own template, the workload is where the fix belongs."""

from __future__ import annotations

from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, family, phrase

__all__ = ["Rule"]


@family("dns_failure")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        source = symptom.variables.get("config_source", "")
        if not source:
            return super().locate(symptom, graph)
        root = Ref.parse(source)
        host = symptom.variables.get("dns_host") or symptom.variables.get("host") or "a host"
        key = symptom.variables.get("config_key", "")
        chain = f"{phrase(symptom.subject)} cannot resolve {host} → key {key} of ConfigMap {root.name} sets that name"
        return Located(root, symptom.subject, chain)
