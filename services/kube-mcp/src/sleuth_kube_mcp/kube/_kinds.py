"""Resource kinds by every name a person or a model uses for them (Kind, plural, singular,
short name, ``plural.group``), and their API paths. Built-in kinds come from a static table;
anything else (CRDs) is looked up through API discovery by :class:`KindResolver`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BUILTIN_KINDS", "Kind", "KindResolver", "kind_index"]


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str | None = None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"

    def object_path(self, name: str, namespace: str | None = None) -> str:
        return f"{self.collection_path(namespace)}/{name}"

    def names(self) -> set[str]:
        out = {self.kind.lower(), self.plural.lower(), *(s.lower() for s in self.short_names)}
        if self.group:
            out |= {f"{self.plural}.{self.group}".lower(), f"{self.kind}.{self.group}".lower()}
        return out


def _k(group: str, version: str, plural: str, kind: str, namespaced: bool = True, *short: str) -> Kind:
    return Kind(group, version, plural, kind, namespaced, tuple(short))


BUILTIN_KINDS: tuple[Kind, ...] = (
    _k("", "v1", "pods", "Pod", True, "po"),
    _k("", "v1", "services", "Service", True, "svc"),
    _k("", "v1", "endpoints", "Endpoints", True, "ep"),
    _k("", "v1", "configmaps", "ConfigMap", True, "cm"),
    _k("", "v1", "secrets", "Secret", True),
    _k("", "v1", "events", "Event", True, "ev"),
    _k("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, "pvc"),
    _k("", "v1", "persistentvolumes", "PersistentVolume", False, "pv"),
    _k("", "v1", "nodes", "Node", False, "no"),
    _k("", "v1", "namespaces", "Namespace", False, "ns"),
    _k("", "v1", "serviceaccounts", "ServiceAccount", True, "sa"),
    _k("", "v1", "resourcequotas", "ResourceQuota", True, "quota"),
    _k("", "v1", "limitranges", "LimitRange", True, "limits"),
    _k("", "v1", "replicationcontrollers", "ReplicationController", True, "rc"),
    _k("apps", "v1", "deployments", "Deployment", True, "deploy"),
    _k("apps", "v1", "replicasets", "ReplicaSet", True, "rs"),
    _k("apps", "v1", "statefulsets", "StatefulSet", True, "sts"),
    _k("apps", "v1", "daemonsets", "DaemonSet", True, "ds"),
    _k("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    _k("batch", "v1", "jobs", "Job", True),
    _k("batch", "v1", "cronjobs", "CronJob", True, "cj"),
    _k("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, "hpa"),
    _k("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, "pdb"),
    _k("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, "netpol"),
    _k("networking.k8s.io", "v1", "ingresses", "Ingress", True, "ing"),
    _k("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False),
    _k("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
    _k("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, "sc"),
    _k("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
    _k("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _k("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _k("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _k("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _k("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _k("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, "pc"),
    _k("coordination.k8s.io", "v1", "leases", "Lease", True),
    _k(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        "crd",
        "crds",
    ),
)


def kind_index(kinds: tuple[Kind, ...] | list[Kind]) -> dict[str, Kind]:
    """Every name of every kind → the kind; the first kind listed wins a shared name."""
    index: dict[str, Kind] = {}
    for k in kinds:
        for name in sorted(k.names()):
            index.setdefault(name, k)
    return index


_BUILTIN_INDEX = kind_index(BUILTIN_KINDS)


def _singular(plural: str) -> str:
    if plural.endswith("ies"):
        return plural[:-3] + "y"
    if plural.endswith(("sses", "xes")):
        return plural[:-2]
    return plural[:-1] if plural.endswith("s") else plural


class KindResolver:
    """Resolves a kind name: the static table first, then API discovery (fetched once)."""

    def __init__(self) -> None:
        self._discovered: dict[str, Kind] | None = None

    @staticmethod
    def builtin(name: str) -> Kind | None:
        key = name.strip().lower()
        return _BUILTIN_INDEX.get(key) or _BUILTIN_INDEX.get(_singular(key))

    def discovered(self, name: str) -> Kind | None:
        if self._discovered is None:
            return None
        key = name.strip().lower()
        return self._discovered.get(key) or self._discovered.get(_singular(key))

    @property
    def has_discovery(self) -> bool:
        return self._discovered is not None

    def learn(self, group_lists: list[tuple[str, str, dict[str, Any]]]) -> None:
        """Feed ``(group, version, APIResourceList)`` documents from discovery."""
        kinds: list[Kind] = []
        for group, version, doc in group_lists:
            for r in doc.get("resources") or []:
                name = str(r.get("name") or "")
                if not name or "/" in name or "get" not in (r.get("verbs") or ["get"]):
                    continue
                kinds.append(
                    Kind(
                        group,
                        version,
                        name,
                        str(r.get("kind") or ""),
                        bool(r.get("namespaced")),
                        tuple(r.get("shortNames") or ()),
                    )
                )
        index = kind_index(kinds)
        for k in kinds:
            if r_singular := _singular(k.plural):
                index.setdefault(r_singular, k)
        self._discovered = index
