"""The investigator's engine: the causal object graph, the family registry and the step that
locates a symptom's root cause on the graph (DESIGN §3)."""

from sleuth_agent.rca.engine.graph import Graph, Ref, Rel
from sleuth_agent.rca.engine.registry import (
    FAMILIES,
    FamilyRule,
    Located,
    Symptom,
    family,
    rule_for,
    validate,
)

__all__ = ["FAMILIES", "FamilyRule", "Graph", "Located", "Ref", "Rel", "Symptom", "family", "rule_for", "validate"]
