"""Sleuth as an MCP server at ``/mcp`` for people's own AI clients (Claude Code, Cursor …).

Streamable HTTP, stateless (any gateway replica answers any request), Server-Sent Events so an
``ask`` can send progress notifications while the investigation runs. The caller's own bearer
token is checked exactly as for ``/v1/query`` before any MCP processing (401 with
``WWW-Authenticate: Bearer`` when missing or not accepted), so a person's agent sees only what
that person may read. Tools: ``ask`` (what ``POST /v1/query`` runs) and ``whoami`` (what
``GET /v1/whoami`` answers). ``gateway.mcp.enabled: false`` turns the endpoint off (403).
"""

from sleuth_gateway.mcp_server.endpoint import McpEndpoint
from sleuth_gateway.mcp_server.tools import Caller, build_server

__all__ = ["Caller", "McpEndpoint", "build_server"]
