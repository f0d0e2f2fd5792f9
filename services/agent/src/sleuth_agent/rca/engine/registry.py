"""The registry of root-cause families (DESIGN §3's closed vocabulary).

Each family is one module under ``rca/families/`` that registers a ``FamilyRule`` with
``@family("name")``. The rule says how the family's symptom propagates along the causal graph to
the object where the fix belongs (``locate``); the matchers, wording templates and actions are
data in ``signatures.yaml``. The registry is validated when the package is imported: every family
the catalog names has a rule and belongs to the vocabulary, so a new failure mode is one module
plus its signatures, and a typo fails at import, not in an answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sleuth_agent.rca.engine.graph import Graph, Ref

if TYPE_CHECKING:
    from sleuth_agent.rca._observe import WorkloadObservation

__all__ = ["FAMILIES", "FamilyRule", "Located", "Symptom", "are", "family", "phrase", "rule_for", "validate"]

FAMILIES: tuple[str, ...] = (
    "oom_killed",
    "crash_loop_app_error",
    "missing_config",
    "image_pull",
    "unschedulable_resources",
    "unschedulable_constraints",
    "pvc_pending",
    "volume_mount_failed",
    "probe_failure",
    "quota_exceeded",
    "node_not_ready",
    "evicted",
    "dns_failure",
    "network_policy_blocked",
    "service_no_endpoints",
    "rollout_stuck",
    "job_failed",
    "rbac_denied",
    "dependency_unreachable",
    "disk_full",
    "cpu_throttled",
    "healthy",
    "insufficient_evidence",
)


@dataclass(frozen=True)
class Symptom:
    """A family's match on one observed object: what the propagation rule starts from."""

    family: str
    subject: Ref  # the object that shows the symptom (the workload, a Service, a Job)
    obs: WorkloadObservation
    variables: dict[str, str]


@dataclass(frozen=True)
class Located:
    """Where the chain ends: the object where the fix belongs, the workload that shows the
    symptom, and the chain in one line ("Pods of Deployment X cannot start → the Secret Y they
    mount does not exist")."""

    root: Ref
    affected: Ref
    chain: str = ""
    hops: tuple[Ref, ...] = field(default_factory=tuple)
    family: str = ""  # when the chain ends in another family's object (a caller's refused connections → a Service without endpoints)


class FamilyRule:
    """Default propagation: the symptom's own object (a workload's own spec is where its fix
    belongs). Families whose cause lives elsewhere override ``locate``."""

    name: str = ""

    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        return Located(root=symptom.subject, affected=symptom.subject)


_RULES: dict[str, FamilyRule] = {}

_POD_OWNERS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")


def are(ref: Ref) -> str:
    """The verb that agrees with ``phrase(ref)``: "pods of Deployment api are", "Job x is"."""
    return "are" if ref.kind in _POD_OWNERS else "is"


def phrase(ref: Ref) -> str:
    """How a chain names an object: "pods of Deployment api", "Job backup-2901", "Service db"."""
    if ref.kind in _POD_OWNERS:
        return f"pods of {ref.kind} {ref.name}"
    if ref.kind == "Pod":
        return f"pod {ref.name}"
    return f"{ref.kind} {ref.name}"


def family(name: str) -> Callable[[type[FamilyRule]], type[FamilyRule]]:
    """Register a family's rule (one per family)."""
    if name not in FAMILIES:
        raise ValueError(f"{name!r} is not a root-cause family (DESIGN §3); add it to FAMILIES first")

    def register(cls: type[FamilyRule]) -> type[FamilyRule]:
        if name in _RULES:
            raise ValueError(f"family {name!r} is registered twice")
        rule = cls()
        rule.name = name
        _RULES[name] = rule
        return cls

    return register


def rule_for(name: str) -> FamilyRule:
    return _RULES.get(name) or FamilyRule()


def validate(catalog_families: set[str]) -> None:
    """Every family the signature catalog names is in the vocabulary and has a rule."""
    unknown = sorted(catalog_families - set(FAMILIES))
    if unknown:
        raise ValueError(f"signatures.yaml names unknown families: {', '.join(unknown)}")
    missing = sorted(catalog_families - set(_RULES))
    if missing:
        raise ValueError(f"families without a rule module in rca/families: {', '.join(missing)}")


# The variables every wording template may use: what ``engine/match._variables`` fills from the
# observation, and what follow-ups set on it (``obs.variables``); a signature may also use the
# names its own ``extract`` defines. A template naming anything else would print "?" in an answer.
OBSERVED_VARIABLES = frozenset({
    "resource", "kind", "kind_lower", "workload", "namespace", "pod", "container", "restarts", "memory_limit",
    "memory_limit_next", "memory_request", "cpu_limit", "cpu_limit_next", "cpu_request", "exit_code", "image",
    "waiting_reason", "event_message", "log_line", "termination_message", "replicas", "updated", "storage_classes",
    "pvc", "pvc_size", "pvc_size_next", "probe_effect", "node_selector", "node", "derived", "pull_cause",
    "pull_action_text", "pull_action_command", "probe_action_text", "probe_action_command", "local_pv_note",
    "endpoint", "endpoint_host", "endpoint_port",
})
FOLLOWUP_VARIABLES = frozenset({
    "cpu_saturation", "init_wait", "init_container", "env_name", "env_sources", "container_port", "service_port",
    "service_target_port", "service_patch", "client", "lr_bound", "lr_resource", "lr_per", "lr_allowed", "lr_which",
    "lr_value", "lr_name", "active_job", "active_since", "active_deadline", "active_deadline_span", "starting_deadline",
    "limit_source", "limit_range", "netpol_name", "netpol_direction", "target_ref", "net_kind", "tls_secret",
    "dns_host", "config_source", "config_key", "stop_line", "missing_kind", "pressure", "reclaim",
})


def template_gaps(templates: dict[str, tuple[str, ...]], extracted: dict[str, set[str]]) -> dict[str, list[str]]:
    """Per signature (key), the template variables nothing produces."""
    gaps: dict[str, list[str]] = {}
    for key, texts in templates.items():
        used = {v for t in texts for v in re.findall(r"(?<!\{)\{([a-z_]+)\}(?!\})", t)}
        unknown = sorted(used - OBSERVED_VARIABLES - FOLLOWUP_VARIABLES - extracted.get(key, set()))
        if unknown:
            gaps[key] = unknown
    return gaps
