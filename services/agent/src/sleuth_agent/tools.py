"""The one way both investigators open a cluster's scoped tools.

Every read of either investigator goes through the ``ClusterTools`` made here, so the scope
filter, the global servers and the caps are set in one place.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from sleuth_agent.settings import Settings
from sleuth_common.config import ClusterSettings
from sleuth_common.identity import Identity, IdentityError, IdentitySigner, signer_from_settings
from sleuth_common.mcp import AuditCallback, ClusterTools
from sleuth_common.messages import InvestigationJob
from sleuth_common.scope import Scope

__all__ = ["ToolsFactory", "open_cluster_tools", "signer_of"]

log = logging.getLogger(__name__)

ToolsFactory = Callable[[ClusterSettings, Scope], AbstractAsyncContextManager[Any]]


def signer_of(settings: Settings) -> IdentitySigner | None:
    """The agent's signer; a key that cannot be read leaves servers that need an identity
    unavailable (they are never called anonymously), and says why in the log."""
    try:
        return signer_from_settings(settings.identity)
    except IdentityError as e:
        log.error("identity signing key unusable: %s", e)
        return None


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
        # The asker, signed for Sleuth's kube-mcp, which reads as them (the cluster decides).
        identity=Identity(user=job.requester.user, groups=tuple(job.requester.groups), job=job.id),
        signer=signer_of(settings),
    ) as tools:
        yield tools
