"""``diagnostics`` (cluster admins): the health of Sleuth's parts as the gateway and an agent see them.

- Agent: the gateway asks ``<prefix>.agent.diagnostics`` (one agent of the queue group answers,
  within ``AGENT_TIMEOUT``); the agent lists every MCP server's tools with an identity only it
  can sign and reports its LLM. Which agent answered, its version, or why none did.
- MCP servers per configured cluster (and the global ones): the agent's tool count and latency
  (or its short reason), beside the gateway's own probes of ``/healthz`` and ``/readyz`` next to
  the ``/mcp`` URL. Without an agent's answer the probes alone, saying the tool counts are
  unknown.
- NATS: the connection, and per stream (JOBS, CHAT, ALERTS) messages and each consumer's
  pending, unacknowledged and redelivered counts, read from the JetStream API.
- Redis: PING latency and used memory.
- LLM: as the agent runs it: provider, model and endpoint (and the backup's), the failover
  circuit and the requests since the agent started, by outcome. Without an agent's answer,
  what the gateway's own environment names.
- Build: the sleuth-gateway package version and the git commit.

Nothing secret is shown: URLs lose their user, password and query, error texts are short
reasons, and every known secret value is masked in the final text as a last guard.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import subprocess
import time
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from redis.exceptions import NoPermissionError, RedisError

from sleuth_common.config import McpServerSettings
from sleuth_common.health import describe
from sleuth_common.llm import resolve_llm_settings
from sleuth_common.messages import AgentDiagnosticsReply, AgentDiagnosticsRequest, LlmReport, McpServerReport
from sleuth_gateway.bus import BusError
from sleuth_gateway.commands._access import Access
from sleuth_gateway.runtime import Gateway

__all__ = ["AGENT_TIMEOUT", "diagnostics", "git_commit", "shown_url"]

AGENT_TIMEOUT = 3.0
"""Seconds the gateway waits for an agent's view (the agent bounds each server at 2 s)."""
_PROBE_TIMEOUT = 2.0
_GLOBAL = "all clusters (global servers)"
_BUS_TIMEOUT = 1.0
_COMMIT = re.compile(r"[0-9A-Za-z._-]{1,40}")


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def shown_url(url: str) -> str:
    """``url`` as shown to people: scheme, host, port and path (no user, password or query)."""
    split = urlsplit(url)
    return urlunsplit((split.scheme, split.netloc.rpartition("@")[2], split.path, "", ""))


def _health_base(url: str) -> str:
    """Where a server's ``/healthz`` lives: its ``/mcp`` URL without the ``/mcp``."""
    split = urlsplit(url)
    path = split.path.rstrip("/")
    path = path[: -len("/mcp")] if path.endswith("/mcp") else path.rpartition("/")[0]
    return urlunsplit((split.scheme, split.netloc, path, "", ""))


# ------------------------------------------------------------------------------- build


@functools.cache
def _checkout_commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=2.0,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    out = done.stdout.strip()
    return out if done.returncode == 0 and _COMMIT.fullmatch(out) else "unknown"


async def git_commit() -> str:
    """``SLEUTH_GIT_COMMIT`` if set, else ``git rev-parse --short HEAD`` of the checkout this
    code runs from, else ``unknown``."""
    env = os.environ.get("SLEUTH_GIT_COMMIT", "").strip()
    if env:
        return env if _COMMIT.fullmatch(env) else "unknown"
    return await asyncio.to_thread(_checkout_commit)


def _package_version() -> str:
    try:
        return version("sleuth-gateway")
    except PackageNotFoundError:
        return "unknown"


# ------------------------------------------------------------------------------- MCP servers


async def _get(http: httpx.AsyncClient, url: str, wait: float) -> str:
    t0 = time.monotonic()
    try:
        resp = await http.get(url, timeout=wait)
    except httpx.TimeoutException:
        return f"no answer within {wait:g}s"
    except httpx.ConnectError:
        return "cannot connect"
    except httpx.HTTPError as exc:
        return f"failed ({type(exc).__name__})"
    verdict = {200: " ok", 503: " not ready"}.get(resp.status_code, "")
    return f"{resp.status_code}{verdict} in {_ms(time.monotonic() - t0)}"


async def _probes(http: httpx.AsyncClient, server: McpServerSettings) -> str:
    base = _health_base(server.url)
    timeout = min(server.timeout, _PROBE_TIMEOUT)
    healthz, readyz = await asyncio.gather(
        _get(http, f"{base}/healthz", timeout), _get(http, f"{base}/readyz", timeout)
    )
    return f"/healthz {healthz}; /readyz {readyz}"


def _listed(report: McpServerReport | None) -> str:
    """What the agent found listing the server's tools."""
    if report is None:
        return "not configured in the agent"
    took = _ms(report.latency_ms / 1000)
    if report.reachable:
        return f"{_count(report.tools or 0, 'tool')} (the agent listed them in {took})"
    return f"the agent cannot list its tools: {report.error or 'unavailable'} (after {took})"


