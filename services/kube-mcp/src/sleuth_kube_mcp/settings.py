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
    """Port for ``/mcp``, ``/healthz``, ``/readyz`` and ``/metrics``."""
    header_timeout: float = 10.0
    """Seconds a client has to send a request head once it started it, or after connecting; then
    it gets 408 and the connection is closed (slow-header clients)."""
    kubeconfig: str = ""
    """Kubeconfig file to read the cluster with; empty = in-cluster service account."""
    service_account_dir: str = "/var/run/secrets/kubernetes.io/serviceaccount"
    """Directory holding ``token`` and ``ca.crt`` for in-cluster access (no ``kubeconfig``): the
    automounted service account, or a projected token volume mounted elsewhere (the Helm chart
    mounts one at ``/var/run/secrets/sleuth/kube`` and turns automounting off)."""
    context: str = ""
    """Kubeconfig context; empty = the file's current-context."""
    cluster_name: str = ""
    """Name of the cluster this server reads, shown in the server's instructions and ``/readyz``."""
    accept_caller_token: bool = False
    """Accept the ``Authorization: Bearer`` token of an MCP request (a person's own Kubernetes
    token) and read with it instead of the configured credentials (their own RBAC then applies)."""
    require_identity: bool = True
    """Refuse every request that carries neither a valid signed identity assertion (``identity``
    section: ``verify_key_files``) nor, with ``accept_caller_token``, a bearer token. Reads are
    then made as that identity (impersonation). ``false`` lets anyone who reaches the port read
    with kube-mcp's own rights: only for a server nothing but Sleuth's agent can reach."""
    refused_groups: list[str] = Field(default_factory=lambda: ["system:masters"])
    """Groups kube-mcp never impersonates, even with a valid assertion (``system:masters``
    bypasses RBAC). Give cluster admins an RBAC-bound group (e.g. bound to ``cluster-admin``)."""
    identity_audience: str = ""
    """Audience assertions must name; empty = ``kube-mcp/<cluster_name>`` (what the agent uses)."""
    request_timeout: float = 10.0
    """Seconds for one Kubernetes API request."""
    max_log_bytes: int = 262144
    """Most bytes of one container log returned by ``pod_logs`` (the newest are kept)."""
    max_items: int = 500
    """Most records one list tool returns. Lists are read page by page and stop there, so a big
    cluster costs what a small one does; the rest are counted when the API server counts them
    (``omitted``), and ``complete: false`` says so either way."""
    page_size: int = 500
    """Objects per page (``limit`` of one list request; ``continue`` reads the next page)."""
    max_scan: int = 5000
    """Most objects read by a tool that must see more than it returns (``list_events``: the newest
    ``max_items`` of at most this many)."""


class Settings(ServiceSettings):
    kube_mcp: KubeMcpSettings = Field(default_factory=KubeMcpSettings)
