"""``<prefix>.agent.diagnostics``: the agent answers for its own parts (the chat command
``diagnostics``, asked by the gateway for a cluster admin).

- MCP servers, per cluster and the global ones: connected, initialized and ``tools/list``-ed
  through the agent's own MCP client (``ScopedMcpClient``, the one investigations use) with an
  identity assertion it signs for ``sleuth-diagnostics`` — no groups, so it may read nothing;
  listing tools reads nothing from the cluster and no tool is ever called. Each server gets at
  most ``PROBE_SECONDS``, all at once, so a dead server cannot hold the answer up.
- The LLM: provider, model and endpoint of the primary (and backup), the failover circuit as
  the LLM client tracks it, and the requests since start by outcome (never the key).
- Which agent answered (host name and process id) and its version.

One agent of queue group ``agent`` answers, into the branch of the gateway's inbox kept for
these answers (``Subjects.agent_diagnostics_reply``; its NATS user may write nowhere else in
it). Nothing secret is sent: URLs lose their user, password and query, errors are short reasons
with the server's URL credentials masked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import time
from collections.abc import AsyncIterator, Callable, Generator
from importlib.metadata import PackageNotFoundError, version
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx2
from faststream.nats import NatsRouter
from prometheus_client import Counter

from sleuth_agent._responders import command_router
from sleuth_agent.llm import LlmInvestigator
from sleuth_agent.metrics import Metrics
from sleuth_agent.settings import Settings
from sleuth_agent.tools import signer_of
from sleuth_common.config import McpServerSettings
from sleuth_common.identity import AssertionAuth, Identity, IdentitySigner
from sleuth_common.llm import FailoverClient, LlmSettings
from sleuth_common.mcp import ScopedMcpClient
from sleuth_common.messages import (
    DIAGNOSTICS_USER,
    AgentDiagnosticsReply,
    AgentDiagnosticsRequest,
    LlmEndpointReport,
    LlmReport,
    McpServerReport,
)
from sleuth_common.scope import Scope
from sleuth_common.subjects import Subjects

__all__ = [
    "PROBE_SECONDS",
    "DiagnosticsResponder",
    "diagnostics_router",
    "llm_report",
    "probed_servers",
    "shown_url",
]

log = logging.getLogger(__name__)

PROBE_SECONDS = 2.0
"""Longest one MCP server may take to connect and list its tools."""
_MAX_REASON = 160
# Sees every tool a server enables; nothing is ever called through it.
_LISTING_SCOPE = Scope(frozenset(), cluster_wide=True)


def shown_url(url: str) -> str:
    """``url`` as shown to people: scheme, host, port and path (no user, password or query)."""
    split = urlsplit(url.strip())
    return urlunsplit((split.scheme, split.netloc.rpartition("@")[2], split.path, "", ""))


def _url_secrets(url: str) -> list[str]:
    """The password (or a lone user name, which is a token) and query values of ``url``."""
    split = urlsplit(url.strip())
    found = [split.password or split.username or "", *(v for _, v in parse_qsl(split.query))]
    return sorted({v for v in found if len(v) >= 3}, key=len, reverse=True)


def _reason(error: str, server: McpServerSettings) -> str:
    """The client's error as a short reason: without the ``unavailable: <name>:`` prefix, the
    first line only, the server's URL shown without credentials."""
    text = error.strip().removeprefix("unavailable:").strip()
    text = text.removeprefix(f"{server.name}:").strip()
    text = text.splitlines()[0] if text else "unavailable"
    if "ConnectError" in text or "connection attempts failed" in text.lower():
        text = "cannot connect"
    text = text.replace(server.url, shown_url(server.url))
    for secret in _url_secrets(server.url):
        text = text.replace(secret, "***")
    text = re.sub(r"\s+For more information.*$", "", text)
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"


class _StatusAuth(httpx2.Auth):
    """Signs like ``inner`` (if any) and remembers the first HTTP error status of a POST: the MCP
    client reports a refusal only as "Server returned an error response"."""

    def __init__(self, inner: httpx2.Auth | None) -> None:
        self.inner = inner
        self.refused = 0

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        if self.inner is not None:
            request = next(self.inner.auth_flow(request))
        response = yield request
        if request.method == "POST" and response.status_code >= 400 and not self.refused:
            self.refused = response.status_code


def _refusal(status: int, server: McpServerSettings) -> str:
    if status in (401, 403) and server.identity:
        return f"refused the agent's signed identity (HTTP {status})"
    return f"refused (HTTP {status})"


def _client(
    cluster: str, audience_cluster: str, server: McpServerSettings, signer: IdentitySigner | None, wait: float
) -> tuple[ScopedMcpClient, _StatusAuth | None]:
    signs = None
    if server.identity and signer is not None:
        audience = server.identity_audience or f"kube-mcp/{audience_cluster}"
        signs = AssertionAuth(signer, Identity(user=DIAGNOSTICS_USER), audience)
    # A server that needs an identity gets none without a signer: the client then says why.
    auth = _StatusAuth(signs) if signs is not None or not server.identity else None
    client = ScopedMcpClient(
        server, _LISTING_SCOPE, cluster=audience_cluster, user=DIAGNOSTICS_USER,
        connect_timeout=wait, is_global=not cluster, auth=auth,
    )
    return client, auth


