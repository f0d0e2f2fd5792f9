"""The resource types simcluster serves: group, version, plural, kind, scope, short names.

One table drives discovery, routing, loading and the RBAC wording, so a kind is added in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

READ_VERBS = ("get", "list", "watch")


@dataclass(frozen=True)
class Resource:
    """One served resource type at one group version."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = READ_VERBS
    #: (group, plural) objects are stored under; versions of one resource share it.
    storage: tuple[str, str] = ("", "")
    #: The kind's singular name as discovery prints it.
    singular: str = ""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def qualified(self) -> str:
        """`pods`, `deployments.apps`: the name the API server's error messages use."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


@dataclass(frozen=True)
class _Spec:
    plural: str
    kind: str
    namespaced: bool = True
    short: tuple[str, ...] = ()
    cats: tuple[str, ...] = ()
    subs: tuple[str, ...] = ()
    verbs: tuple[str, ...] = READ_VERBS
    storage_group: str | None = None


_ALL = ("all",)
_GROUPS: dict[str, dict[str, tuple[_Spec, ...]]] = {
    "": {
        "v1": (
            _Spec("pods", "Pod", short=("po",), cats=_ALL, subs=("log", "status")),
            _Spec("services", "Service", short=("svc",), cats=_ALL, subs=("status",)),
            _Spec("endpoints", "Endpoints", short=("ep",)),
            _Spec("configmaps", "ConfigMap", short=("cm",)),
            _Spec("secrets", "Secret"),
            _Spec("namespaces", "Namespace", namespaced=False, short=("ns",), subs=("status",)),
            _Spec("nodes", "Node", namespaced=False, short=("no",), subs=("status",)),
            _Spec("events", "Event", short=("ev",)),
            _Spec("persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",), subs=("status",)),
            _Spec("persistentvolumes", "PersistentVolume", namespaced=False, short=("pv",), subs=("status",)),
            _Spec("resourcequotas", "ResourceQuota", short=("quota",), subs=("status",)),
            _Spec("limitranges", "LimitRange", short=("limits",)),
            _Spec("serviceaccounts", "ServiceAccount", short=("sa",)),
            _Spec("replicationcontrollers", "ReplicationController", short=("rc",), cats=_ALL, subs=("status",)),
        )
    },
    "apps": {
        "v1": (
            _Spec("deployments", "Deployment", short=("deploy",), cats=_ALL, subs=("status", "scale")),
            _Spec("replicasets", "ReplicaSet", short=("rs",), cats=_ALL, subs=("status", "scale")),
            _Spec("statefulsets", "StatefulSet", short=("sts",), cats=_ALL, subs=("status", "scale")),
            _Spec("daemonsets", "DaemonSet", short=("ds",), cats=_ALL, subs=("status",)),
            _Spec("controllerrevisions", "ControllerRevision"),
        )
    },
    "batch": {
        "v1": (
            _Spec("jobs", "Job", cats=_ALL, subs=("status",)),
            _Spec("cronjobs", "CronJob", short=("cj",), cats=_ALL, subs=("status",)),
        )
    },
    "policy": {"v1": (_Spec("poddisruptionbudgets", "PodDisruptionBudget", short=("pdb",), subs=("status",)),)},
    "networking.k8s.io": {
        "v1": (
            _Spec("networkpolicies", "NetworkPolicy", short=("netpol",)),
            _Spec("ingresses", "Ingress", short=("ing",), subs=("status",)),
            _Spec("ingressclasses", "IngressClass", namespaced=False),
        )
    },
    "autoscaling": {
        "v2": (_Spec("horizontalpodautoscalers", "HorizontalPodAutoscaler", short=("hpa",), cats=_ALL, subs=("status",)),),
        "v1": (_Spec("horizontalpodautoscalers", "HorizontalPodAutoscaler", short=("hpa",), cats=_ALL, subs=("status",)),),
    },
    "storage.k8s.io": {"v1": (_Spec("storageclasses", "StorageClass", namespaced=False, short=("sc",)),)},
    "rbac.authorization.k8s.io": {
        "v1": (
            _Spec("roles", "Role"),
            _Spec("clusterroles", "ClusterRole", namespaced=False),
            _Spec("rolebindings", "RoleBinding"),
            _Spec("clusterrolebindings", "ClusterRoleBinding", namespaced=False),
        )
    },
    # events.k8s.io serves the same Event objects as core v1, converted on the way out.
    "events.k8s.io": {"v1": (_Spec("events", "Event", short=("ev",), storage_group=""),)},
    "authentication.k8s.io": {
        "v1": (
            _Spec("tokenreviews", "TokenReview", namespaced=False, verbs=("create",)),
            _Spec("selfsubjectreviews", "SelfSubjectReview", namespaced=False, verbs=("create",)),
        )
    },
    "authorization.k8s.io": {
        "v1": (
            _Spec("subjectaccessreviews", "SubjectAccessReview", namespaced=False, verbs=("create",)),
            _Spec("selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False, verbs=("create",)),
            _Spec("selfsubjectrulesreviews", "SelfSubjectRulesReview", namespaced=False, verbs=("create",)),
            _Spec("localsubjectaccessreviews", "LocalSubjectAccessReview", verbs=("create",)),
        )
    },
}

#: Group versions in the order discovery lists them (preferred version first in each group).
GROUP_VERSIONS: dict[str, tuple[str, ...]] = {g: tuple(vs) for g, vs in _GROUPS.items()}

#: Kinds whose objects are review requests, not stored objects.
REVIEW_KINDS = frozenset(
    {"TokenReview", "SelfSubjectReview", "SubjectAccessReview", "SelfSubjectAccessReview",
     "SelfSubjectRulesReview", "LocalSubjectAccessReview"}
)


def _build() -> dict[tuple[str, str, str], Resource]:
    out: dict[tuple[str, str, str], Resource] = {}
    for group, versions in _GROUPS.items():
        for version, specs in versions.items():
            for s in specs:
                storage_group = group if s.storage_group is None else s.storage_group
                out[(group, version, s.plural)] = Resource(
                    group=group, version=version, plural=s.plural, kind=s.kind, namespaced=s.namespaced,
                    short_names=s.short, categories=s.cats, subresources=s.subs, verbs=s.verbs,
                    storage=(storage_group, s.plural), singular=s.kind.lower(),
                )
    return out


RESOURCES: dict[tuple[str, str, str], Resource] = _build()

# Where an object loaded from a snapshot is stored: (group of its apiVersion, kind) -> storage key.
_KIND_ALIASES = {"extensions": ("apps", "networking.k8s.io", "policy"), "events.k8s.io": ("",)}
_BY_KIND: dict[tuple[str, str], tuple[str, str]] = {}
for (_g, _v, _p), _res in RESOURCES.items():
    if _res.kind not in REVIEW_KINDS:
        _BY_KIND.setdefault((_g, _res.kind), _res.storage)


def storage_for(api_version: str, kind: str) -> tuple[str, str] | None:
    """The storage key for an object of `apiVersion`/`kind` as found in a snapshot, or None."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    for g in (group, *_KIND_ALIASES.get(group, ())):
        key = _BY_KIND.get((g, kind))
        if key is not None:
            return key
    return None


def preferred(storage: tuple[str, str]) -> Resource:
    """The resource that names a stored object canonically (its group's preferred version)."""
    group, plural = storage
    for version in GROUP_VERSIONS[group]:
        res = RESOURCES.get((group, version, plural))
        if res is not None:
            return res
    raise KeyError(storage)


def lookup(group: str, version: str, plural: str) -> Resource | None:
    return RESOURCES.get((group, version, plural))
