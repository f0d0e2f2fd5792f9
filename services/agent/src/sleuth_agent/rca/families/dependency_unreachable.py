"""``dependency_unreachable``: the workload runs but cannot reach something it calls. When the
target resolves to an in-scope Service, the chain follows it: to the failing workload behind the
Service when its pods are down, else to the Service itself; an address outside the cluster (or
outside the asker's scope) leaves the calling workload as the object named."""

from __future__ import annotations

from sleuth_agent.rca.engine.graph import Graph, Ref, Rel
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, family, phrase

__all__ = ["Rule"]


@family("dependency_unreachable")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        subject = symptom.subject
        target = symptom.variables.get("target_ref", "")
        if not target:
            return super().locate(symptom, graph)
        ref = Ref.parse(target)
        if ref.kind != "Service":
            return Located(ref, subject, f"{phrase(subject)} cannot reach {ref.kind} {ref.name}")
        pods = graph.out(ref, Rel.SELECTS, "Pod")
        cert = symptom.variables.get("tls_secret", "")
        if symptom.variables.get("net_kind") == "tls" and cert:
            # The peer answers, but its certificate is refused: the certificate it serves is mounted
            # from a Secret (followups/net_targets); renewing that Secret is the fix.
            root = Ref.of("Secret", ref.namespace, cert)
            return Located(
                root, subject,
                f"{phrase(subject)} cannot talk TLS to Service {ref.name} → the certificate its pods serve "
                f"(mounted from Secret {cert}) is rejected",
            )
        failing = [p for p in pods if not graph.attrs(p).get("healthy")]
        if pods and len(failing) == len(pods):
            owners = graph.workloads_of(failing)
            if len(owners) == 1 and owners[0] != subject:
                return Located(
                    owners[0], subject,
                    f"{phrase(subject)} cannot reach Service {ref.name} → none of its pods ({phrase(owners[0])}) is ready",
                )
        ready = graph.attrs(ref).get("ready_endpoints")
        if not pods and ready == 0 and graph.attrs(ref).get("selector"):
            return Located(
                ref, subject, f"{phrase(subject)} cannot reach Service {ref.name} → it selects no pod, so it has no endpoints",
                family="service_no_endpoints",
            )
        return Located(ref, subject, f"{phrase(subject)} cannot reach Service {ref.name}")