Probed = list[tuple[str, list[McpServerSettings], list[str]]]
"""Per cluster ("" = the global servers): its servers and the gateway's probes of each."""


async def _probe_all(gw: Gateway) -> Probed:
    groups = [(c.name, list(c.mcp_servers)) for c in gw.settings.clusters]
    if gw.settings.global_mcp_servers:
        groups.append(("", list(gw.settings.global_mcp_servers)))
    # Proxy settings from the environment apply, as they do to the agent's MCP client.
    async with httpx.AsyncClient(follow_redirects=False) as http:
        probes = [[_probes(http, s) for s in servers] for _, servers in groups]
        answers = await asyncio.gather(*(asyncio.gather(*p) for p in probes))
    return [(cluster, servers, list(found)) for (cluster, servers), found in zip(groups, answers, strict=True)]


def _mcp_section(probed: Probed, agent: AgentDiagnosticsReply | None, why: str) -> list[str]:
    lines = ["**MCP servers**"]
    if not probed and (agent is None or not agent.mcp):
        return [*lines, "- no cluster is configured"]
    reports = {(r.cluster, r.server): r for r in (agent.mcp if agent is not None else ())}
    for cluster, servers, found in probed:
        where = cluster or _GLOBAL
        if not servers:
            lines.append(f"- **{where}**: no MCP server configured")
        for server, probes in zip(servers, found, strict=True):
            seen = f"{_listed(reports.pop((cluster, server.name), None))}; " if agent is not None else ""
            lines.append(f"- **{where}** `{server.name}` ({shown_url(server.url)}): {seen}{probes}")
    for r in reports.values():  # servers only the agent's configuration names
        lines.append(f"- **{r.cluster or _GLOBAL}** `{r.server}` ({shown_url(r.url)}, in the agent's "
                     f"configuration only): {_listed(r)}")
    if agent is None:
        lines.append(f"- Tool counts unknown: {why}. Listing a server's tools needs an identity only the "
                     "agent can sign.")
    return lines


# ------------------------------------------------------------------------------- NATS


async def _stream(js: JetStreamContext, name: str) -> str:
    try:
        info = await js.stream_info(name)
    except NotFoundError:
        return f"- `{name}`: absent (made by the service that uses it, at its start)"
    except (NatsError, TimeoutError) as exc:
        return f"- `{name}`: no answer ({describe(exc)})"
    state = info.state
    line = f"- `{name}`: {_count(state.messages, 'message')}, {_count(state.consumer_count, 'consumer')}"
    try:
        consumers = await js.consumers_info(name)
    except (NatsError, TimeoutError) as exc:
        return f"{line}; consumers not readable ({describe(exc)})"
    for c in sorted(consumers, key=lambda c: c.name or ""):
        line += (
            f"; `{c.name}`: {c.num_pending or 0} pending, {c.num_ack_pending or 0} unacknowledged, "
            f"{c.num_redelivered or 0} redelivered"
        )
    return line


def _server_version(nc: NatsClient) -> str:
    v = nc.connected_server_version
    try:
        return f"{v.major}.{v.minor}.{v.patch}"
    except ValueError:
        return "unknown"


async def _nats_section(gw: Gateway) -> list[str]:
    try:
        nc = gw.bus.nats
    except BusError:
        return ["**NATS**: not connected"]
    lines = [f"**NATS**: connected (nats-server {_server_version(nc)}); JetStream streams:"]
    js = nc.jetstream(timeout=_BUS_TIMEOUT)
    s = gw.subjects
    lines += await asyncio.gather(*(_stream(js, n) for n in (s.stream_jobs, s.stream_chat, s.stream_alerts)))
    return lines


# ------------------------------------------------------------------------------- Redis


async def _redis_section(gw: Gateway) -> list[str]:
    redis = gw.redis
    if redis is None:
        return ["**Redis**: not set up"]
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(redis.ping(), _PROBE_TIMEOUT)
    except (RedisError, OSError, TimeoutError) as exc:
        return [f"**Redis**: no answer ({describe(exc)})"]
    ping = _ms(time.monotonic() - t0)
    try:
        info = await asyncio.wait_for(redis.info("memory"), _PROBE_TIMEOUT)
        memory = f"used memory {info.get('used_memory_human', '?')}"
    except NoPermissionError:
        memory = "used memory not readable (the gateway's Redis user may not run INFO)"
    except (RedisError, OSError, TimeoutError) as exc:
        memory = f"used memory not readable ({describe(exc)})"
    return [f"**Redis**: PING {ping}; {memory}"]


# ------------------------------------------------------------------------------- LLM


