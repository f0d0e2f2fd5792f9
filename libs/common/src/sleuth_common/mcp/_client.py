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
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from sleuth_common.config import McpServerSettings
from sleuth_common.mcp._commands import kubectl_command
from sleuth_common.mcp._observe import observe_call, observe_connect
from sleuth_common.mcp._resolve import InventoryProvider, IpResolver, current_inventory, current_resolver
from sleuth_common.mcp._result import AuditCallback, ToolAuditEvent, ToolInfo, ToolResult, ToolStatus
from sleuth_common.redact import redact_text
from sleuth_common.scope import (
    FilterOutcome,
    ForeignNames,
    Scope,
    ToolRule,
    ToolRules,
    cap_text,
    default_rules,
    filter_result,
    namespaces_in_arguments,
    parse_result,
    prepare_call,
    strip_markers,
)
from sleuth_common.tracing import http_hooks, internal_span

__all__ = ["ScopedMcpClient"]

log = logging.getLogger(__name__)

_MAX_ERROR_CHARS = 500
OFF_LOOP_CHARS = 256 * 1024
"""Results longer than this (characters) are checked in a worker thread, off the event loop."""
TOO_SLOW_MESSAGE = (
    "This result was withheld: it took too long to check. Narrow the query (a namespace, a label "
    "selector, a name, fewer lines) — your namespaces: {scope}."
)
UNCHECKED_MESSAGE = (
    "This result was withheld: it could not be checked. Narrow the query (a namespace, a label "
    "selector, a name, fewer lines) — your namespaces: {scope}."
)
_T = TypeVar("_T")
_CLUSTER_WIDE = Scope(frozenset(), cluster_wide=True)
# Built name indexes by (inventory object, caller's namespaces): one per scope while the
# provider hands out the same inventory (``bus_inventory`` reuses it for a few seconds).
_NAME_INDEXES: dict[tuple[int, frozenset[str]], tuple[Any, ForeignNames]] = {}
_GLOBAL_RULE = ToolRule(namespace_args=(), namespace_list_args=(), namespaced=False, fan_out=False)


def rules_for_server(server: McpServerSettings, base: ToolRules | None = None) -> ToolRules:
    """``base`` (default: Sleuth's kube-mcp rules) with the server's configured ``tool_rules``
    on top. Each client gets its own table (rules learned from one server stay with it)."""
    base = base if base is not None else default_rules()
    rules = ToolRules(dict(base.rules), base.default)
    for name, rs in server.tool_rules.items():
        rules.rules[name] = ToolRule(
            namespace_args=tuple(rs.namespace_args),
            namespace_list_args=tuple(rs.namespace_list_args),
            ref_args=tuple(rs.ref_args),
            namespaced=rs.namespaced,
            cluster_admin_only=rs.cluster_admin_only,
            promql_args=tuple(rs.promql_args),
            fan_out=rs.fan_out,
        )
    return rules


