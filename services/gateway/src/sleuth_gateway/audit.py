"""The gateway's audit events (``sleuth_common.messages.audit``): sign-ins, refusals, rate limits
and commands, from every entry point. Who, where, a reason code and counts; never a token, the
text of a question or an answer."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sleuth_common.messages.audit import AuditBase, Authenticated, CommandRun, Decision, Entry, RateLimited
from sleuth_gateway.errors import ApiError, Forbidden, Unauthorized
from sleuth_gateway.errors import RateLimited as RateLimitedError

if TYPE_CHECKING:
    from sleuth_gateway.runtime import Gateway

__all__ = ["code", "command_run", "entry_of_path", "refusal", "signed_in"]

_SURFACE_ENTRY: dict[str, Entry] = {"api": "api", "web": "web", "mcp": "mcp", "mattermost": "mattermost"}


def code(value: str) -> str:
    """``value`` as an audit reason code (``DependencyUnavailable`` → ``dependency_unavailable``)."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", value).lower()
    return re.sub(r"[^a-z0-9_.:-]+", "_", snake).strip("_")[:64]


def entry_of_path(path: str) -> Entry:
    """The entry point of an HTTP request: the MCP endpoint, the HTTP API, or the web chat."""
    if path.startswith("/mcp"):
        return "mcp"
    return "api" if path.startswith("/v1/") else "web"


def _emit(gw: Gateway, event: AuditBase) -> None:
    gw.audit.emit_nowait(event)


def signed_in(gw: Gateway, user: str, groups: tuple[str, ...], entry: Entry, *, request_id: str = "",
              chat_user_id: str = "") -> None:
    """A caller proved who they are (a token looked up, a chat user mapped)."""
    _emit(gw, Authenticated(user=user, groups=groups, entry=entry, request_id=request_id, decision="allowed",
                            chat_user_id=chat_user_id, counts={"groups": len(groups)}))


def refusal(gw: Gateway, exc: ApiError, *, entry: Entry, user: str = "", request_id: str = "") -> None:
    """A refusal the caller was told about: a sign-in refused (401/403/503 while authenticating) or
    a limit (429). Other errors (a bad body, a timeout) are not decisions about the caller."""
    if isinstance(exc, RateLimitedError):
        _emit(gw, RateLimited(user=user, entry=entry, request_id=request_id, reason=code(exc.reason or "rate_limited"),
                              counts={"retry_after_s": int(exc.extra.get("retry_after", 0))}))
    elif isinstance(exc, Unauthorized):
        why = exc.reason or ("missing_token" if exc.message.startswith("missing") else
                             "malformed_header" if exc.message.startswith("malformed") else "invalid_token")
        _emit(gw, Authenticated(user=user, entry=entry, request_id=request_id, decision="refused", reason=code(why)))
    elif isinstance(exc, Forbidden) and exc.reason == "identity":
        _emit(gw, Authenticated(user=user, entry=entry, request_id=request_id, decision="refused",
                                reason="service_identity"))


def command_run(gw: Gateway, user: str, groups: tuple[str, ...], command: str, surface: str, outcome: str, *,
                channel: bool) -> None:
    """A chat command ran (``outcome`` ok) or was refused (off, private_only, refused, an error)."""
    decision: Decision = "allowed" if outcome == "ok" else "error" if outcome == "error" else "refused"
    _emit(gw, CommandRun(user=user, groups=groups, entry=_SURFACE_ENTRY.get(surface, ""), command=code(command),
                         decision=decision, reason="" if outcome == "ok" else code(outcome),
                         counts={"in_channel": int(channel)}))
