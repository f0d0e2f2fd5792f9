"""``diagnostics`` (cluster admins): the health of Sleuth's parts as the gateway sees them.

- MCP servers per configured cluster: the gateway cannot list a kube-mcp's tools (that needs an
  identity assertion only the agent can sign), so it probes ``/healthz`` and ``/readyz`` beside
  the ``/mcp`` URL for reachability and latency, and says the tool count is the agent's.
- NATS: the connection, and per stream (JOBS, CHAT, ALERTS) messages and each consumer's
  pending, unacknowledged and redelivered counts, read from the JetStream API.
- Redis: PING latency and used memory.
- LLM: configured in the agent; the gateway shows what its own environment names, and points to
  the agent's ``/metrics`` for requests and circuit changes.
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
from sleuth_gateway.bus import BusError
from sleuth_gateway.commands._access import Access
from sleuth_gateway.runtime import Gateway

__all__ = ["diagnostics", "git_commit", "shown_url"]

_PROBE_TIMEOUT = 2.0
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


async def _server(http: httpx.AsyncClient, server: McpServerSettings) -> str:
    base = _health_base(server.url)
    timeout = min(server.timeout, _PROBE_TIMEOUT)
    healthz, readyz = await asyncio.gather(
        _get(http, f"{base}/healthz", timeout), _get(http, f"{base}/readyz", timeout)
    )
    return f"`{server.name}` ({shown_url(server.url)}): /healthz {healthz}; /readyz {readyz}"


async def _mcp_section(gw: Gateway) -> list[str]:
    groups = [(c.name, c.mcp_servers) for c in gw.settings.clusters]
    if gw.settings.global_mcp_servers:
        groups.append(("all clusters (global servers)", gw.settings.global_mcp_servers))
    lines = ["**MCP servers**"]
    if not groups:
        return [*lines, "- no cluster is configured"]
    # Proxy settings from the environment apply, as they do to the agent's MCP client.
    async with httpx.AsyncClient(follow_redirects=False) as http:
        probes = [[_server(http, s) for s in servers] for _, servers in groups]
        answers = await asyncio.gather(*(asyncio.gather(*p) for p in probes))
    for (cluster, servers), found in zip(groups, answers, strict=True):
        if not servers:
            lines.append(f"- **{cluster}**: no MCP server configured")
        for line in found:
            lines.append(f"- **{cluster}** {line}")
    lines.append(
        "- Tool counts are the agent's: listing a server's tools needs an identity only the agent can sign."
    )
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


def _llm_section() -> list[str]:
    where = "the agent's `/metrics` (`sleuth_llm_requests_total`, `sleuth_llm_failover_changes_total`)"
    try:
        llm = resolve_llm_settings(None)
    except ValueError:
        llm = None
    if llm is None:
        seen = "this gateway's environment names none (the agent's `agent.llm` setting decides)"
    else:
        seen = f"this gateway's environment names {llm.provider} `{llm.resolved_model()}`"
    return [f"**LLM**: used by the agent; {seen}. Requests and circuit state: {where}."]


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


async def diagnostics(gw: Gateway, access: Access) -> str:
    """The ``diagnostics`` answer (Markdown); the caller has been checked to be a cluster admin.
    Every part is bounded by a short timeout and reports its own failure."""
    commit, mcp, nats_lines, redis_lines = await asyncio.gather(
        git_commit(), _mcp_section(gw), _nats_section(gw), _redis_section(gw)
    )
    lines = [
        "**Diagnostics**",
        "",
        f"**Build**: sleuth-gateway {_package_version()}, commit `{commit}`",
        "",
        f"**authz-cache**: answered your scope in {_ms(access.seconds)}",
        "",
        *mcp,
        "",
        *nats_lines,
        "",
        *redis_lines,
        "",
        *_llm_section(),
    ]
    return _masked("\n".join(lines), _secrets(gw))