class ScopedMcpClient:
    """Use as ``async with ScopedMcpClient(server, scope, cluster=..., user=...) as c:``.

    ``c.tools`` lists what this caller may use; ``await c.call(tool, args)`` returns a
    ``ToolResult``. ``on_audit`` (sync or async) receives a ``ToolAuditEvent`` per call.
    ``headers`` are sent with every HTTP request (``self_authorized`` servers also get
    ``X-Remote-User`` — the authenticated ``user``, never anything from arguments; with no user
    every call is refused). ``max_result_bytes`` overrides the server's ``filter_bytes``: larger
    results are withheld (fail closed). ``max_result_chars`` caps ``text`` (what a model reads).
    ``resolver`` resolves IPs for the filter (default: ``current_resolver()`` at call time).
    ``is_global``: a namespace-agnostic server (no namespace rules, no result filter).
    ``auth``: signs every HTTP request (``sleuth_common.identity.AssertionAuth`` for servers with
    ``identity: true``; such a server without one is unavailable, never called anonymously).

    The call path (the single choke point, DESIGN §2): allow_tools → identity → JSON schema →
    namespace rules / cluster-admin-only / PromQL pinning → (fan-out over the caller's
    namespaces) → server → markers stripped → filter (IPs resolved on demand) → redaction → cap.
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
        max_result_bytes: int | None = None,
        max_result_chars: int | None = 40_000,
        resolver: IpResolver | None = None,
        is_global: bool = False,
        auth: httpx2.Auth | None = None,
        inventory: InventoryProvider | None = None,
    ) -> None:
        if max_result_bytes is not None:
            server = server.model_copy(update={"filter_bytes": max_result_bytes})
        self.server = server
        self.scope = scope
        self.cluster = cluster
        self.user = user
        self.is_global = is_global
        self.rules = rules_for_server(server, rules)
        if is_global:
            self.rules.default = _GLOBAL_RULE
            self.rules.rules = {k: v for k, v in self.rules.rules.items() if k in server.tool_rules}
        self.on_audit = on_audit
        self.connect_timeout = connect_timeout
        self.max_result_bytes = server.filter_bytes
        self.max_result_chars = max_result_chars
        self.resolver = resolver
        self._auth = auth
        self.inventory = inventory
        self._names_task: asyncio.Task[None] | None = None
        # Identity headers come only from the authenticated caller, never from tool arguments
        # or caller-supplied headers.
        self._headers = {k: v for k, v in (headers or {}).items() if k.lower() != "x-remote-user"}
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
            observe_connect(self.cluster, self.server.name, self._error)
            return False
        observe_connect(self.cluster, self.server.name, "")
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
        if self.server.identity and self._auth is None:
            self._error = (
                f"unavailable: {self.server.name} reads as the caller and needs a signed identity; "
                "no signing key is configured (identity.signing_key_file)"
            )
            self._ready.set()
            return
        try:
            async with httpx2.AsyncClient(headers=self._headers, timeout=timeout, auth=self._auth,
                                          event_hooks=http_hooks()) as http:
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
                learned = ToolRule.from_tool(tool.input_schema, meta, tool.description)
                if self.is_global:
                    learned = dataclasses.replace(_GLOBAL_RULE, cluster_admin_only=learned.cluster_admin_only)
                self.rules.learn(tool.name, learned)
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
        # One span per call (the MCP SDK adds one per request sent); never the arguments or output.
        with internal_span(f"execute_tool {tool[:80]}", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool[:80],
            "sleuth.mcp.server": self.server.name, "sleuth.cluster": self.cluster,
        }) as span:
            result = await self._call(tool, args, timeout)
            span.set_attribute("sleuth.tool.status", result.status)
            span.set_attribute("sleuth.tool.calls", result.calls)
        ms = (time.monotonic() - started) * 1000
        result = dataclasses.replace(result, duration_ms=ms)
        await self._audit(result)
        observe_call(result, listed=tool in self._listed)
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
            return res("denied", error=f"{tool} is not enabled on {self.server.name}", reason="not_enabled")
        if self.server.self_authorized and not self.user:
            return res(
                "denied",
                error=f"{self.server.name} acts as the caller and needs an authenticated identity; none was given",
                reason="no_identity",
            )
        info = self._listed.get(tool)
        prep = prepare_call(
            tool,
            args,
            self.scope,
            self.rules,
            schema=info.input_schema if info is not None else None,
            max_fan_out=self.server.max_fan_out,
        )
        if prep.refusal is not None:
            return res("denied", error=prep.refusal.message, reason=prep.refusal.reason)
        await self._foreign_names()
        sent = prep.args
        client = self._client
        if client is None:
            return res("error", error=self._error or f"unavailable: {self.server.name} is not connected",
                       reason="unavailable")
        if self._listed and tool not in self._listed:
            return res("error", error=f"{self.server.name} has no tool {tool}", reason="unknown_tool")
        limit = timeout if timeout is not None else self.server.timeout
        calls = 1
        if prep.fan_out:
            calls = len(prep.fan_out)
            answers = await asyncio.gather(
                *(self._send(client, tool, {**sent, prep.namespace_arg: ns}, limit) for ns in prep.fan_out)
            )
            parts = list(zip(prep.fan_out, answers, strict=True))
            merged = await _off_loop(sum(len(a[0]) for a in answers), self.server.filter_timeout, _merge, parts)
            if isinstance(merged, _Unchecked):
                return res("withheld", error=merged.message.format(scope=self.scope.describe()),
                           reason=merged.code, calls=calls)
            text, failure = merged
        else:
            text, failure = await self._send(client, tool, sent, limit)
        if failure is not None:
            kind, message = failure
            if kind == "unavailable":
                return res("error", error=message, reason="unavailable", calls=calls)
            # The arguments were in scope, so the server's own error is about the caller's
            # namespaces; still cluster text: markers stripped, credentials redacted.
            shown, _n = redact_text(strip_markers(message))
            return res("error", error=_short(shown) or f"{tool} failed on {self.server.name}",
                       reason="server_error", server_error=True, calls=calls)
        scope = _CLUSTER_WIDE if (self.server.unscoped or self.is_global) else self.scope
        # A self-authorized server scoped the call to the caller's own identity, so its text may
        # pass; its structured results are still filtered (defence in depth).
        pinned = prep.pinned or self.server.self_authorized
        # The namespaces the arguments pinned the call to: records naming none belong to them.
        pins = tuple(prep.fan_out) or (
            tuple(namespaces_in_arguments(sent, self.rules.rule_for(tool))) if prep.pinned else ()
        )
        outcome = await self._filter(text, scope, pinned, pins=pins)
        if outcome.unresolved_ips:
            resolver = self.resolver or current_resolver()
            if resolver is not None:
                ips = await _resolve(resolver, self.cluster, sorted(outcome.unresolved_ips))
                if ips:
                    outcome = await self._filter(text, scope, pinned, ips, pins=pins)
        if outcome.outcome == "withheld":
            return res("withheld", error=outcome.reason, reason=_withheld_code(outcome), calls=calls)
        shown, cut = cap_text(outcome.text, self.max_result_chars)
        return res(
            "ok", data=outcome.data, text=shown, removed=outcome.removed, redacted=outcome.redacted,
            cut=cut, calls=calls,
        )

    async def _foreign_names(self) -> None:
        """Attach the index of other namespaces' object names to the scope once (the filter
        withholds kept text that names them). Shared by concurrent first calls."""
        if self._names_task is None:
            self._names_task = asyncio.create_task(self._load_names())
        await asyncio.shield(self._names_task)

    async def _load_names(self) -> None:
        scope = self.scope
        if scope.cluster_wide or scope.foreign_names is not None or self.server.unscoped or self.is_global:
            return
        provider = self.inventory or current_inventory()
        if provider is None:
            return
        try:
            inventory = await provider(self.cluster)
        except Exception:  # a provider is an edge (the bus): no index, namespace names still caught
            log.warning("names inventory unavailable", exc_info=True)
            return
        if inventory:
            key = (id(inventory), scope.namespaces)
            names = _NAME_INDEXES.get(key)
            if names is None or names[0] is not inventory:
                built = await asyncio.to_thread(ForeignNames.build, inventory, scope.namespaces)
                if len(_NAME_INDEXES) >= 64:
                    _NAME_INDEXES.clear()
                names = _NAME_INDEXES[key] = (inventory, built)
            self.scope = dataclasses.replace(scope, foreign_names=names[1])

    async def _filter(
        self, text: str, scope: Scope, pinned: bool, ips: Mapping[str, str] | None = None,
        *, pins: tuple[str, ...] = (),
    ) -> FilterOutcome:
        """``filter_result``; for a result over ``OFF_LOOP_CHARS`` in a worker thread, waited for
        at most ``filter_timeout`` seconds. Not checked in time, or not at all: withheld."""
        outcome = await _off_loop(
            len(text), self.server.filter_timeout, filter_result, text, scope,
            pinned=pinned, max_bytes=self.server.filter_bytes, ips=ips, pinned_namespaces=pins,
        )
        if isinstance(outcome, _Unchecked):
            return FilterOutcome("withheld", None, 0, outcome.message.format(scope=self.scope.describe()))
        return outcome

    async def _send(
        self, client: Client, tool: str, args: dict[str, Any], limit: float
    ) -> tuple[str, tuple[str, str] | None]:
        """One request: ``(text, None)``, or ``("", (kind, message))`` with kind ``unavailable``
        or ``server`` (the tool answered with an error)."""
        try:
            raw = await asyncio.wait_for(client.call_tool(tool, args, read_timeout_seconds=limit), limit + 0.5)
        except TimeoutError:
            return "", ("unavailable", f"unavailable: {self.server.name} did not answer {tool} within {limit:g}s")
        except Exception as exc:  # a remote failure of any kind is a result, not an exception
            return "", ("unavailable", f"unavailable: {self.server.name}: {_describe(exc)}")
        text = _text_of(raw)
        if raw.is_error:
            return "", ("server", text)
        return text, None

    async def _audit(self, result: ToolResult) -> None:
        if self.on_audit is None:
            return
        event = ToolAuditEvent(
            self.user,
            self.cluster,
            self.server.name,
            result.tool,
            result.audit_outcome,
            result.removed,
            result.duration_ms,
            result.reason,
            redacted=result.redacted,
            cut=result.cut,
            calls=result.calls,
        )
        try:
            maybe = self.on_audit(event)
            if inspect.isawaitable(maybe):
                await maybe
        except Exception:  # an audit sink must never break a tool call
            log.exception("audit callback failed")


def _text_of(raw: Any) -> str:
    parts = [getattr(c, "text", "") for c in (raw.content or []) if getattr(c, "type", "") == "text"]
    parts = [p for p in parts if p]
    if len(parts) > 1:
        # A server returning a list sends one JSON block per item: keep it one JSON list, so the
        # filter judges each item (joined as text it would only be judged as a whole).
        try:
            return json.dumps([json.loads(p) for p in parts])
        except (ValueError, RecursionError):  # not JSON, or too deep to re-encode: joined as text
            pass
    text = "\n".join(parts)
    if not text and raw.structured_content is not None:
        text = json.dumps(raw.structured_content)
    return text


async def _resolve(resolver: IpResolver, cluster: str, ips: list[str]) -> dict[str, str]:
    try:
        got = await resolver(cluster, ips)
    except Exception:  # a resolver is an edge (the bus): unresolved, so the result stays withheld
        log.warning("IP resolver failed", exc_info=True)
        return {}
    return {str(k): str(v) for k, v in (got or {}).items() if v}


@dataclasses.dataclass(frozen=True)
class _Unchecked:
    """A result that was not checked (in time, or at all): the caller withholds it."""

    code: str
    message: str


async def _off_loop(size: int, wait: float, fn: Callable[..., _T], *args: Any, **kw: Any) -> _T | _Unchecked:
    """``fn(*args, **kw)``: on the event loop when ``size`` is at most ``OFF_LOOP_CHARS``, else in a
    worker thread waited for at most ``wait`` seconds. ``_Unchecked`` when it took longer or
    raised. A thread cannot be stopped: the parser's limits bound its work, the timeout only how
    long the caller waits."""
    try:
        if size <= OFF_LOOP_CHARS:
            return fn(*args, **kw)
        return await asyncio.wait_for(asyncio.to_thread(fn, *args, **kw), wait)
    except TimeoutError:
        log.warning("checking a tool result took longer than %gs; withheld", wait, extra={"chars": size})
        return _Unchecked("too_slow", TOO_SLOW_MESSAGE)
    except Exception as exc:  # the filter promises never to raise; if it does, fail closed
        log.error("checking a tool result failed (%s); withheld", type(exc).__name__, extra={"chars": size})
        return _Unchecked("unchecked", UNCHECKED_MESSAGE)


def _withheld_code(outcome: FilterOutcome) -> str:
    if outcome.unresolved_ips:
        return "unresolved_ips"
    if outcome.reason.startswith(TOO_SLOW_MESSAGE[:40]):
        return "too_slow"
    if outcome.reason.startswith(UNCHECKED_MESSAGE[:40]):
        return "unchecked"
    if outcome.reason.startswith("This result was withheld: it is larger"):
        return "too_large"
    if outcome.structured:
        return "foreign_document"
    return "unpinned_text"


def _merge(parts: list[tuple[str, tuple[str, tuple[str, str] | None]]]) -> tuple[str, tuple[str, str] | None]:
    """Merge the answers of a call fanned out over namespaces. Failures in some namespaces
    (typically "not found") are dropped when another namespace answered."""
    good = [(ns, text) for ns, (text, failure) in parts if failure is None]
    if not good:
        return "", parts[0][1][1]
    parsed = [(ns, text, *parse_result(text)) for ns, text in good]
    if all(structured for _ns, _t, _d, structured in parsed):
        values = [data for _ns, _t, data, _s in parsed]
        return json.dumps(_merge_values(values), ensure_ascii=False, default=str), None
    if len(good) == 1:
        return good[0][1], None
    return "\n".join(f"# namespace {ns}\n{text}" for ns, text in good), None


def _merge_values(values: list[Any]) -> Any:
    if all(isinstance(v, list) for v in values):
        return [x for v in values for x in v]
    if all(isinstance(v, dict) for v in values):
        merged: dict[str, Any] = {}
        for v in values:
            for k, x in v.items():
                if k in merged and isinstance(merged[k], list) and isinstance(x, list):
                    merged[k] = merged[k] + x
                elif k in merged and isinstance(merged[k], int | float) and isinstance(x, int | float) \
                        and not isinstance(x, bool) and k in ("count", "total", "removed"):
                    merged[k] = merged[k] + x
                else:
                    merged.setdefault(k, x)
        return merged
    return values


def _short(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + "…"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return _short(f"{type(exc).__name__}: {exc}".rstrip(": "))
