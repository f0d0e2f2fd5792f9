"""A fake Mattermost server speaking the real REST v4 and WebSocket APIs, for tests: a bot
adapter's own HTTP and WebSocket code runs against it over real sockets on 127.0.0.1.

Shapes and behaviour follow mattermost-server (model/post.go, model/post_list.go, model/user.go,
model/channel.go, model/websocket_message.go, app/notification.go, app/platform/web_conn.go,
web_hub.go, websocket_router.go, wsapi/user.go, api4/websocket.go, web/handlers.go):

- JSON is written as Go writes it: struct fields in declaration order, map keys sorted, ``<``,
  ``>`` and ``&`` escaped; errors are AppErrors (id, message, detailed_error wiped, request_id,
  status_code); ids are 26-character NewId()s; a personal access token is the bearer token.
- A WebSocket authenticates with ``Authorization: Bearer`` on the upgrade (a bad token there
  still upgrades, unauthenticated, as the real server does) or with an
  ``authentication_challenge`` action. Then ``hello`` is sent (seq 0) and, for a challenge,
  ``{"status": "OK", "seq_reply": n}`` after it (Mattermost queues hello when the connection is
  registered, before the reply). A bad challenge token closes the socket with no reply; a socket
  still unauthenticated after ``auth_timeout`` (5 s, like the server's auth ticker) is closed.
- ``posted`` goes to every connection of every channel member, the poster included, with
  ``data.post`` a JSON string and ``mentions`` — as the add_mentions broadcast hook does it — a
  JSON list holding only the receiving user's id, present only when that user is mentioned
  (``@username``, ``@channel``/``@all``/``@here``, or the other side of a DM). ``seq`` counts
  events per connection; replies (``seq_reply``) take no seq.
- A post by a bot account gets ``props.from_bot = "true"``; a reply bumps its root's update_at;
  a repeated ``pending_post_id`` returns the first post again without a second event.

Test controls (thread-safe; call them from the test while the adapter runs):

    with FakeMattermost() as mm:                        # or, in a fixture: yield from serve()
        bot = mm.add_user("sleuth", is_bot=True)        # bot.token: its personal access token
        alice = mm.add_user("alice")
        town = mm.add_channel("town-square", members=[bot, alice])
        dm = mm.dm_channel(alice, bot)
        mm.post_as(alice, town, "@sleuth what is failing in team-a?")   # a human typing
        replies = await mm.wait_for_async(lambda: mm.posts_by(bot))     # wait_for() in sync tests
        mm.requests, mm.calls("POST", "/api/v4/posts")  # every request: method, path, headers, body
        mm.typing_events, mm.ws_received, mm.connected(bot)
        mm.drop_connections(); mm.refuse_connections(True); mm.revoke_token(bot.token)
        mm.set_down(True)                # 503 from "the proxy"; set_down(True, refuse=True): refused

Not modelled: files, reactions, deletes, group channels, collapsed-threads events
(``thread_updated``), statuses, ``posted_ack``, reliable-reconnect queues (a reconnect is always
a new connection: hello again, seq from 0), before/after paging of channel posts (without
``since`` the newest page is returned, without the rest of its threads), and permissions beyond
channel membership (members may post; anyone in the team may read or post in an open channel).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = [
    "Channel", "FakeMattermost", "MattermostError", "Recorded", "Typing", "User", "WsReceived", "serve",
]

T = TypeVar("T")
MAX_POST_RUNES = 16383  # model.PostMessageMaxRunesV2, the server's default max_post_size
API = "/api/v4"

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
_PROXY_503 = (
    "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
    "<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n</body>\r\n</html>\r\n"
)
_ID_ALPHABET = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"ybndrfg8ejkmcpqxot1uwisza345h769")
_WORD = re.compile(r"[\w:.\-@]+")  # FieldsFunc in getExplicitMentions: letters, digits and :.-_@
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)  # code is never a mention
_GO_ESCAPES = (
    ("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"),
)
_HASHTAG = re.compile(r"(?<![\w#])#[^\W\d_][\w.\-]*[^\W_.\-]")


def _hashtags(message: str) -> str:
    return " ".join(dict.fromkeys(_HASHTAG.findall(message)))


def new_id() -> str:
    """model.NewId(): a random UUID in Mattermost's base32 alphabet, 26 characters."""
    return base64.b32encode(uuid.uuid4().bytes).translate(_ID_ALPHABET).decode().rstrip("=")


def _valid_id(value: Any) -> TypeGuard[str]:
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
    id: str
    username: str
    email: str
    first_name: str
    last_name: str
    is_bot: bool
    create_at: int
    token: str
    """The personal access token made with the user (``add_token`` makes more)."""


