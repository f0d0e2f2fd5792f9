"""Sleuth's read-only Kubernetes MCP server.

``create_app(settings)`` gives the Starlette app (MCP at ``/mcp``, ``/healthz``, ``/metrics``);
``serve_in_thread(settings)`` runs it on loopback in a thread for in-process use.
"""

from sleuth_kube_mcp._thread import ServerHandle, serve_in_thread
from sleuth_kube_mcp.app import create_app, create_mcp_server
from sleuth_kube_mcp.settings import KubeMcpSettings, Settings
from sleuth_kube_mcp.tools import CLUSTER_ADMIN_META_KEY, TOOL_NAMES

__all__ = [
    "CLUSTER_ADMIN_META_KEY",
    "TOOL_NAMES",
    "KubeMcpSettings",
    "ServerHandle",
    "Settings",
    "create_app",
    "create_mcp_server",
    "serve_in_thread",
]
