"""Reading the Kubernetes API: where it is (kubeconfig or in-cluster), a GET-only client, kinds."""

from sleuth_kube_mcp.kube._client import KubeApiError, KubeClient, KubeUnavailable
from sleuth_kube_mcp.kube._config import ClusterAccess, KubeConfigError, load_access
from sleuth_kube_mcp.kube._kinds import BUILTIN_KINDS, Kind, KindResolver

__all__ = [
    "BUILTIN_KINDS",
    "ClusterAccess",
    "Kind",
    "KindResolver",
    "KubeApiError",
    "KubeClient",
    "KubeConfigError",
    "KubeUnavailable",
    "load_access",
]
