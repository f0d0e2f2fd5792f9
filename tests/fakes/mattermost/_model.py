"""What goes over the wire: ids, JSON as Go writes it, AppErrors, and the records tests hold."""

from __future__ import annotations

import base64
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, TypeGuard

MAX_POST_RUNES = 16383  # model.PostMessageMaxRunesV2, the server's default max_post_size
API = "/api/v4"
PER_PAGE_DEFAULT, PER_PAGE_MAX = 60, 200  # web/params.go
GROUP_MIN_USERS, GROUP_MAX_USERS = 3, 8  # model.ChannelGroupMinUsers / ChannelGroupMaxUsers
SYSTEM_USER, SYSTEM_ADMIN = "system_user", "system_admin system_user"

_MESSAGES = {  # en.json wording for the errors this fake raises
    "api.context.session_expired.app_error": "Invalid or expired session, please login again.",
    "api.context.permissions.app_error": "You do not have the appropriate permissions.",
    "api.context.404.app_error": "Sorry, we could not find the page.",
    "api.context.invalid_url_param.app_error": "Invalid or missing {name} parameter in request URL.",
    "api.context.invalid_body_param.app_error": "Invalid or missing {name} in request body.",
    "model.post.is_valid.message_length.app_error": (
        "Post Message property is longer than the maximum permitted length."
    ),
    "api.post.create_post.root_id.app_error": "Invalid RootId parameter.",
    "api.post.create_post.channel_root_id.app_error": "Invalid ChannelId for RootId parameter.",
    "app.channel.get.existing.app_error": "Unable to find the existing channel.",
    "app.user.missing_account.const": "Unable to find the user.",
    "app.post.get.app_error": "Unable to get the post.",
    "api.web_socket_router.no_action.app_error": "No websocket action.",
    "api.web_socket_router.bad_seq.app_error": "Invalid sequence for WebSocket message.",
    "api.web_socket_router.bad_action.app_error": "Unknown WebSocket action.",
    "api.web_socket_router.not_authenticated.app_error": "Could not authenticate WebSocket connection",
    "api.websocket_handler.invalid_param.app_error": "Invalid {name} parameter.",
}
PROXY_503 = (
    "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
    "<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n</body>\r\n</html>\r\n"
)
_ID_ALPHABET = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"ybndrfg8ejkmcpqxot1uwisza345h769")
_GO_ESCAPES = (
    ("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"),
)
_HASHTAG = re.compile(r"(?<![\w#])#[^\W\d_][\w.\-]*[^\W_.\-]")


def hashtags(message: str) -> str:
    return " ".join(dict.fromkeys(_HASHTAG.findall(message)))


def new_id() -> str:
    """model.NewId(): a random UUID in Mattermost's base32 alphabet, 26 characters."""
    return base64.b32encode(uuid.uuid4().bytes).translate(_ID_ALPHABET).decode().rstrip("=")


def valid_id(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and len(value) == 26 and value.isalnum()


def go_json(value: Any) -> str:
    """JSON as Go's encoding/json writes it: compact UTF-8 with <, > and & escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in _GO_ESCAPES:
        text = text.replace(char, escaped)
    return text


class MattermostError(Exception):
    """An AppError as the server returns it."""

    def __init__(self, status: int, error_id: str, **params: str) -> None:
        self.status, self.error_id = status, error_id
        self.message = _MESSAGES.get(error_id, error_id).format(**params)
        super().__init__(f"{status} {error_id}: {self.message}")

    def body(self, request_id: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.error_id, "message": self.message, "detailed_error": ""}
        if request_id:
            out["request_id"] = request_id
        out["status_code"] = self.status
        return out


@dataclass(frozen=True)
class User:
    """A snapshot: ``mm.user(u)`` returns the current one after ``set_email`` or ``deactivate``."""

    id: str
    username: str
    email: str
    first_name: str
    last_name: str
    is_bot: bool
    create_at: int
    token: str
    """The personal access token made with the user (``add_token`` makes more)."""
    update_at: int = 0
    delete_at: int = 0
    """Set by ``deactivate``: the user's tokens stop working, as their sessions are revoked."""
    roles: str = SYSTEM_USER

    @property
    def is_admin(self) -> bool:
        return "system_admin" in self.roles.split()


@dataclass(frozen=True)
class Channel:
    id: str
    name: str
    display_name: str
    type: str
    team_id: str
    create_at: int
    creator_id: str


@dataclass
class Member:
    """One model.ChannelMember row (mutable: counts move as people post and read)."""

    user_id: str
    scheme_admin: bool
    last_update_at: int
    last_viewed_at: int = 0
    msg_count: int = 0
    msg_count_root: int = 0
    mention_count: int = 0
    mention_count_root: int = 0


@dataclass(frozen=True)
class Recorded:
    """One HTTP request (or WebSocket upgrade) as it reached the server."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    raw: str
    body: Any

    @property
    def token(self) -> str:
        return bearer(self.headers)


@dataclass(frozen=True)
class Typing:
    user_id: str
    channel_id: str
    parent_id: str
    via: str
    """``ws`` (the user_typing action) or ``rest`` (POST /users/{id}/typing)."""


@dataclass(frozen=True)
class WsReceived:
    """One message a client sent over a WebSocket (user_id is "" before it authenticated)."""

    user_id: str
    message: Any


def broadcast(
    *, user_id: str = "", channel_id: str = "", omit_users: dict[str, bool] | None = None
) -> dict[str, Any]:
    """model.WebsocketBroadcast as a client sees it (the hook fields are never sent)."""
    return {"omit_users": omit_users, "user_id": user_id, "channel_id": channel_id, "team_id": "",
            "connection_id": "", "omit_connection_id": ""}


def bearer(headers: Any) -> str:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() in ("bearer", "token") else ""


def id_of(value: Any) -> str:
    return value if isinstance(value, str) else value.id