def _gateway_llm_section(why: str) -> list[str]:
    try:
        llm = resolve_llm_settings(None)
    except ValueError:
        llm = None
    if llm is None:
        seen = "this gateway's environment names none (the agent's `agent.llm` setting decides)"
    else:
        seen = f"this gateway's environment names {llm.provider} `{llm.resolved_model()}`"
    return [f"**LLM**: used by the agent, whose state is unknown ({why}); {seen}."]


_CIRCUIT = {
    "closed": "circuit closed: the primary answers",
    "open": "circuit OPEN: requests go to the backup until the primary is probed again",
    "half_open": "circuit half-open: one request is probing the primary",
}


def _requests(counts: dict[str, int]) -> str:
    if not counts:
        return "none"
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _llm_section(llm: LlmReport) -> list[str]:
    if llm.primary is None:
        return ["**LLM** (the agent's): none configured; the deterministic investigator answers alone."]
    p = llm.primary
    lines = [f"**LLM** (the agent's): {p.provider} `{p.model}` at {shown_url(p.endpoint)}"]
    if llm.backup is None:
        lines.append("- no backup endpoint, so no circuit breaker: a failed request is retried, then "
                     "the deterministic answer stands")
    else:
        b = llm.backup
        lines.append(f"- backup: {b.provider} `{b.model}` at {shown_url(b.endpoint)}")
        state = _CIRCUIT.get(llm.circuit, f"circuit {llm.circuit}")
        lines.append(
            f"- {state}; {_count(llm.consecutive_failures, 'consecutive failure')} of the primary "
            f"({llm.failure_threshold} open the circuit for {llm.cooldown_seconds:g}s); last request "
            f"answered by the {llm.last_used or 'primary'}"
        )
    lines.append(f"- requests since the agent started: {_requests(llm.requests)}")
    return lines


async def _ask_agent(gw: Gateway, user: str) -> tuple[AgentDiagnosticsReply | None, str, float]:
    """(the agent's view or None, why there is none, seconds it took)."""
    t0 = time.monotonic()
    try:
        reply = await gw.bus.agent_diagnostics(AgentDiagnosticsRequest(user=user), AGENT_TIMEOUT)
    except BusError as exc:
        return None, str(exc), time.monotonic() - t0
    return reply, "", time.monotonic() - t0


def _agent_line(agent: AgentDiagnosticsReply | None, why: str, seconds: float) -> str:
    if agent is None:
        return f"**Agent**: {why}; tool counts and the LLM's state are unknown"
    return f"**Agent**: `{agent.agent}` (sleuth-agent {agent.version}) answered in {_ms(seconds)}"


# ------------------------------------------------------------------------------- together


def _secrets(gw: Gateway) -> set[str]:
    """Values that must never be shown: passwords and query values of configured URLs (and a
    NATS URL's lone user, which is a token), the NATS and Redis passwords, the LLM key."""
    s = gw.settings
    nats_urls = [u.strip() for u in s.nats.url.split(",")]
    urls = [*nats_urls, s.redis.url]
    urls += [m.url for c in s.clusters for m in c.mcp_servers] + [m.url for m in s.global_mcp_servers]
    found: set[str] = set()
    for url in urls:
        split = urlsplit(url.strip())
        if split.password:
            found.add(split.password)
        elif split.username and url in nats_urls:
            found.add(split.username)  # nats://TOKEN@host
        found.update(v for _, v in parse_qsl(split.query))
    for secret in (s.nats.password(), s.redis.password()):
        if secret is not None:
            found.add(secret.get_secret_value())
    llm_key = os.environ.get("SLEUTH_LLM_API_KEY", "")
    if llm_key:
        found.add(llm_key)
    return {v for v in found if len(v) >= 4}


def _masked(text: str, secrets: Iterable[str]) -> str:
    for value in sorted(secrets, key=len, reverse=True):
        text = text.replace(value, "***")
    return text


async def diagnostics(gw: Gateway, access: Access, user: str = "") -> str:
    """The ``diagnostics`` answer (Markdown); the caller (``user``, named to the agent for its
    log) has been checked to be a cluster admin. Every part is bounded by a short timeout and
    reports its own failure; the agent is asked while the gateway reads the rest."""
    (agent, why, took), probed, commit, nats_lines, redis_lines = await asyncio.gather(
        _ask_agent(gw, user), _probe_all(gw), git_commit(), _nats_section(gw), _redis_section(gw)
    )
    lines = [
        "**Diagnostics**",
        "",
        f"**Build**: sleuth-gateway {_package_version()}, commit `{commit}`",
        "",
        _agent_line(agent, why, took),
        "",
        f"**authz-cache**: answered your scope in {_ms(access.seconds)}",
        "",
        *_mcp_section(probed, agent, why),
        "",
        *nats_lines,
        "",
        *redis_lines,
        "",
        *(_llm_section(agent.llm) if agent is not None else _gateway_llm_section(why)),
    ]
    return _masked("\n".join(lines), _secrets(gw))
