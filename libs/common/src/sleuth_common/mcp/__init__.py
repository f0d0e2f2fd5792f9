"""MCP clients that see a server through one caller's scope (DESIGN §2).

``ScopedMcpClient`` wraps one streamable-HTTP MCP server; ``ClusterTools`` joins the servers of
one cluster. Every call is argument-checked before it is sent and its result filtered before it
is returned; failures come back as ``ToolResult(status="error")``, never as exceptions.
"""

from sleuth_common.mcp._client import ScopedMcpClient, rules_for_server
from sleuth_common.mcp._commands import kubectl_command
from sleuth_common.mcp._mux import ClusterTools
from sleuth_common.mcp._observe import (
    TOOL_ERROR_KINDS,
    ToolErrorKind,
    ToolObserver,
    current_tool_observer,
    error_kind,
    use_tool_observer,
)
from sleuth_common.mcp._resolve import (
    InventoryProvider,
    IpResolver,
    bus_inventory,
    bus_resolver,
    current_inventory,
    current_resolver,
    use_inventory,
    use_resolver,
)
from sleuth_common.mcp._result import (
    AuditCallback,
    AuditOutcome,
    ToolAuditEvent,
    ToolInfo,
    ToolResult,
    ToolStatus,
)

__all__ = [
    "TOOL_ERROR_KINDS",
    "AuditCallback",
    "AuditOutcome",
    "ClusterTools",
    "InventoryProvider",
    "IpResolver",
    "ScopedMcpClient",
    "ToolAuditEvent",
    "ToolErrorKind",
    "ToolInfo",
    "ToolObserver",
    "ToolResult",
    "ToolStatus",
    "bus_inventory",
    "bus_resolver",
    "current_inventory",
    "current_resolver",
    "current_tool_observer",
    "error_kind",
    "kubectl_command",
    "rules_for_server",
    "use_inventory",
    "use_resolver",
    "use_tool_observer",
]