@dataclass(frozen=True)
class Channel:
    id: str
    name: str
    display_name: str
    type: str
    team_id: str
    create_at: int
    creator_id: str


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
        return _bearer(self.headers)


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


@dataclass(eq=False)
class _Conn:
    ws: WebSocket
    loop: asyncio.AbstractEventLoop
    abort: Callable[[], None]
    connection_id: str = field(default_factory=new_id)
    user_id: str = ""
    token: str = ""
    seq: int = 0
    outbox: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)

    def send(self, message: dict[str, Any]) -> None:
        """Queue a message for the write pump, from any thread."""
        try:
            self.loop.call_soon_threadsafe(self.outbox.put_nowait, message)
        except RuntimeError:  # the server loop is gone: so is the connection
            pass

    def cut(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.abort)
        except RuntimeError:
            pass


class _AbortableProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, plus a way to cut a connection without a close frame, as a
    crashed or restarted server does (the client sees 1006)."""

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:
            scope["extensions"]["sleuth.abort"] = self.transport.abort

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            self.handshake_complete = True  # a denial ends the handshake (else uvicorn logs an error)


class _Server(uvicorn.Server):
    """uvicorn's server, stopped at once: no polling tick and no grace period (a fake has no
    response worth finishing), so teardown and ``set_down(refuse=True)`` take milliseconds."""

    _loop: asyncio.AbstractEventLoop | None = None
    _exit: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._exit = asyncio.get_running_loop(), asyncio.Event()
        if not self.should_exit:
            await self._exit.wait()

    def request_exit(self) -> None:
        """From any thread."""
        self.should_exit = True
        if self._loop is not None and self._exit is not None:
            self._loop.call_soon_threadsafe(self._exit.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()


def _broadcast(
    *, user_id: str = "", channel_id: str = "", omit_users: dict[str, bool] | None = None
) -> dict[str, Any]:
    """model.WebsocketBroadcast as a client sees it (the hook fields are never sent)."""
    return {"omit_users": omit_users, "user_id": user_id, "channel_id": channel_id, "team_id": "",
            "connection_id": "", "omit_connection_id": ""}


def _bearer(headers: Any) -> str:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() in ("bearer", "token") else ""


@dataclass
class _Req:
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    user: User | None

    @property
    def me(self) -> User:
        assert self.user is not None, "an endpoint with auth=False has no session"
        return self.user


class FakeMattermost:
    def __init__(
        self,
        *,
        team_name: str = "sleuth",
        team_display_name: str = "Sleuth",
        max_post_size: int = MAX_POST_RUNES,
        server_version: str = "10.11.0",
        auth_timeout: float = 5.0,
        host: str = "127.0.0.1",
    ) -> None:
        self.max_post_size = max_post_size
        self.auth_timeout = auth_timeout
        self.host = host
        self.version = server_version
        digest = hashlib.md5(server_version.encode()).hexdigest()
        self.server_version = f"{server_version}.{server_version}.{digest}.false"  # as hello sends it
        self.requests: list[Recorded] = []
        self.typing_events: list[Typing] = []
        self.ws_received: list[WsReceived] = []
        self._lock = threading.RLock()
        self._last_ms = 0
        self.team: dict[str, Any] = self._team_json(team_name, team_display_name)
        self._users: dict[str, User] = {}
        self._tokens: dict[str, str] = {}  # token -> user id
        self._channels: dict[str, Channel] = {}
        self._members: dict[str, set[str]] = {}
        self._posts: dict[str, dict[str, Any]] = {}  # creation order
        self._pending: dict[str, str] = {}  # pending_post_id -> post id
        self._sockets: set[_Conn] = set()
        self._down = False
        self._refusing = False
        self._port = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._app = self._build_app()

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self._port}{API}/websocket"

    def start(self, timeout: float = 10.0) -> FakeMattermost:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited: no 40 ms Nagle stalls
        sock.bind((self.host, self._port))
        sock.listen(128)
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws=_AbortableProtocol,
            ws_ping_interval=None,
        )
        server = _Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"fake-mattermost-{self._port}", daemon=True
        )
        self._server, self._thread, self._sock = server, thread, sock
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake Mattermost server did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self.drop_connections()
        if self._server is not None:
            self._server.request_exit()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()
        self._server = self._thread = self._sock = None

    def __enter__(self) -> FakeMattermost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- state the tests set up -------------------------------------------------------------
    def add_user(
        self,
        username: str,
        *,
        first_name: str = "",
        last_name: str = "",
        email: str = "",
        is_bot: bool = False,
    ) -> User:
        with self._lock:
            name = username.lower()
            user = User(
                id=new_id(),
                username=name,
                email=email or f"{name}@example.com",
                first_name=first_name,
                last_name=last_name,
                is_bot=is_bot,
                create_at=self._now(),
                token=new_id(),
            )
            self._users[user.id] = user
            self._tokens[user.token] = user.id
            return user

    def add_token(self, user: User | str) -> str:
        with self._lock:
            token = new_id()
            self._tokens[token] = _id(user)
            return token

    def revoke_token(self, token: str) -> None:
        """REST calls with it answer 401; sockets opened with it stay open but, as on the real
        server, receive no further events."""
        with self._lock:
            self._tokens.pop(token, None)

    def add_channel(
        self,
        name: str,
        *,
        display_name: str | None = None,
        type: str = "O",
        members: Iterable[User | str] = (),
    ) -> Channel:
        ids = [_id(m) for m in members]
        with self._lock:
            if display_name is None:
                display_name = name.replace("-", " ").title()
            channel = Channel(
                id=new_id(),
                name=name,
                display_name=display_name,
                type=type,
                team_id="" if type == "D" else self.team["id"],
                create_at=self._now(),
                creator_id=ids[0] if ids else "",
            )
            self._channels[channel.id] = channel
            self._members[channel.id] = set(ids)
            return channel

    def add_member(self, channel: Channel | str, user: User | str) -> None:
        with self._lock:
            self._members[_id(channel)].add(_id(user))

    def dm_channel(self, a: User | str, b: User | str) -> Channel:
        """The direct channel of two users (made on first use), named ``<id>__<id>`` like the server's."""
        first, second = sorted((_id(a), _id(b)))
        name = f"{first}__{second}"
        with self._lock:
            for channel in self._channels.values():
                if channel.name == name:
                    return channel
            return self.add_channel(name, display_name="", type="D", members=[first, second])

    # -- what a human does ------------------------------------------------------------------
    def post_as(
        self,
        user: User | str,
        channel: Channel | str,
        message: str,
        root_id: str = "",
        *,
        props: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Post as the user (stored, and broadcast as ``posted``); returns the post as the API returns it."""
        return self._create_post(
            self._user(_id(user)),
            {"channel_id": _id(channel), "message": message, "root_id": root_id, "props": props or {}},
        )

    def edit_as(self, user: User | str, post_id: str, message: str) -> dict[str, Any]:
        return self._patch_post(self._user(_id(user)), post_id, {"message": message})

    # -- what the tests read back -----------------------------------------------------------
    def post(self, post_id: str) -> dict[str, Any]:
        with self._lock:
            return self._post_json(self._posts[post_id])

    def posts_by(self, user: User | str) -> list[dict[str, Any]]:
        with self._lock:
            return [self._post_json(p) for p in self._posts.values() if p["user_id"] == _id(user)]

    def posts_in(self, channel: Channel | str) -> list[dict[str, Any]]:
        with self._lock:
            return [self._post_json(p) for p in self._posts.values() if p["channel_id"] == _id(channel)]

    def calls(self, method: str, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == method and r.path == path]

    def connected(self, user: User | str | None = None) -> int:
        """Authenticated WebSocket connections (of one user, or of all)."""
        with self._lock:
            return sum(1 for c in self._sockets if c.user_id and (user is None or c.user_id == _id(user)))

    # -- faults -----------------------------------------------------------------------------
    def drop_connections(self) -> int:
        """Cut every WebSocket without a close frame; returns how many were open."""
        with self._lock:
            conns, self._sockets = list(self._sockets), set()
        for conn in conns:
            conn.cut()
        return len(conns)

    def refuse_connections(self, refuse: bool = True) -> None:
        """While True, WebSocket upgrades are answered 503 (REST keeps working)."""
        self._refusing = refuse

    def set_down(self, down: bool = True, *, refuse: bool = False) -> None:
        """Take the server down: open sockets are cut, then every request is answered 503 by
        "the proxy in front" (``refuse=False``) or the port stops listening so connections are
        refused (``refuse=True``). ``set_down(False)`` serves again on the same URL, state kept."""
        if down:
            self._down = True
            self.drop_connections()
            if refuse and self._server is not None:
                self.stop()
        else:
            self._down = False
            if self._server is None:
                self.start()

    # -- waiting ----------------------------------------------------------------------------
    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        """Poll until ``predicate()`` is truthy and return it (blocks: use wait_for_async from a
        test whose event loop also runs the code under test)."""
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"not true within {timeout}s")
            time.sleep(0.01)
        return value

    async def wait_for_async(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:  # noqa: ASYNC109
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"not true within {timeout}s")
            await asyncio.sleep(0.01)
        return value

    # -- the model --------------------------------------------------------------------------
    def _now(self) -> int:
        """Milliseconds, strictly increasing, so ``since`` queries are exact."""
        with self._lock:
            self._last_ms = max(int(time.time() * 1000), self._last_ms + 1)
            return self._last_ms

    def _user(self, user_id: str) -> User:
        user = self._users.get(user_id)
        if user is None:
            raise MattermostError(404, "app.user.missing_account.const")
        return user

    def _readable(self, user: User, channel_id: str) -> Channel:
        channel = self._channels.get(channel_id)
        if channel is None:
            raise MattermostError(404, "app.channel.get.existing.app_error")
        if user.id not in self._members[channel_id] and channel.type != "O":
            raise MattermostError(403, "api.context.permissions.app_error")
        return channel

    def _create_post(self, user: User, body: dict[str, Any]) -> dict[str, Any]:
        channel_id, root_id = body.get("channel_id") or "", body.get("root_id") or ""
        message, pending = body.get("message") or "", body.get("pending_post_id") or ""
        fields = (channel_id, root_id, message, pending)
        if not all(isinstance(f, str) for f in fields) or not isinstance(body.get("props") or {}, dict):
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="post")
        with self._lock:
            channel = self._channels.get(channel_id)  # members post; so may anyone in an open channel
            if channel is None or (user.id not in self._members[channel_id] and channel.type != "O"):
                raise MattermostError(403, "api.context.permissions.app_error")
            if pending and pending in self._pending:
                return self._post_json(self._posts[self._pending[pending]])
            root = self._posts.get(root_id) if root_id else None
            if root_id and root is None:
                raise MattermostError(400, "api.post.create_post.root_id.app_error")
            if root is not None and root["channel_id"] != channel_id:
                raise MattermostError(500, "api.post.create_post.channel_root_id.app_error")
            if root is not None and root["root_id"]:
                raise MattermostError(400, "api.post.create_post.root_id.app_error")
            if len(message) > self.max_post_size:  # utf8.RuneCountInString: code points, not bytes
                raise MattermostError(400, "model.post.is_valid.message_length.app_error")
            props = dict(body.get("props") or {})
            if user.is_bot:
                props["from_bot"] = "true"
            now = self._now()
            post: dict[str, Any] = {  # model.Post, fields in declaration order
                "id": new_id(), "create_at": now, "update_at": now, "edit_at": 0, "delete_at": 0,
                "is_pinned": False, "user_id": user.id, "channel_id": channel_id, "root_id": root_id,
                "original_id": "", "message": message, "type": "", "props": props,
                "hashtags": _hashtags(message), "file_ids": [], "pending_post_id": pending,
            }
            self._posts[post["id"]] = post
            if pending:
                self._pending[pending] = post["id"]
            if root is not None:
                root["update_at"] = now
            rendered = self._post_json(post)
            mentions = self._mentions(channel, user.id, message)
            sender = f"@{user.username}"
            data = {  # app/notification.go, SendNotifications
                "channel_display_name": sender if channel.type == "D" else channel.display_name,
                "channel_name": channel.name, "channel_type": channel.type, "post": go_json(rendered),
                "sender_name": sender, "set_online": True, "team_id": channel.team_id,
            }
        self._publish("posted", data, channel_id=channel_id, mentions=mentions)
        return rendered

    def _patch_post(self, user: User, post_id: str, patch: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            post = self._posts.get(post_id)
            if post is None:
                raise MattermostError(404, "app.post.get.app_error")
            if post["user_id"] != user.id:
                raise MattermostError(403, "api.context.permissions.app_error")
            message = patch.get("message")
            if message is not None and (not isinstance(message, str) or len(message) > self.max_post_size):
                raise MattermostError(400, "model.post.is_valid.message_length.app_error")
            now = self._now()
            if message is not None:
                post["message"], post["edit_at"] = message, now
                post["hashtags"] = _hashtags(message)
            if isinstance(patch.get("props"), dict):
                post["props"] = dict(patch["props"])
            if isinstance(patch.get("is_pinned"), bool):
                post["is_pinned"] = patch["is_pinned"]
            post["update_at"] = now
            rendered = self._post_json(post)
        self._publish("post_edited", {"post": go_json(rendered)}, channel_id=post["channel_id"])
        return rendered

    def _mentions(self, channel: Channel, sender_id: str, message: str) -> set[str]:
        """getExplicitMentions: ``@username`` of a member, ``@channel``/``@all``/``@here``, outside
        code; in a DM, the other side. The word rules are StandardMentionParser.ProcessText's."""
        members = self._members[channel.id]
        if channel.type == "D":
            return members - {sender_id}
        keywords = {"@" + self._users[m].username: {m} for m in members if m in self._users}
        keywords["@channel"] = keywords["@all"] = set(members)
        keywords["@here"] = members & {c.user_id for c in self._sockets if c.user_id}
        found: set[str] = set()

        def hit(word: str) -> bool:
            found.update(keywords.get(word.lower(), ()))
            return word.lower() in keywords

        for word in _WORD.findall(_CODE.sub(" ", message)):
            if word[0] == ":" and word[-1] == ":":  # an emoji
                continue
            word = word.lstrip(":.-_")
            if not word or hit(word):
                continue
            bare = word
            while len(bare) > 1 and bare[-1] in ".-:_":  # "@sleuth:" ends a phrase
                bare = bare[:-1]
                if hit(bare):
                    break
            else:
                if not word.startswith("@"):  # "@someone.else" names someone out of the channel
                    for piece in re.split(r"[.\-:]", word):
                        hit(piece)
        return found - {sender_id}

    def _publish(
        self,
        event: str,
        data: dict[str, Any],
        *,
        channel_id: str = "",
        omit_users: dict[str, bool] | None = None,
        mentions: Iterable[str] = (),
    ) -> None:
        """Hub broadcast: ShouldSendEvent per connection, then the add_mentions hook."""
        broadcast = _broadcast(channel_id=channel_id, omit_users=omit_users)
        mentioned = set(mentions)
        with self._lock:
            members = self._members.get(channel_id, set())
            targets = [
                c
                for c in self._sockets
                if c.user_id
                and c.token in self._tokens
                and c.user_id not in (omit_users or {})
                and (not channel_id or c.user_id in members)
            ]
        for conn in targets:
            own = dict(data)
            if conn.user_id in mentioned:
                own["mentions"] = go_json([conn.user_id])
            conn.send({"event": event, "data": dict(sorted(own.items())), "broadcast": broadcast})

    # -- JSON shapes ------------------------------------------------------------------------
    def _post_json(self, post: dict[str, Any]) -> dict[str, Any]:
        root = post["root_id"] or post["id"]
        replies = [p["create_at"] for p in self._posts.values() if p["root_id"] == root]
        out = dict(post)
        out["props"] = dict(sorted(post["props"].items()))
        out["file_ids"] = list(post["file_ids"])
        out.update(reply_count=len(replies), last_reply_at=max(replies, default=0))
        out.update(participants=None, metadata={})
        return out

    def _user_json(self, user: User, *, own: bool) -> dict[str, Any]:
        """model.User; another user's profile is sanitized (no notify_props, no last_password_update)."""
        out: dict[str, Any] = {
            "id": user.id, "create_at": user.create_at, "update_at": user.create_at, "delete_at": 0,
            "username": user.username, "auth_data": "", "auth_service": "", "email": user.email,
            "nickname": "", "first_name": user.first_name, "last_name": user.last_name, "position": "",
            "roles": "system_user",
        }
        if own:
            out["notify_props"] = {
                "channel": "true", "comments": "never", "desktop": "mention", "desktop_sound": "true",
                "email": "true", "first_name": "false", "mention_keys": "", "push": "mention",
                "push_status": "away",
            }
            out["last_password_update"] = user.create_at
        out["locale"] = "en"
        out["timezone"] = {"automaticTimezone": "", "manualTimezone": "", "useAutomaticTimezone": "true"}
        if user.is_bot:
            out["is_bot"] = True
        out["disable_welcome_email"] = False
        return out

    def _channel_json(self, channel: Channel) -> dict[str, Any]:
        posts = [p for p in self._posts.values() if p["channel_id"] == channel.id]
        roots = [p for p in posts if not p["root_id"]]
        return {  # model.Channel, the long-standing fields
            "id": channel.id, "create_at": channel.create_at, "update_at": channel.create_at, "delete_at": 0,
            "team_id": channel.team_id, "type": channel.type, "display_name": channel.display_name,
            "name": channel.name, "header": "", "purpose": "",
            "last_post_at": max((p["create_at"] for p in posts), default=0), "total_msg_count": len(posts),
            "extra_update_at": 0, "creator_id": channel.creator_id, "scheme_id": None, "props": None,
            "group_constrained": None, "shared": None, "total_msg_count_root": len(roots), "policy_id": None,
            "last_root_post_at": max((p["create_at"] for p in roots), default=0),
        }

    def _team_json(self, name: str, display_name: str) -> dict[str, Any]:
        now = self._now()
        return {  # model.Team, sanitized as a member sees it
            "id": new_id(), "create_at": now, "update_at": now, "delete_at": 0, "display_name": display_name,
            "name": name, "description": "", "email": "", "type": "O", "company_name": "",
            "allowed_domains": "", "invite_id": "", "allow_open_invite": False, "scheme_id": None,
            "group_constrained": None, "policy_id": None, "cloud_limits_archived": False,
        }

    def _post_list(self, posts: Iterable[dict[str, Any]]) -> dict[str, Any]:
        chosen = sorted(posts, key=lambda p: p["create_at"], reverse=True)
        return {  # model.PostList: order newest first, posts a Go map (keys sorted)
            "order": [p["id"] for p in chosen],
            "posts": {p["id"]: self._post_json(p) for p in sorted(chosen, key=lambda p: p["id"])},
            "next_post_id": "", "prev_post_id": "", "first_inaccessible_post_time": 0,
        }

    # -- REST -------------------------------------------------------------------------------
    def _build_app(self) -> Starlette:
        h = self._endpoint
        routes = [
            Route(f"{API}/system/ping", h(self._ping, auth=False)),
            Route(f"{API}/users/ids", h(self._users_by_ids), methods=["POST"]),
            Route(f"{API}/users/{{user_id}}/teams/{{team_id}}/channels", h(self._channels_for_user)),
            Route(f"{API}/users/{{user_id}}/teams", h(self._teams_for_user)),
            Route(f"{API}/users/{{user_id}}/typing", h(self._typing), methods=["POST"]),
            Route(f"{API}/users/{{user_id}}", h(self._get_user)),
            Route(f"{API}/channels/{{channel_id}}/posts", h(self._channel_posts)),
            Route(f"{API}/channels/{{channel_id}}", h(self._get_channel)),
            Route(f"{API}/posts", h(self._new_post), methods=["POST"]),
            Route(f"{API}/posts/{{post_id}}/patch", h(self._patch), methods=["PUT"]),
            Route(f"{API}/posts/{{post_id}}/thread", h(self._get_thread)),
            Route(f"{API}/posts/{{post_id}}", h(self._get_post)),
            WebSocketRoute(f"{API}/websocket", self._websocket),
            Route(
                "/{path:path}",
                h(self._not_found, auth=False),
                methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            ),
        ]
        return Starlette(routes=routes)

    def _record(self, method: str, path: str, query: str, headers: Any, raw: str) -> Recorded:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = Recorded(method, path, query, {k.lower(): v for k, v in headers.items()}, raw, body)
        with self._lock:
            self.requests.append(rec)
        return rec

    def _endpoint(
        self, handler: Callable[[_Req], tuple[int, Any]], *, auth: bool = True
    ) -> Callable[..., Any]:
        async def endpoint(request: Request) -> Response:
            raw = (await request.body()).decode("utf-8", "replace")
            rec = self._record(request.method, request.url.path, request.url.query, request.headers, raw)
            if self._down:
                return Response(_PROXY_503, 503, media_type="text/html")
            request_id = new_id()
            headers = {"X-Request-Id": request_id, "X-Version-Id": self.server_version}
            try:
                with self._lock:
                    user = self._session(rec.token) if auth else None
                    status, body = handler(
                        _Req(dict(request.path_params), dict(request.query_params), rec.body, user)
                    )
            except MattermostError as err:
                status, body = err.status, err.body(request_id)
            return Response(go_json(body), status, headers=headers, media_type="application/json")

        return endpoint

    def _session(self, token: str) -> User:
        user_id = self._tokens.get(token) if token else None
        if user_id is None:
            raise MattermostError(401, "api.context.session_expired.app_error")
        return self._users[user_id]

    def _param_user(self, req: _Req) -> User:
        user_id = req.params["user_id"]
        if user_id == "me":
            return req.me
        if not _valid_id(user_id):
            raise MattermostError(400, "api.context.invalid_url_param.app_error", name="user_id")
        return self._user(user_id)

    def _param_id(self, req: _Req, name: str) -> str:
        value = req.params[name]
        if not _valid_id(value):
            raise MattermostError(400, "api.context.invalid_url_param.app_error", name=name)
        return value

    def _not_found(self, req: _Req) -> tuple[int, Any]:
        raise MattermostError(404, "api.context.404.app_error")

    def _ping(self, req: _Req) -> tuple[int, Any]:
        return 200, {"ActiveSearchBackend": "database", "AndroidLatestVersion": "", "AndroidMinVersion": "",
                     "IosLatestVersion": "", "IosMinVersion": "", "status": "OK"}

    def _get_user(self, req: _Req) -> tuple[int, Any]:
        user = self._param_user(req)
        return 200, self._user_json(user, own=user == req.me)

    def _users_by_ids(self, req: _Req) -> tuple[int, Any]:
        if not isinstance(req.body, list) or not all(isinstance(i, str) for i in req.body):
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="user_ids")
        return 200, [
            self._user_json(self._users[i], own=i == req.me.id)
            for i in dict.fromkeys(req.body)
            if i in self._users
        ]

    def _teams_for_user(self, req: _Req) -> tuple[int, Any]:
        if self._param_user(req) != req.me:
            raise MattermostError(403, "api.context.permissions.app_error")
        return 200, [self.team]

    def _channels_for_user(self, req: _Req) -> tuple[int, Any]:
        user = self._param_user(req)
        if user != req.me or self._param_id(req, "team_id") != self.team["id"]:
            raise MattermostError(403, "api.context.permissions.app_error")
        mine = [c for c in self._channels.values() if user.id in self._members[c.id]]
        return 200, [self._channel_json(c) for c in sorted(mine, key=lambda c: (c.display_name, c.name))]

    def _get_channel(self, req: _Req) -> tuple[int, Any]:
        return 200, self._channel_json(self._readable(req.me, self._param_id(req, "channel_id")))

    def _channel_posts(self, req: _Req) -> tuple[int, Any]:
        channel = self._readable(req.me, self._param_id(req, "channel_id"))
        posts = [p for p in self._posts.values() if p["channel_id"] == channel.id]
        if "since" in req.query:
            try:
                since = int(req.query["since"])
            except ValueError:
                raise MattermostError(400, "api.context.invalid_url_param.app_error", name="since") from None
            changed = [p for p in posts if p["update_at"] > since]
            roots = {p["root_id"] for p in changed if p["root_id"]}  # GetPostsSince adds the threads' roots
            return 200, self._post_list(
                {p["id"]: p for p in changed + [self._posts[r] for r in roots]}.values()
            )
        try:
            page, per_page = int(req.query.get("page", 0)), min(int(req.query.get("per_page", 60)), 200)
        except ValueError:
            raise MattermostError(400, "api.context.invalid_url_param.app_error", name="page") from None
        newest = sorted(posts, key=lambda p: p["create_at"], reverse=True)[
            page * per_page : (page + 1) * per_page
        ]
        return 200, self._post_list(newest)

    def _new_post(self, req: _Req) -> tuple[int, Any]:
        if not isinstance(req.body, dict):
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="post")
        return 201, self._create_post(req.me, req.body)

    def _patch(self, req: _Req) -> tuple[int, Any]:
        if not isinstance(req.body, dict):
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="post")
        return 200, self._patch_post(req.me, self._param_id(req, "post_id"), req.body)

    def _get_post(self, req: _Req) -> tuple[int, Any]:
        post = self._posts.get(self._param_id(req, "post_id"))
        if post is None:
            raise MattermostError(404, "app.post.get.app_error")
        self._readable(req.me, post["channel_id"])
        return 200, self._post_json(post)

    def _get_thread(self, req: _Req) -> tuple[int, Any]:
        _, post = self._get_post(req)
        root = post["root_id"] or post["id"]
        return 200, self._post_list(p for p in self._posts.values() if root in (p["id"], p["root_id"]))

    def _typing(self, req: _Req) -> tuple[int, Any]:
        user = self._param_user(req)
        body = req.body if isinstance(req.body, dict) else {}
        channel_id, parent_id = body.get("channel_id", ""), body.get("parent_id", "")
        if user != req.me or not _valid_id(channel_id) or user.id not in self._members.get(channel_id, ()):
            raise MattermostError(403, "api.context.permissions.app_error")
        self._user_typing(user.id, channel_id, parent_id if isinstance(parent_id, str) else "", "rest")
        return 200, {"status": "OK"}

    def _user_typing(self, user_id: str, channel_id: str, parent_id: str, via: str) -> None:
        with self._lock:
            self.typing_events.append(Typing(user_id, channel_id, parent_id, via))
        self._publish(
            "typing",
            {"parent_id": parent_id, "user_id": user_id},
            channel_id=channel_id,
            omit_users={user_id: True},
        )

    # -- WebSocket --------------------------------------------------------------------------
    async def _websocket(self, ws: WebSocket) -> None:
        rec = self._record("GET", ws.url.path, ws.url.query, ws.headers, "")
        if self._down or self._refusing:
            await ws.send_denial_response(Response(_PROXY_503, 503, media_type="text/html"))
            return
        loop = asyncio.get_running_loop()
        conn = _Conn(ws, loop, ws.scope["extensions"].get("sleuth.abort") or (lambda: None))
        await ws.accept()
        writer = loop.create_task(self._write_pump(conn))
        with self._lock:
            self._sockets.add(conn)
            user_id = self._tokens.get(rec.token) if rec.token else None
            if user_id:  # a bad header token leaves the socket open but unauthenticated
                self._register(conn, user_id, rec.token)
        ticker = loop.call_later(self.auth_timeout, lambda: None if conn.user_id else conn.abort())
        try:
            while True:
                message = await ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                try:
                    request = json.loads(message.get("text") or message.get("bytes") or b"")
                except ValueError:
                    request = None
                with self._lock:
                    self.ws_received.append(WsReceived(conn.user_id, request))
                    if not isinstance(request, dict):  # the read pump's decoder fails: socket closed
                        conn.abort()
                        break
                    self._ws_request(conn, request)
        finally:
            ticker.cancel()
            writer.cancel()
            with self._lock:
                self._sockets.discard(conn)

    async def _write_pump(self, conn: _Conn) -> None:
        while True:
            message = await conn.outbox.get()
            if "event" in message:
                message = {**message, "seq": conn.seq}
                conn.seq += 1
            try:
                await conn.ws.send_text(go_json(message))
            except (WebSocketDisconnect, RuntimeError, OSError):  # gone; the read side ends the handler
                return

    def _register(self, conn: _Conn, user_id: str, token: str) -> None:
        conn.user_id, conn.token = user_id, token
        data = {"connection_id": conn.connection_id, "server_version": self.server_version}
        conn.send({"event": "hello", "data": data, "broadcast": _broadcast(user_id=user_id)})

    def _ws_request(self, conn: _Conn, req: dict[str, Any]) -> None:
        """WebSocketRouter.ServeWebSocket and the wsapi handlers this fake knows."""
        action, seq, data = req.get("action"), req.get("seq"), req.get("data")
        data = data if isinstance(data, dict) else {}
        seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else 0

        def reply(error: MattermostError | None = None, payload: dict[str, Any] | None = None) -> None:
            if not conn.user_id:  # the hub drops replies to a connection it never registered
                return
            out: dict[str, Any] = {"status": "FAIL" if error else "OK", "seq_reply": seq}
            if payload:
                out["data"] = payload
            if error:
                out["error"] = error.body()
            conn.send(out)

        if not action:
            return reply(MattermostError(400, "api.web_socket_router.no_action.app_error"))
        if seq <= 0:
            return reply(MattermostError(400, "api.web_socket_router.bad_seq.app_error"))
        if action == "authentication_challenge":
            if conn.user_id and conn.token in self._tokens:
                return None
            token = data.get("token")
            user_id = self._tokens.get(token) if isinstance(token, str) else None
            if user_id is None or not isinstance(token, str):  # the real server closes without a word
                conn.abort()
                return None
            self._register(conn, user_id, token)  # hello is queued on registration, before the reply
            return reply()
        if not conn.user_id:
            return None
        if conn.token not in self._tokens:  # revoked since: IsAuthenticated fails
            return reply(MattermostError(401, "api.web_socket_router.not_authenticated.app_error"))
        if action == "user_typing":
            channel_id = data.get("channel_id")
            if not _valid_id(channel_id) or conn.user_id not in self._members.get(channel_id, ()):
                return reply(
                    MattermostError(400, "api.websocket_handler.invalid_param.app_error", name="channel_id")
                )
            parent_id = data.get("parent_id")
            self._user_typing(conn.user_id, channel_id, parent_id if isinstance(parent_id, str) else "", "ws")
            return reply()
        if action == "ping":
            pong = {"node_id": "", "server_time": self._now(), "text": "pong", "version": self.version}
            return reply(payload=pong)
        if action == "user_update_active_status":
            return reply()
        return reply(MattermostError(500, "api.web_socket_router.bad_action.app_error"))


def _id(value: Any) -> str:
    return value if isinstance(value, str) else value.id


def serve(**options: Any) -> Iterator[FakeMattermost]:
    """For a fixture: ``yield from serve()`` starts a fake and stops it after the test."""
    with FakeMattermost(**options) as fake:
        yield fake
