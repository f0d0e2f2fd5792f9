"""``missing_config``: the pods reference a ConfigMap or Secret (or a key of one) that does not
exist. The chain ends at that object — creating it (or the key) is the fix; the workload is the
affected one. A variable the application misses without any reference in the spec stays with the
workload (its spec is where the variable must be added)."""

from __future__ import annotations

import re

from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, family, phrase

__all__ = ["Rule"]

_KEY = re.compile(r"couldn't find key (\S+) in (ConfigMap|Secret) (?:([\w.-]+)/)?([\w.-]+)", re.IGNORECASE)
_KINDS = {"configmap": "ConfigMap", "secret": "Secret"}


@family("missing_config")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        v, subject = symptom.variables, symptom.subject
        m = _KEY.search(v.get("missing", "")) or _KEY.search(" ".join(v.get(k, "") for k in ("event_message", "waiting_message")))
        if m:
            root = Ref.of(_KINDS[m.group(2).lower()], m.group(3) or subject.namespace, m.group(4))
            chain = f"{phrase(subject)} cannot start → key {m.group(1)} is missing from {root.kind} {root.name}"
            return Located(root, subject, chain)
        kind = _KINDS.get(v.get("missing_kind", "").lower())
        name = v.get("missing_name", "")
        if kind and name:
            root = Ref.of(kind, subject.namespace, name)
            how = "mount" if any(r == root for r in graph.out(subject)) else "reference"
            chain = f"{phrase(subject)} cannot start → the {kind} {name} they {how} does not exist"
            return Located(root, subject, chain)
        return super().locate(symptom, graph)