async def _listed(cluster: str, client: ScopedMcpClient, auth: _StatusAuth | None) -> McpServerReport:
    server = client.server
    started = time.monotonic()
    ok = await client.connect()  # connect, initialize, tools/list: within its connect_timeout
    ms = round((time.monotonic() - started) * 1000, 1)
    error = ""
    if not ok:
        error = _refusal(auth.refused, server) if auth is not None and auth.refused else _reason(client.error, server)
    return McpServerReport(
        cluster=cluster, server=server.name, url=shown_url(server.url), reachable=ok,
        tools=len(client.tools) if ok else None, latency_ms=ms, error=error,
    )


@contextlib.asynccontextmanager
async def probed_servers(
    settings: Settings, signer: IdentitySigner | None, wait: float = PROBE_SECONDS
) -> AsyncIterator[list[McpServerReport]]:
    """Every configured MCP server (the clusters' and the global ones), all at once, each within
    ``wait`` seconds (the agent's ``connect_timeout`` when that is shorter). The connections
    are closed on leaving, so an answer can be sent before a slow close."""
    wait = min(wait, settings.agent.connect_timeout)
    first = settings.clusters[0].name if settings.clusters else ""
    targets = [(c.name, c.name, s) for c in settings.clusters for s in c.mcp_servers]
    targets += [("", first, s) for s in settings.global_mcp_servers]
    clients = [(cluster, *_client(cluster, aud, s, signer, wait)) for cluster, aud, s in targets]
    try:
        yield list(await asyncio.gather(*(_listed(c, client, auth) for c, client, auth in clients)))
    finally:
        await asyncio.gather(*(client.close() for _, client, _ in clients))


def _endpoint(s: LlmSettings) -> LlmEndpointReport:
    return LlmEndpointReport(provider=s.provider, model=s.resolved_model(), endpoint=shown_url(s.resolved_base_url()))


def _counts(counter: Counter) -> dict[str, int]:
    out: dict[str, int] = {}
    for metric in counter.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total") and sample.value:
                out[sample.labels.get("outcome", "")] = int(sample.value)
    return out


def llm_report(llm: LlmInvestigator | None, metrics: Metrics) -> LlmReport:
    """The model endpoint(s) and the failover circuit as the agent's LLM client tracks them."""
    if llm is None:
        return LlmReport()
    client = llm.client
    requests = _counts(metrics.llm_requests)
    if not isinstance(client, FailoverClient):
        return LlmReport(primary=_endpoint(client.settings), requests=requests)
    breaker = client.breaker
    return LlmReport(
        primary=_endpoint(client.primary.settings),
        backup=_endpoint(client.backup.settings),
        circuit=breaker.state,
        consecutive_failures=breaker.failures,
        failure_threshold=breaker.threshold,
        cooldown_seconds=breaker.cooldown,
        last_used="backup" if client.last_used is client.backup else "primary",
        requests=requests,
    )


def _version() -> str:
    try:
        return version("sleuth-agent")
    except PackageNotFoundError:
        return "unknown"


class DiagnosticsResponder:
    """Answers ``<prefix>.agent.diagnostics`` (the subscriber: ``diagnostics_router``)."""

    def __init__(
        self, settings: Settings, metrics: Metrics, llm: LlmInvestigator | None,
        signer: IdentitySigner | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.llm = llm
        self.signer = signer if signer is not None else signer_of(settings)
        self.subjects = Subjects(settings.prefix)
        self.agent = f"{socket.gethostname()}:{os.getpid()}"
        self._closing: set[asyncio.Task[None]] = set()

    async def reply(self, req: AgentDiagnosticsRequest) -> AgentDiagnosticsReply:
        """The answer at once; the MCP connections it opened are closed afterwards, in the
        background (a slow close must not delay the answer past the asker's wait)."""
        stack = contextlib.AsyncExitStack()
        answer = await stack.enter_async_context(self.answer(req))
        task = asyncio.create_task(stack.aclose(), name="agent-diagnostics-close")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        return answer

    async def aclose(self) -> None:
        """Wait for the connections still closing."""
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    @contextlib.asynccontextmanager
    async def answer(self, req: AgentDiagnosticsRequest) -> AsyncIterator[AgentDiagnosticsReply]:
        """``async with responder.answer(req) as reply``: the MCP connections close on leaving."""
        started = time.monotonic()
        log.info("diagnostics asked by %s", req.user or "a caller the gateway did not name",
                 extra={"subject": self.subjects.agent_diagnostics})
        async with probed_servers(self.settings, self.signer) as mcp:
            yield AgentDiagnosticsReply(
                agent=self.agent, version=_version(), mcp=tuple(mcp), llm=llm_report(self.llm, self.metrics),
                duration_ms=round((time.monotonic() - started) * 1000, 1),
            )



DIAGNOSTICS_WORKERS = 4
"""Requests answered at once by one agent: a second admin does not wait for the first."""


def diagnostics_router(responder: Callable[[], DiagnosticsResponder | None], subjects: Subjects, *,
                       crashes: Counter | None = None) -> NatsRouter:
    """The subscriber of ``<prefix>.agent.diagnostics`` (see :func:`~sleuth_agent._responders.command_router`);
    the reply goes to a branch of the gateway's inbox, ``Subjects.agent_diagnostics_reply``."""
    return command_router(subjects.agent_diagnostics, subjects.agent_queue, AgentDiagnosticsRequest,
                          AgentDiagnosticsReply, responder, name="diagnostics", workers=DIAGNOSTICS_WORKERS,
                          crashes=crashes)
