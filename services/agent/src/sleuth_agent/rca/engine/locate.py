"""Locate a finding's root cause on the causal graph with its family's rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sleuth_agent.rca.families  # noqa: F401  (registers every family)
from sleuth_agent.rca._signatures import load_catalog
from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.registry import Located, Symptom, rule_for, validate

if TYPE_CHECKING:
    from sleuth_agent.rca._observe import WorkloadObservation

__all__ = ["locate"]

# A catalog family without a rule module, or outside the vocabulary, fails here, at import.
validate({s.family for s in load_catalog()})


def locate(family: str, obs: WorkloadObservation, variables: dict[str, str], graph: Graph) -> Located:
    subject = Ref.of(obs.kind, obs.namespace, obs.name)
    return rule_for(family).locate(Symptom(family, subject, obs, variables), graph)
