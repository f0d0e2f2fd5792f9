"""``ScopedMcpClient``: one MCP server (streamable HTTP) seen through one caller's scope.

Every call goes arguments-check → server → result filter; a caller never receives an unfiltered
result, and nothing here raises into the caller: a server that does not answer becomes a
``ToolResult`` with status ``error`` and ``error="unavailable: ..."``.

The MCP ``Client`` lives in one owner task (anyio task groups must be entered and left by the
same task); calls from any task of the same loop go through its session.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import time
from collections.abc import Mapping
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from sleuth_common.config import McpServerSettings
from sleuth_common.mcp._commands import kubectl_command
from sleuth_common.mcp._result import AuditCallback, ToolAuditEvent, ToolInfo, ToolResult, ToolStatus
from sleuth_common.scope import (
    Scope,
    ToolRule,
    ToolRules,
    check_arguments,
    default_rules,
    filter_result,
    pinned_by_arguments,
)

__all__ = ["ScopedMcpClient"]

log = logging.getLogger(__name__)

_MAX_ERROR_CHARS = 500


class ScopedMcpClient:
    """Use as ``async with ScopedMcpClient(server, scope, cluster=..., user=...) as c:``.

    ``c.tools`` lists what this caller may use; ``await c.call(tool, args)`` returns a
    ``ToolResult``. ``on_audit`` (sync or async) receives a ``ToolAuditEvent`` per call.
    ``headers`` are sent with every HTTP request (``self_authorized`` servers also get
    ``X-Remote-User``). ``max_result_bytes``: larger results are withheld (fail closed).
    """

    def __init__(
        self,
        server: McpServerSettings,
        scope: Scope,
        *,
        cluster: str = "",
        user: str = "",
        rules: ToolRules | None = None,
        on_audit: AuditCallback | None = None,
        connect_timeout: float = 5.0,
        headers: Mapping[str, str] | None = None,
        max_result_bytes: int | None = 4_000_000,
    ) -> None:
        self.server = server
        self.scope = scope
        self.cluster = cluster
        self.user = user
        self.rules = rules if rules is not None else default_rules()
        self.on_audit = on_audit
        self.connect_timeout = connect_timeout
        self.max_result_bytes = max_result_bytes
        self._headers = dict(headers or {})
        if server.self_authorized and user:
            self._headers["X-Remote-User"] = user
        self._client: Client | None = None
        self._listed: dict[str, ToolInfo] = {}
        self._error = ""
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> ScopedMcpClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def available(self) -> bool:
        return self._client is not None

    @property
    def error(self) -> str:
        """Why the server is unavailable ("" when connected)."""
        return self._error

    async def connect(self) -> bool:
        """Connect and list tools. Returns False (and sets ``error``) instead of raising."""
        if self._owner is not None:
            return self.available
        self._owner = asyncio.create_task(self._own(), name=f"mcp-{self.server.name}")
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait(
            {ready, self._owner}, timeout=self.connect_timeout, return_when=asyncio.FIRST_COMPLETED
        )
        ready.cancel()
        if not self._ready.is_set() or self._client is None:
            if not self._error:
                self._error = (
                    f"unavailable: {self.server.name} did not answer within {self.connect_timeout:g}s"
                )
            await self._stop_owner()
            log.warning("MCP server unavailable", extra={"server": self.server.name, "cluster": self.cluster})
            return False
        return True

    async def close(self) -> None:
        self._closing.set()
        await self._stop_owner(grace=2.0)
        self._client = None

    async def _stop_owner(self, grace: float = 0.0) -> None:
        owner = self._owner
        if owner is None or owner.done():
            return
        if grace:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(owner), grace)
        if not owner.done():
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner

    async def _own(self) -> None:
        timeout = httpx2.Timeout(self.server.timeout, connect=self.connect_timeout)
        try:
            async with httpx2.AsyncClient(headers=self._headers, timeout=timeout) as http:
                transport = streamable_http_client(self.server.url, http_client=http)
                async with Client(transport, read_timeout_seconds=self.server.timeout, cache=None) as client:
                    await self._list(client)
                    self._client = client
                    self._ready.set()
                    await self._closing.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the edge of a remote server: any failure means "unavailable"
            self._error = f"unavailable: {self.server.name}: {_describe(exc)}"
        finally:
            self._client = None
            self._ready.set()

    async def _list(self, client: Client) -> None:
        cursor: str | None = None
        for _ in range(20):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                meta = tool.meta or {}
                self.rules.learn(tool.name, ToolRule.from_tool(tool.input_schema, meta, tool.description))
                self._listed[tool.name] = ToolInfo(
                    tool.name, tool.description or "", dict(tool.input_schema or {}), self.server.name
                )
            cursor = page.next_cursor
            if not cursor:
                break

    # -- tools -------------------------------------------------------------------------------
    def _visible(self, name: str) -> bool:
        if self.server.allow_tools is not None and name not in self.server.allow_tools:
            return False
        return self.scope.cluster_wide or not self.rules.rule_for(name).cluster_admin_only

    @property
    def tools(self) -> list[ToolInfo]:
        """The tools this caller may use on this server (cluster-admin-only ones only for
        cluster-wide callers; only ``allow_tools`` when the server sets it)."""
        return [t for name, t in self._listed.items() if self._visible(name)]

    def has_tool(self, name: str) -> bool:
        return name in self._listed and self._visible(name)

    async def call(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (sent to the server)
    ) -> ToolResult:
        """Check, send, filter. Never raises (except cancellation of the calling task)."""
        args = {k: v for k, v in (args or {}).items() if v is not None}
        started = time.monotonic()
        result = await self._call(tool, args, timeout)
        ms = (time.monotonic() - started) * 1000
        result = dataclasses.replace(result, duration_ms=ms)
        await self._audit(result)
        return result

    async def _call(self, tool: str, args: dict[str, Any], timeout: float | None) -> ToolResult:  # noqa: ASYNC109
        def res(status: ToolStatus, **kw: Any) -> ToolResult:
            return ToolResult(
                tool=tool,
                status=status,
                server=self.server.name,
                cluster=self.cluster,
                args=args,
                command=kubectl_command(tool, args),
                **kw,
            )

        if self.server.allow_tools is not None and tool not in self.server.allow_tools:
            return res("denied", error=f"{tool} is not enabled on {self.server.name}")
        refusal = check_arguments(tool, args, self.scope, self.rules)
        if refusal is not None:
            return res("denied", error=refusal.message)
        client = self._client
        if client is None:
            return res("error", error=self._error or f"unavailable: {self.server.name} is not connected")
        if self._listed and tool not in self._listed:
            return res("error", error=f"{self.server.name} has no tool {tool}")
        limit = timeout if timeout is not None else self.server.timeout
        try:
            raw = await asyncio.wait_for(
                client.call_tool(tool, args, read_timeout_seconds=limit), limit + 0.5
            )
        except TimeoutError:
            return res(
                "error", error=f"unavailable: {self.server.name} did not answer {tool} within {limit:g}s"
            )
        except Exception as exc:  # a remote failure of any kind is a result, not an exception
            return res("error", error=f"unavailable: {self.server.name}: {_describe(exc)}")
        text = _text_of(raw)
        if raw.is_error:
            # The arguments were in scope, so the server's own error names only what the caller may see.
            return res("error", error=_short(text) or f"{tool} failed on {self.server.name}")
        if self.server.unscoped:
            return res("ok", data=_parse(text), text=text)
        pinned = pinned_by_arguments(tool, args, self.scope, self.rules)
        outcome = filter_result(text, self.scope, pinned=pinned, max_bytes=self.max_result_bytes)
        if outcome.outcome == "withheld":
            return res("withheld", error=outcome.reason)
        data = outcome.data
        shown = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return res("ok", data=data, text=shown, removed=outcome.removed)

    async def _audit(self, result: ToolResult) -> None:
        if self.on_audit is None:
            return
        if result.status == "ok":
            outcome = "filtered" if result.removed else "allowed"
        else:
            outcome = result.status
        event = ToolAuditEvent(
            self.user,
            self.cluster,
            self.server.name,
            result.tool,
            outcome,  # type: ignore[arg-type]
            result.removed,
            result.duration_ms,
            result.error[:200],
        )
        try:
            maybe = self.on_audit(event)
            if inspect.isawaitable(maybe):
                await maybe
        except Exception:  # an audit sink must never break a tool call
            log.exception("audit callback failed")


def _text_of(raw: Any) -> str:
    parts = [getattr(c, "text", "") for c in (raw.content or []) if getattr(c, "type", "") == "text"]
    text = "\n".join(p for p in parts if p)
    if not text and raw.structured_content is not None:
        text = json.dumps(raw.structured_content)
    return text


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _short(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + "…"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return _short(f"{type(exc).__name__}: {exc}".rstrip(": "))
