"""The REST API v4 endpoints a bot adapter calls (api4/*.go), and the request plumbing
(web/handlers.go: session, request id, AppErrors; web/params.go: paging)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ._events import Events
from ._model import (
    API,
    PER_PAGE_DEFAULT,
    PER_PAGE_MAX,
    PROXY_503,
    MattermostError,
    User,
    go_json,
    new_id,
    valid_id,
)


@dataclass
class Req:
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    user: User | None

    @property
    def me(self) -> User:
        assert self.user is not None, "an endpoint with auth=False has no session"
        return self.user


def _int(value: str | None, default: int) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        return default
    return number if number >= 0 else default


def paging(req: Req) -> tuple[int, int]:
    """web/params.go: page and per_page, a bad or negative value quietly the default (0 and 60),
    per_page at most 200."""
    per_page = _int(req.query.get("per_page"), PER_PAGE_DEFAULT)
    return _int(req.query.get("page"), 0), min(per_page, PER_PAGE_MAX)


class Rest(Events):
    def _rest_routes(self) -> list[BaseRoute]:
        h = self._endpoint
        return [
            Route(f"{API}/system/ping", h(self._ping, auth=False)),
            Route(f"{API}/users/ids", h(self._users_by_ids), methods=["POST"]),
            Route(f"{API}/users/{{user_id}}/teams/{{team_id}}/channels", h(self._channels_for_user)),
            Route(f"{API}/users/{{user_id}}/teams", h(self._teams_for_user)),
            Route(f"{API}/users/{{user_id}}/typing", h(self._typing), methods=["POST"]),
            Route(f"{API}/users/{{user_id}}", h(self._get_user)),
            Route(f"{API}/channels/{{channel_id}}/members", h(self._channel_members)),
            Route(f"{API}/teams/{{team_id}}/members", h(self._team_members)),
            Route(f"{API}/channels/{{channel_id}}/posts", h(self._channel_posts)),
            Route(f"{API}/channels/{{channel_id}}", h(self._get_channel)),
            Route(f"{API}/posts", h(self._new_post), methods=["POST"]),
            Route(f"{API}/posts/{{post_id}}/patch", h(self._patch), methods=["PUT"]),
            Route(f"{API}/posts/{{post_id}}/thread", h(self._get_thread)),
            Route(f"{API}/posts/{{post_id}}", h(self._get_post)),
            Route(f"{API}/reactions", h(self._new_reaction), methods=["POST"]),
        ]

    def _not_found_route(self) -> BaseRoute:
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        return Route("/{path:path}", self._endpoint(self._not_found, auth=False), methods=methods)

    def _endpoint(
        self, handler: Callable[[Req], tuple[int, Any]], *, auth: bool = True
    ) -> Callable[..., Any]:
        async def endpoint(request: Request) -> Response:
            raw = (await request.body()).decode("utf-8", "replace")
            rec = self._record(request.method, request.url.path, request.url.query, request.headers, raw)
            if self._down:
                return Response(PROXY_503, 503, media_type="text/html")
            request_id = new_id()
            headers = {"X-Request-Id": request_id, "X-Version-Id": self.server_version}
            try:
                with self._lock:
                    user = self._session(rec.token) if auth else None
                    status, body = handler(
                        Req(dict(request.path_params), dict(request.query_params), rec.body, user)
                    )
            except MattermostError as err:
                status, body = err.status, err.body(request_id)
            return Response(go_json(body), status, headers=headers, media_type="application/json")

        return endpoint

    def _session(self, token: str) -> User:
        user_id = self._token_owner(token)
        if user_id is None:
            raise MattermostError(401, "api.context.session_expired.app_error")
        return self._users[user_id]

    def _param_user(self, req: Req) -> User:
        user_id = req.params["user_id"]
        if user_id == "me":
            return req.me
        if not valid_id(user_id):
            raise MattermostError(400, "api.context.invalid_url_param.app_error", name="user_id")
        return self._user(user_id)

    def _param_id(self, req: Req, name: str) -> str:
        value = req.params[name]
        if not valid_id(value):
            raise MattermostError(400, "api.context.invalid_url_param.app_error", name=name)
        return value

    def _not_found(self, req: Req) -> tuple[int, Any]:
        raise MattermostError(404, "api.context.404.app_error")

    def _ping(self, req: Req) -> tuple[int, Any]:
        return 200, {"ActiveSearchBackend": "database", "AndroidLatestVersion": "", "AndroidMinVersion": "",
                     "IosLatestVersion": "", "IosMinVersion": "", "status": "OK"}

    # -- users ------------------------------------------------------------------------------
    def _get_user(self, req: Req) -> tuple[int, Any]:
        user = self._param_user(req)
        return 200, self._user_json(user, own=user.id == req.me.id, admin=req.me.is_admin)

    def _users_by_ids(self, req: Req) -> tuple[int, Any]:
        if not isinstance(req.body, list) or not all(isinstance(i, str) for i in req.body):
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="user_ids")
        return 200, [
            self._user_json(self._users[i], own=i == req.me.id, admin=req.me.is_admin)
            for i in dict.fromkeys(req.body)
            if i in self._users
        ]

    def _teams_for_user(self, req: Req) -> tuple[int, Any]:
        if self._param_user(req).id != req.me.id:
            raise MattermostError(403, "api.context.permissions.app_error")
        return 200, [self.team]

    def _channels_for_user(self, req: Req) -> tuple[int, Any]:
        """GetChannelsForTeamForUser: the team's channels the user is in, and their direct and
        group messages (team_id "")."""
        user = self._param_user(req)
        if user.id != req.me.id or self._param_id(req, "team_id") != self.team["id"]:
            raise MattermostError(403, "api.context.permissions.app_error")
        mine = [c for c in self._channels.values() if user.id in self._members[c.id]]
        return 200, [self._channel_json(c) for c in sorted(mine, key=lambda c: (c.display_name, c.name))]

    def _typing(self, req: Req) -> tuple[int, Any]:
        user = self._param_user(req)
        body = req.body if isinstance(req.body, dict) else {}
        channel_id, parent_id = body.get("channel_id", ""), body.get("parent_id", "")
        member = valid_id(channel_id) and user.id in self._members.get(channel_id, ())
        if user.id != req.me.id or not member:
            raise MattermostError(403, "api.context.permissions.app_error")
        self._user_typing(user.id, channel_id, parent_id if isinstance(parent_id, str) else "", "rest")
        return 200, {"status": "OK"}

    def _team_members(self, req: Req) -> tuple[int, Any]:
        """getTeamMembers: model.TeamMember per member of the one team (every user the fake
        made, bots too, deactivated ones with their delete_at), a page in creation order; 403
        for another team id."""
        if self._param_id(req, "team_id") != self.team["id"]:
            raise MattermostError(403, "api.context.permissions.app_error")
        page, per_page = paging(req)
        users = list(self._users.values())[page * per_page : (page + 1) * per_page]
        return 200, [
            {"team_id": self.team["id"], "user_id": u.id, "roles": "team_user", "delete_at": u.delete_at,
             "scheme_guest": False, "scheme_user": True, "scheme_admin": False, "explicit_roles": ""}
            for u in users
        ]

    # -- channels ---------------------------------------------------------------------------
    def _get_channel(self, req: Req) -> tuple[int, Any]:
        return 200, self._channel_json(self._readable(req.me, self._param_id(req, "channel_id")))

    def _channel_members(self, req: Req) -> tuple[int, Any]:
        """getChannelMembers: SessionHasPermissionToChannel(read_channel), which a channel role or
        a system admin grants and a team role does not: not a member of the channel (open ones
        too) or no such channel, 403. A page of members in join order (the store's query has no
        ORDER BY)."""
        channel_id = self._param_id(req, "channel_id")
        members = self._members.get(channel_id)
        if members is None or not (req.me.id in members or req.me.is_admin):
            raise MattermostError(403, "api.context.permissions.app_error")
        page, per_page = paging(req)
        rows = list(members.values())[page * per_page : (page + 1) * per_page]
        return 200, [self._member_json(channel_id, m) for m in rows]

    def _channel_posts(self, req: Req) -> tuple[int, Any]:
        """getPostsForChannel. ``since`` > 0 (GetPostsSince): every post with update_at > since
        (created, edited or replied to after it), newest first in ``order``, plus the roots of
        their threads in ``posts`` only (not in ``order`` unless changed themselves); no cursor
        ids. Otherwise a page of the newest posts (without the rest of their threads)."""
        channel = self._readable(req.me, self._param_id(req, "channel_id"))
        posts = [p for p in self._posts.values() if p["channel_id"] == channel.id]
        try:
            since = int(req.query.get("since") or 0)
        except ValueError:
            raise MattermostError(400, "api.context.invalid_url_param.app_error", name="since") from None
        if since > 0:
            changed = [p for p in posts if p["update_at"] > since]
            roots = {p["root_id"] for p in changed if p["root_id"]}
            context = {p["id"]: p for p in changed + [self._posts[r] for r in roots]}
            return 200, self._post_list(context.values(), order=changed)
        page, per_page = paging(req)
        newest = sorted(posts, key=lambda p: p["create_at"], reverse=True)
        return 200, self._post_list(newest[page * per_page : (page + 1) * per_page])

    # -- posts ------------------------------------------------------------------------------
    def _new_post(self, req: Req) -> tuple[int, Any]:
        if not isinstance(req.body, dict):
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="post")
        return 201, self._create_post(req.me, req.body)

    def _new_reaction(self, req: Req) -> tuple[int, Any]:
        if not isinstance(req.body, dict):
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="reaction")
        return 200, self._react(req.me, req.body)

    def _patch(self, req: Req) -> tuple[int, Any]:
        if not isinstance(req.body, dict):
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="post")
        return 200, self._patch_post(req.me, self._param_id(req, "post_id"), req.body)

    def _get_post(self, req: Req) -> tuple[int, Any]:
        post = self._posts.get(self._param_id(req, "post_id"))
        if post is None:
            raise MattermostError(404, "app.post.get.app_error")
        self._readable(req.me, post["channel_id"])
        return 200, self._post_json(post)

    def _get_thread(self, req: Req) -> tuple[int, Any]:
        _, post = self._get_post(req)
        root = post["root_id"] or post["id"]
        return 200, self._post_list(p for p in self._posts.values() if root in (p["id"], p["root_id"]))
