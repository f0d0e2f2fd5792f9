"""The one way both investigators open a cluster's scoped tools.

Every read of either investigator goes through the ``ClusterTools`` made here, so the scope
filter, the global servers and the caps are set in one place.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from sleuth_agent.settings import Settings
from sleuth_common.config import ClusterSettings
from sleuth_common.mcp import AuditCallback, ClusterTools
from sleuth_common.messages import InvestigationJob
from sleuth_common.scope import Scope

__all__ = ["ToolsFactory", "open_cluster_tools"]

ToolsFactory = Callable[[ClusterSettings, Scope], AbstractAsyncContextManager[Any]]


@contextlib.asynccontextmanager
async def open_cluster_tools(
    cluster: ClusterSettings,
    scope: Scope,
    job: InvestigationJob,
    settings: Settings,
    on_audit: AuditCallback | None,
    factory: ToolsFactory | None = None,
) -> AsyncIterator[Any]:
    """The caller's scoped tools on ``cluster`` (or what a test's ``factory`` makes)."""
    if factory is not None:
        async with factory(cluster, scope) as tools:
            yield tools
        return
    async with ClusterTools(
        cluster,
        scope,
        user=job.requester.user,
        on_audit=on_audit,
        connect_timeout=settings.agent.connect_timeout,
        global_servers=settings.global_mcp_servers,
        max_result_chars=settings.tool_caps.result_chars,
    ) as tools:
        yield tools
