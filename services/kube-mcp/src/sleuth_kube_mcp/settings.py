"""kube-mcp's settings: the shared groups plus ``kube_mcp``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sleuth_common.config import ServiceSettings

__all__ = ["KubeMcpSettings", "Settings"]


class KubeMcpSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    host: str = "127.0.0.1"
    """Address to listen on (``0.0.0.0`` in a pod)."""
    port: int = 8181
    """Port for ``/mcp``, ``/healthz`` and ``/metrics``."""
    kubeconfig: str = ""
    """Kubeconfig file to read the cluster with; empty = in-cluster service account."""
    context: str = ""
    """Kubeconfig context; empty = the file's current-context."""
    cluster_name: str = ""
    """Name of the cluster this server reads, shown in the server's instructions and ``/healthz``."""
    accept_caller_token: bool = False
    """Use the ``Authorization: Bearer`` token of each MCP request for the Kubernetes API instead of
    the configured credentials (the caller's own RBAC then applies)."""
    request_timeout: float = 10.0
    """Seconds for one Kubernetes API request."""
    max_log_bytes: int = 262144
    """Most bytes of one container log returned by ``pod_logs`` (the newest are kept)."""
    max_items: int = 500
    """Most records one list tool returns (the rest are counted, not shown)."""


class Settings(ServiceSettings):
    kube_mcp: KubeMcpSettings = Field(default_factory=KubeMcpSettings)
