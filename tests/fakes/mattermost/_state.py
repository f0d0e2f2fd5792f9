"""The server's data (users, tokens, channels, members, posts, sockets) and its JSON shapes."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette

from ._model import (
    MAX_POST_RUNES,
    Channel,
    MattermostError,
    Member,
    Recorded,
    Typing,
    User,
    WsReceived,
    new_id,
)
from ._server import Conn, Listener

_CHANNEL_NOTIFY_PROPS = {  # model.GetDefaultChannelNotifyProps(), as a Go map (keys sorted)
    "channel_auto_follow_threads": "off", "desktop": "default", "email": "default",
    "ignore_channel_mentions": "default", "mark_unread": "all", "push": "default",
}
_USER_NOTIFY_PROPS = {
    "channel": "true", "comments": "never", "desktop": "mention", "desktop_sound": "true",
    "email": "true", "first_name": "false", "mention_keys": "", "push": "mention", "push_status": "away",
}


class State:
    def __init__(
        self,
        *,
        team_name: str = "sleuth",
        team_display_name: str = "Sleuth",
        max_post_size: int = MAX_POST_RUNES,
        server_version: str = "10.11.0",
        auth_timeout: float = 5.0,
        host: str = "127.0.0.1",
        show_email_address: bool = True,
        show_full_name: bool = True,
    ) -> None:
        self.max_post_size = max_post_size
        self.auth_timeout = auth_timeout
        self.host = host
        self.show_email_address = show_email_address
        """PrivacySettings.ShowEmailAddress: off, only the user and system admins see an email."""
        self.show_full_name = show_full_name
        """PrivacySettings.ShowFullName: off, only the user and system admins see first/last name."""
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
        self._members: dict[str, dict[str, Member]] = {}  # channel id -> user id -> member, join order
        self._posts: dict[str, dict[str, Any]] = {}  # creation order
        self._reactions: dict[tuple[str, str, str], dict[str, Any]] = {}  # (user, post, emoji) → reaction
        self._pending: dict[str, str] = {}  # pending_post_id -> post id
        self._sockets: set[Conn] = set()
        self._down = False
        self._refusing = False
        self._listener = Listener(self._build_app(), host)

    def _build_app(self) -> Starlette:
        raise NotImplementedError

    # -- lookups ----------------------------------------------------------------------------
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

    def _token_owner(self, token: str) -> str | None:
        """The user a token authenticates: none once revoked, or once its user is deactivated
        (createSessionForUserAccessToken refuses an inactive user)."""
        user_id = self._tokens.get(token) if token else None
        if user_id is None or self._users[user_id].delete_at:
            return None
        return user_id

    def _readable(self, user: User, channel_id: str) -> Channel:
        channel = self._channels.get(channel_id)
        if channel is None:
            raise MattermostError(404, "app.channel.get.existing.app_error")
        if user.id not in self._members[channel_id] and channel.type != "O" and not user.is_admin:
            raise MattermostError(403, "api.context.permissions.app_error")
        return channel

    def _record(self, method: str, path: str, query: str, headers: Any, raw: str) -> Recorded:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = Recorded(method, path, query, {k.lower(): v for k, v in headers.items()}, raw, body)
        with self._lock:
            self.requests.append(rec)
        return rec

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

    def _user_json(self, user: User, *, own: bool, admin: bool = False) -> dict[str, Any]:
        """model.User. Your own profile comes whole; another's as SanitizeProfile leaves it: no
        notify_props or last_password_update, and email, first_name and last_name blank unless
        PrivacySettings show them (the default) or the caller is a system admin
        (GetSanitizeOptions(asAdmin)). A bot caller gets nothing more. email and delete_at are
        always there; is_bot only when true (omitempty)."""
        email = own or admin or self.show_email_address
        name = own or admin or self.show_full_name
        out: dict[str, Any] = {
            "id": user.id, "create_at": user.create_at, "update_at": user.update_at,
            "delete_at": user.delete_at, "username": user.username, "auth_data": "", "auth_service": "",
            "email": user.email if email else "", "nickname": "",
            "first_name": user.first_name if name else "", "last_name": user.last_name if name else "",
            "position": "", "roles": user.roles,
        }
        if own:
            out["notify_props"] = dict(_USER_NOTIFY_PROPS)
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

    def _member_json(self, channel_id: str, member: Member) -> dict[str, Any]:
        """model.ChannelMember as 10.x serializes it. roles are the scheme roles the store adds
        (channelMemberWithSchemeRoles.ToModel): channel_user, plus channel_admin for the creator of
        an open or private channel; explicit_roles is empty."""
        return {
            "channel_id": channel_id, "user_id": member.user_id,
            "roles": "channel_user channel_admin" if member.scheme_admin else "channel_user",
            "last_viewed_at": member.last_viewed_at, "msg_count": member.msg_count,
            "mention_count": member.mention_count, "mention_count_root": member.mention_count_root,
            "urgent_mention_count": 0, "msg_count_root": member.msg_count_root,
            "notify_props": dict(_CHANNEL_NOTIFY_PROPS), "last_update_at": member.last_update_at,
            "scheme_guest": False, "scheme_user": True, "scheme_admin": member.scheme_admin,
            "explicit_roles": "",
        }

    def _team_json(self, name: str, display_name: str) -> dict[str, Any]:
        now = self._now()
        return {  # model.Team, sanitized as a member sees it
            "id": new_id(), "create_at": now, "update_at": now, "delete_at": 0, "display_name": display_name,
            "name": name, "description": "", "email": "", "type": "O", "company_name": "",
            "allowed_domains": "", "invite_id": "", "allow_open_invite": False, "scheme_id": None,
            "group_constrained": None, "policy_id": None, "cloud_limits_archived": False,
        }

    def _post_list(
        self, posts: Iterable[dict[str, Any]], order: Iterable[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """model.PostList: ``order`` newest first (all of ``posts`` unless given), ``posts`` a Go
        map (keys sorted); has_next is nil, so omitted."""
        chosen = list(posts)
        ordered = sorted(chosen if order is None else order, key=lambda p: p["create_at"], reverse=True)
        return {
            "order": [p["id"] for p in ordered],
            "posts": {p["id"]: self._post_json(p) for p in sorted(chosen, key=lambda p: p["id"])},
            "next_post_id": "", "prev_post_id": "", "first_inaccessible_post_time": 0,
        }

