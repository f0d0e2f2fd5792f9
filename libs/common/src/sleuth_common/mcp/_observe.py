"""How a caller counts its tool calls: a ``ToolObserver`` set for the current context
(``use_tool_observer``, like ``use_resolver``) sees every finished call and every connection
attempt of the ``ScopedMcpClient``s made in it, and ``error_kind`` sorts a failure into a few
bounded kinds (metric labels: never a name, a namespace or any text of the server's).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import re
from collections.abc import Iterator
from typing import Literal, Protocol, get_args

from sleuth_common.mcp._result import ToolResult

__all__ = [
    "TOOL_ERROR_KINDS",
    "ToolErrorKind",
    "ToolObserver",
    "connect_error_kind",
    "current_tool_observer",
    "error_kind",
    "use_tool_observer",
]

log = logging.getLogger(__name__)

ToolErrorKind = Literal["timeout", "unreachable", "auth", "not_found", "bad_args", "server_error"]
"""``timeout``: the server (or the cluster API behind it) did not answer in time; ``unreachable``:
it could not be reached; ``auth``: it refused Sleuth's credentials (or Sleuth has none to send);
``not_found``: what the call named does not exist; ``bad_args``: arguments the schema, the server
or the tool list refused; ``server_error``: anything else the server answered with an error."""
TOOL_ERROR_KINDS: tuple[ToolErrorKind, ...] = get_args(ToolErrorKind)

_BAD_ARGS_REFUSALS = frozenset({"invalid_arguments", "namespace_required", "not_enabled"})
"""Refusals before sending that are the caller's (a model's) mistake, not an access decision."""
_CODE = re.compile(r'"code"\s*:\s*(\d{1,3})\b')
_HTTP_AUTH = re.compile(r"\b(401|403)\b|[Uu]nauthori[sz]ed|[Ff]orbidden")


def _server_code(text: str) -> int | None:
    """The status code in a server's error (kube-mcp answers ``{"error", "code", "reason"}``)."""
    try:
        doc = json.loads(text)
    except ValueError:
        match = _CODE.search(text)  # the message may have been cut to its first characters
        return int(match.group(1)) if match else None
    code = doc.get("code") if isinstance(doc, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def connect_error_kind(error: str) -> ToolErrorKind:
    """The kind of a server's ``unavailable: ...`` message (a failed connection or request)."""
    if "did not answer" in error:
        return "timeout"
    if "signed identity" in error or _HTTP_AUTH.search(error):
        return "auth"
    return "unreachable"


def error_kind(result: ToolResult) -> ToolErrorKind | None:
    """Why ``result`` failed, or ``None`` when it did not: an answer (``ok``), a result withheld
    from the caller and a refusal of what the caller may not read are decisions, not failures."""
    if result.status == "denied":
        return "bad_args" if result.reason in _BAD_ARGS_REFUSALS else None
    if result.status != "error":
        return None
    if result.reason == "unknown_tool":
        return "bad_args"
    if not result.server_error:
        return connect_error_kind(result.error)
    code = _server_code(result.error)
    if code is None:
        return "server_error"
    if code == 0:
        return "unreachable"  # kube-mcp: the cluster's API did not answer
    if code in (401, 403):
        return "auth"
    if code in (404, 410):
        return "not_found"
    if code in (400, 422):
        return "bad_args"
    if code in (408, 504):
        return "timeout"
    return "server_error"


class ToolObserver(Protocol):
    """Told about each call and connection (for metrics); must not raise, and is not awaited."""

    def called(self, result: ToolResult, *, listed: bool) -> None:
        """A call finished (``listed``: the server lists ``result.tool``; otherwise the name is
        the caller's own and must not become a label)."""

    def connected(self, cluster: str, server: str, error: ToolErrorKind | None) -> None:
        """A connection attempt to ``server`` ended (``error`` ``None``: connected)."""


_OBSERVER: contextvars.ContextVar[ToolObserver | None] = contextvars.ContextVar("sleuth_tool_observer", default=None)


def current_tool_observer() -> ToolObserver | None:
    return _OBSERVER.get()


@contextlib.contextmanager
def use_tool_observer(observer: ToolObserver | None) -> Iterator[None]:
    """Let ``observer`` see the calls of every client used in this context."""
    token = _OBSERVER.set(observer)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


def observe_call(result: ToolResult, *, listed: bool) -> None:
    """Tell the current observer about a finished call (never raises)."""
    observer = _OBSERVER.get()
    if observer is not None:
        try:
            observer.called(result, listed=listed)
        except Exception:  # an observer (metrics) must never break a tool call
            log.exception("tool observer failed")


def observe_connect(cluster: str, server: str, error: str) -> None:
    """Tell the current observer how a connection attempt ended (``error`` "" = connected)."""
    observer = _OBSERVER.get()
    if observer is not None:
        try:
            observer.connected(cluster, server, connect_error_kind(error) if error else None)
        except Exception:  # an observer (metrics) must never break a connection
            log.exception("tool observer failed")
