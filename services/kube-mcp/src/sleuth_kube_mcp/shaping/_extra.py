"""Records for the kinds ``list_resources`` and ``list_storage`` read: ConfigMaps and Secrets (names
and keys, never values), ServiceAccounts, Endpoints, HPAs, PDBs, NetworkPolicies, Ingresses, Roles,
RoleBindings, PersistentVolumes and StorageClasses. Every namespaced record carries its namespace
(so the scope filter can judge it); cluster-scoped records say ``"cluster_scoped": true``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleuth_kube_mcp.shaping._common import compact, conditions, selector_string

__all__ = ["LIST_KINDS", "STORAGE_KINDS", "resource_record", "storage_record"]

# plural → (API path root, Kind)
LIST_KINDS: dict[str, tuple[str, str]] = {
    "configmaps": ("/api/v1", "ConfigMap"),
    "secrets": ("/api/v1", "Secret"),
    "serviceaccounts": ("/api/v1", "ServiceAccount"),
    "endpoints": ("/api/v1", "Endpoints"),
    "horizontalpodautoscalers": ("/apis/autoscaling/v2", "HorizontalPodAutoscaler"),
    "poddisruptionbudgets": ("/apis/policy/v1", "PodDisruptionBudget"),
    "networkpolicies": ("/apis/networking.k8s.io/v1", "NetworkPolicy"),
    "ingresses": ("/apis/networking.k8s.io/v1", "Ingress"),
    "roles": ("/apis/rbac.authorization.k8s.io/v1", "Role"),
    "rolebindings": ("/apis/rbac.authorization.k8s.io/v1", "RoleBinding"),
}
LIST_ALIASES = {
    "configmap": "configmaps",
    "cm": "configmaps",
    "secret": "secrets",
    "serviceaccount": "serviceaccounts",
    "sa": "serviceaccounts",
    "ep": "endpoints",
    "hpa": "horizontalpodautoscalers",
    "horizontalpodautoscaler": "horizontalpodautoscalers",
    "pdb": "poddisruptionbudgets",
    "poddisruptionbudget": "poddisruptionbudgets",
    "netpol": "networkpolicies",
    "networkpolicy": "networkpolicies",
    "ingress": "ingresses",
    "ing": "ingresses",
    "role": "roles",
    "rolebinding": "rolebindings",
}
STORAGE_KINDS: dict[str, tuple[str, str]] = {
    "persistentvolumes": ("/api/v1", "PersistentVolume"),
    "storageclasses": ("/apis/storage.k8s.io/v1", "StorageClass"),
    "ingressclasses": ("/apis/networking.k8s.io/v1", "IngressClass"),
}
STORAGE_ALIASES = {
    "pv": "persistentvolumes",
    "persistentvolume": "persistentvolumes",
    "sc": "storageclasses",
    "storageclass": "storageclasses",
    "ingressclass": "ingressclasses",
}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _peers(items: list[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for peer in items or []:
        out.append(
            compact(
                {
                    "pod_selector": selector_string(peer.get("podSelector"))
                    or ("*" if "podSelector" in peer else None),
                    "namespace_selector": selector_string(peer.get("namespaceSelector"))
                    or ("*" if "namespaceSelector" in peer else None),
                    "ip_block": (peer.get("ipBlock") or {}).get("cidr"),
                }
            )
        )
    return out


def _ports(items: list[Mapping[str, Any]] | None) -> list[str]:
    return [f"{p.get('port', '*')}/{p.get('protocol', 'TCP')}" for p in items or []]


def _netpol_rules(rules: list[Mapping[str, Any]] | None, peer_key: str) -> list[dict[str, Any]]:
    return [{"peers": _peers(r.get(peer_key)), "ports": _ports(r.get("ports"))} for r in rules or []]


def resource_record(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The record ``list_resources`` returns for one object of ``kind``."""
    meta = _meta(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    base: dict[str, Any] = {"namespace": meta.get("namespace"), "kind": kind, "name": meta.get("name")}
    if meta.get("creationTimestamp"):
        base["created"] = meta.get("creationTimestamp")  # "what changed": an object created near the onset
    if kind == "ConfigMap":
        base["keys"] = sorted([*(obj.get("data") or {}), *(obj.get("binaryData") or {})])
    elif kind == "Secret":
        base["type"] = obj.get("type")
        base["keys"] = sorted([*(obj.get("data") or {}), *(obj.get("stringData") or {})])
    elif kind == "ServiceAccount":
        base["image_pull_secrets"] = [s.get("name") for s in obj.get("imagePullSecrets") or []]
    elif kind == "Endpoints":
        ready = not_ready = 0
        for subset in obj.get("subsets") or []:
            ready += len(subset.get("addresses") or [])
            not_ready += len(subset.get("notReadyAddresses") or [])
        base |= {"ready": ready, "not_ready": not_ready}
    elif kind == "HorizontalPodAutoscaler":
        ref = spec.get("scaleTargetRef") or {}
        metrics = []
        for m in spec.get("metrics") or []:
            res = m.get("resource") or {}
            target = res.get("target") or {}
            metrics.append(
                compact(
                    {
                        "type": m.get("type"),
                        "resource": res.get("name"),
                        "target": target.get("averageUtilization") or target.get("averageValue"),
                    }
                )
            )
        base |= {
            "target": f"{ref.get('kind')}/{ref.get('name')}",
            "min_replicas": spec.get("minReplicas", 1),
            "max_replicas": spec.get("maxReplicas"),
            "current_replicas": status.get("currentReplicas"),
            "desired_replicas": status.get("desiredReplicas"),
            "metrics": metrics,
            "conditions": conditions(status.get("conditions")),
        }
    elif kind == "PodDisruptionBudget":
        base |= {
            "selector": selector_string(spec.get("selector")),
            "min_available": spec.get("minAvailable"),
            "max_unavailable": spec.get("maxUnavailable"),
            "current_healthy": status.get("currentHealthy"),
            "desired_healthy": status.get("desiredHealthy"),
            "disruptions_allowed": status.get("disruptionsAllowed"),
        }
    elif kind == "NetworkPolicy":
        types = list(spec.get("policyTypes") or ["Ingress"])
        base |= {
            "pod_selector": selector_string(spec.get("podSelector")) or "*",
            "policy_types": types,
            "ingress": _netpol_rules(spec.get("ingress"), "from"),
            "egress": _netpol_rules(spec.get("egress"), "to"),
        }
    elif kind == "Ingress":
        routes = []
        for rule in spec.get("rules") or []:
            for path in ((rule.get("http") or {}).get("paths")) or []:
                svc = (path.get("backend") or {}).get("service") or {}
                port = svc.get("port") or {}
                routes.append(
                    compact(
                        {
                            "host": rule.get("host"),
                            "path": path.get("path", "/"),
                            "service": svc.get("name"),
                            "port": port.get("number") or port.get("name"),
                        }
                    )
                )
        lb = ((status.get("loadBalancer") or {}).get("ingress")) or []
        base |= {
            "ingress_class": spec.get("ingressClassName")
            or (meta.get("annotations") or {}).get("kubernetes.io/ingress.class"),
            "routes": routes,
            "tls_secrets": [t.get("secretName") for t in spec.get("tls") or []],
            "addresses": [i.get("ip") or i.get("hostname") for i in lb],
        }
    elif kind == "Role":
        base["rules"] = [
            {
                "api_groups": list(r.get("apiGroups") or []),
                "resources": list(r.get("resources") or []),
                "verbs": list(r.get("verbs") or []),
            }
            for r in obj.get("rules") or []
        ]
    elif kind == "RoleBinding":
        ref = obj.get("roleRef") or {}
        base |= {
            "role": f"{ref.get('kind')}/{ref.get('name')}",
            "subjects": [
                compact(
                    {
                        "kind": s.get("kind"),
                        "name": s.get("name"),
                        "subject_namespace": s.get("namespace"),
                    }
                )
                for s in obj.get("subjects") or []
            ],
        }
    return compact(base)


def storage_record(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The record ``list_storage`` returns: a cluster-scoped PV, StorageClass or IngressClass."""
    meta = _meta(obj)
    spec = obj.get("spec") or {}
    base: dict[str, Any] = {"kind": kind, "name": meta.get("name"), "cluster_scoped": True}
    if kind == "PersistentVolume":
        claim = spec.get("claimRef") or {}
        base |= {
            "phase": (obj.get("status") or {}).get("phase"),
            "capacity": (spec.get("capacity") or {}).get("storage"),
            "storage_class": spec.get("storageClassName"),
            "access_modes": list(spec.get("accessModes") or []),
            "claim": compact({"namespace": claim.get("namespace"), "name": claim.get("name")}) or None,
        }
    elif kind == "StorageClass":
        ann = meta.get("annotations") or {}
        base |= {
            "provisioner": obj.get("provisioner"),
            "default": ann.get("storageclass.kubernetes.io/is-default-class") == "true",
            "volume_binding_mode": obj.get("volumeBindingMode", "Immediate"),
            "allow_volume_expansion": bool(obj.get("allowVolumeExpansion", False)),
        }
    elif kind == "IngressClass":
        ann = meta.get("annotations") or {}
        base |= {
            "controller": spec.get("controller"),
            "default": ann.get("ingressclass.kubernetes.io/is-default-class") == "true",
        }
    return compact(base)
