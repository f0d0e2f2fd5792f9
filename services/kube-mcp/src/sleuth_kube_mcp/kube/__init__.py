"""Reading the Kubernetes API: where it is (kubeconfig or in-cluster), a GET-only client, kinds."""

from sleuth_kube_mcp.kube._client import (
    Caller,
    KubeApiError,
    KubeClient,
    KubeUnavailable,
    Listing,
    UnsafePath,
    check_path,
)
from sleuth_kube_mcp.kube._config import ClusterAccess, KubeConfigError, load_access
from sleuth_kube_mcp.kube._kinds import BUILTIN_KINDS, Kind, KindResolver

__all__ = [
    "BUILTIN_KINDS",
    "Caller",
    "ClusterAccess",
    "Kind",
    "KindResolver",
    "KubeApiError",
    "KubeClient",
    "KubeConfigError",
    "KubeUnavailable",
    "Listing",
    "UnsafePath",
    "check_path",
    "load_access",
]
