"""The WebSocket API (api4/websocket.go, app/platform/web_conn.go, websocket_router.go, wsapi):
authentication, hello, the actions a bot sends, and the per-connection write pump."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from ._events import Events
from ._model import PROXY_503, MattermostError, WsReceived, broadcast, go_json, valid_id
from ._server import Conn


class Sockets(Events):
    async def _websocket(self, ws: WebSocket) -> None:
        rec = self._record("GET", ws.url.path, ws.url.query, ws.headers, "")
        if self._down or self._refusing:
            await ws.send_denial_response(Response(PROXY_503, 503, media_type="text/html"))
            return
        loop = asyncio.get_running_loop()
        conn = Conn(ws, loop, ws.scope["extensions"].get("sleuth.abort") or (lambda: None))
        await ws.accept()
        writer = loop.create_task(self._write_pump(conn))
        with self._lock:
            self._sockets.add(conn)
            user_id = self._token_owner(rec.token)
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

    async def _write_pump(self, conn: Conn) -> None:
        while True:
            message = await conn.outbox.get()
            if "event" in message:
                message = {**message, "seq": conn.seq}
                conn.seq += 1
            try:
                await conn.ws.send_text(go_json(message))
            except (WebSocketDisconnect, RuntimeError, OSError):  # gone; the read side ends the handler
                return

    def _register(self, conn: Conn, user_id: str, token: str) -> None:
        conn.user_id, conn.token = user_id, token
        data = {"connection_id": conn.connection_id, "server_version": self.server_version}
        conn.send({"event": "hello", "data": data, "broadcast": broadcast(user_id=user_id)})

    def _ws_request(self, conn: Conn, req: dict[str, Any]) -> None:
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
            if conn.user_id and self._token_owner(conn.token):
                return None
            token = data.get("token")
            user_id = self._token_owner(token) if isinstance(token, str) else None
            if user_id is None or not isinstance(token, str):  # the real server closes without a word
                conn.abort()
                return None
            self._register(conn, user_id, token)  # hello is queued on registration, before the reply
            return reply()
        if not conn.user_id:
            return None
        if not self._token_owner(conn.token):  # revoked or deactivated since: IsAuthenticated fails
            return reply(MattermostError(401, "api.web_socket_router.not_authenticated.app_error"))
        if action == "user_typing":
            channel_id = data.get("channel_id")
            if not valid_id(channel_id) or conn.user_id not in self._members.get(channel_id, ()):
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
