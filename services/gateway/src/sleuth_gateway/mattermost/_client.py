"""Mattermost's REST API v4 and WebSocket API, as far as the bot uses them.

Written here (httpx and ``websockets``, both already dependencies) rather than taken from
``mattermostautodriver``: the bot needs a dozen endpoints, and that library's WebSocket loop
retries with a fixed delay, logs a traceback per attempt and gives no connected/refused state
for ``/readyz`` or hook to catch up after a reconnect — the parts that matter here.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

__all__ = ["MattermostApi", "MattermostError", "MattermostRefused", "MattermostUnavailable"]

_PER_PAGE = 200


class MattermostError(Exception):
    """A call Mattermost answered with an error (``status``: the HTTP status, 0 for none)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class MattermostUnavailable(MattermostError):
    """Mattermost (or the proxy before it) did not answer, or answered 5xx: try again later."""


class MattermostRefused(MattermostError):
    """The bot's token was refused (401): revoked, expired or wrong."""


def _ws_url(base: str) -> str:
    parts = urlsplit(base)
    scheme = {"https": "wss", "http": "ws"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/api/v4/websocket", "", ""))


class MattermostApi:
    """One bot's view of one server: REST calls and the event stream."""

    def __init__(self, url: str, token: str, *, timeout: float = 10.0, ca_file: str = "") -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._ssl: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
        self._http = httpx.AsyncClient(
            base_url=f"{self.url}/api/v4",
            headers={"Authorization": f"Bearer {token}", "X-Requested-With": "XMLHttpRequest"},
            timeout=timeout,
            verify=self._ssl,
            follow_redirects=False,
        )
        self._timeout = timeout

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            resp = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise MattermostUnavailable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        if resp.status_code == 401:
            raise MattermostRefused("the bot's access token was refused (401)", 401)
        if resp.status_code >= 500:
            raise MattermostUnavailable(f"{method} {path}: HTTP {resp.status_code}", resp.status_code)
        try:
            body = resp.json()
        except ValueError:
            body = None
        if resp.status_code >= 400:
            detail = body.get("message", "") if isinstance(body, dict) else ""
            raise MattermostError(f"{method} {path}: HTTP {resp.status_code} {detail}".strip(), resp.status_code)
        return body

    # -- users and channels
    async def me(self) -> dict[str, Any]:
        return dict(await self._call("GET", "/users/me"))

    async def user(self, user_id: str) -> dict[str, Any]:
        return dict(await self._call("GET", f"/users/{user_id}"))

    async def channel(self, channel_id: str) -> dict[str, Any]:
        return dict(await self._call("GET", f"/channels/{channel_id}"))

    async def channel_member_ids(self, channel_id: str, limit: int) -> list[str]:
        """Up to ``limit`` + 1 member ids (one more than ``limit`` says "too many")."""
        return await self._member_ids(f"/channels/{channel_id}/members", limit)

    async def team_member_ids(self, team_id: str, limit: int) -> list[str]:
        """Up to ``limit`` + 1 ids of the team's members (who may read its open channels)."""
        return await self._member_ids(f"/teams/{team_id}/members", limit)

    async def _member_ids(self, path: str, limit: int) -> list[str]:
        out: list[str] = []
        page = 0
        while len(out) <= limit:
            batch = await self._call("GET", path, params={"page": page, "per_page": _PER_PAGE})
            if not isinstance(batch, list) or not batch:
                break
            out += [str(m.get("user_id", "")) for m in batch if isinstance(m, dict) and not m.get("delete_at")]
            if len(batch) < _PER_PAGE:
                break
            page += 1
        return out[: limit + 1]

    async def my_channel_ids(self) -> list[str]:
        """Every channel the bot is in, direct messages included, across its teams."""
        teams = await self._call("GET", "/users/me/teams")
        ids: dict[str, None] = {}
        for team in teams if isinstance(teams, list) else []:
            channels = await self._call("GET", f"/users/me/teams/{team['id']}/channels")
            for c in channels if isinstance(channels, list) else []:
                ids[str(c["id"])] = None
        return list(ids)

    # -- posts
    async def posts_since(self, channel_id: str, since_ms: int) -> list[dict[str, Any]]:
        """Posts of ``channel_id`` created or changed after ``since_ms``, oldest first."""
        body = await self._call("GET", f"/channels/{channel_id}/posts", params={"since": since_ms})
        posts = body.get("posts", {}) if isinstance(body, dict) else {}
        return sorted((p for p in posts.values() if isinstance(p, dict)), key=lambda p: p.get("create_at", 0))

    async def create_post(
        self, channel_id: str, message: str, *, root_id: str = "", props: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"channel_id": channel_id, "message": message, "root_id": root_id}
        if props:
            body["props"] = props
        return dict(await self._call("POST", "/posts", json=body))

    async def patch_post(self, post_id: str, message: str) -> dict[str, Any]:
        return dict(await self._call("PUT", f"/posts/{post_id}/patch", json={"message": message}))

    async def typing(self, user_id: str, channel_id: str, parent_id: str = "") -> None:
        await self._call(
            "POST", f"/users/{user_id}/typing", json={"channel_id": channel_id, "parent_id": parent_id}
        )

    # -- events
    async def events(self, hello_timeout: float = 10.0) -> AsyncIterator[dict[str, Any]]:
        """The WebSocket's events, from ``hello`` on, until the connection closes (then the
        iteration ends). ``MattermostUnavailable`` when it cannot connect or no ``hello`` comes
        (an unauthenticated socket gets none)."""
        try:
            ws: ClientConnection = await ws_connect(
                _ws_url(self.url),
                additional_headers={"Authorization": f"Bearer {self._token}"},
                ssl=self._ssl if self.url.startswith("https") and self._ssl is not True else None,
                open_timeout=self._timeout,
                ping_interval=20,
                ping_timeout=20,
                max_size=4 * 1024 * 1024,
                user_agent_header="sleuth-gateway",
            )
        except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
            raise MattermostUnavailable(f"WebSocket: {type(exc).__name__}: {exc}") from exc
        async with ws:
            try:
                async with asyncio.timeout(hello_timeout):
                    first = await _next_event(ws)
            except (TimeoutError, websockets.exceptions.ConnectionClosed) as exc:
                raise MattermostUnavailable("WebSocket: no hello from the server (not authenticated?)") from exc
            if first is None or first.get("event") != "hello":
                raise MattermostUnavailable(f"WebSocket: expected hello, got {str(first)[:80]}")
            yield first
            while True:
                try:
                    event = await _next_event(ws)
                except websockets.exceptions.ConnectionClosed:
                    return
                if event is not None and "event" in event:
                    yield event


async def _next_event(ws: ClientConnection) -> dict[str, Any] | None:
    raw = await ws.recv()
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None
