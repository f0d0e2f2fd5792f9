"""FakeMattermost: the server assembled, and the controls a test drives it with."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

from ._api import Rest
from ._model import (
    API,
    GROUP_MAX_USERS,
    GROUP_MIN_USERS,
    SYSTEM_ADMIN,
    SYSTEM_USER,
    Channel,
    Recorded,
    User,
    id_of,
    new_id,
)
from ._ws import Sockets

T = TypeVar("T")


class FakeMattermost(Rest, Sockets):
    def _build_app(self) -> Starlette:
        websocket = WebSocketRoute(f"{API}/websocket", self._websocket)
        return Starlette(routes=[*self._rest_routes(), websocket, self._not_found_route()])

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._listener.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self._listener.port}{API}/websocket"

    def start(self, timeout: float = 10.0) -> FakeMattermost:
        self._listener.start(timeout)
        return self

    def stop(self) -> None:
        self.drop_connections()
        self._listener.stop()

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
        system_admin: bool = False,
    ) -> User:
        with self._lock:
            name, now = username.lower(), self._now()
            user = User(
                id=new_id(),
                username=name,
                email=(email or f"{name}@example.com").lower(),  # NormalizeEmail on save
                first_name=first_name,
                last_name=last_name,
                is_bot=is_bot,
                create_at=now,
                token=new_id(),
                update_at=now,
                roles=SYSTEM_ADMIN if system_admin else SYSTEM_USER,
            )
            self._users[user.id] = user
            self._tokens[user.token] = user.id
            return user

    def add_token(self, user: User | str) -> str:
        with self._lock:
            token = new_id()
            self._tokens[token] = id_of(user)
            return token

    def revoke_token(self, token: str) -> None:
        """REST calls with it answer 401; sockets opened with it stay open but, as on the real
        server, receive no further events."""
        with self._lock:
            self._tokens.pop(token, None)

    def deactivate(self, user: User | str) -> User:
        """UpdateActive(false): delete_at set; the user's tokens then fail as revoked ones do
        (401; sockets stay open but hear nothing), and everyone else gets ``user_updated``."""
        return self._update_user(user, lambda u, now: replace(u, delete_at=now, update_at=now))

    def set_email(self, user: User | str, email: str) -> User:
        """Change the address (lowercased, as the server normalizes it); sends ``user_updated``."""
        return self._update_user(user, lambda u, now: replace(u, email=email.lower(), update_at=now))

    def _update_user(self, user: User | str, change: Callable[[User, int], User]) -> User:
        with self._lock:
            updated = change(self._user(id_of(user)), self._now())
            self._users[updated.id] = updated
        self._user_updated(updated)
        return updated

    def add_channel(
        self,
        name: str,
        *,
        display_name: str | None = None,
        type: str = "O",
        members: Iterable[User | str] = (),
    ) -> Channel:
        """The first member is the creator, and (of an open or private channel) its channel admin."""
        ids = list(dict.fromkeys(id_of(m) for m in members))
        with self._lock:
            if display_name is None:
                display_name = name.replace("-", " ").title()
            channel = Channel(
                id=new_id(),
                name=name,
                display_name=display_name,
                type=type,
                team_id="" if type in ("D", "G") else self.team["id"],
                create_at=self._now(),
                creator_id=ids[0] if ids else "",
            )
            self._channels[channel.id] = channel
            self._members[channel.id] = {}
            for index, user_id in enumerate(ids):
                self._join(channel.id, user_id, admin=index == 0 and type in ("O", "P"))
            return channel

    def add_member(self, channel: Channel | str, user: User | str) -> None:
        self._join(id_of(channel), id_of(user))

    def remove_member(
        self, channel: Channel | str, user: User | str, *, by: User | str | None = None
    ) -> None:
        """The user leaves (or ``by`` removes them): ``user_removed`` goes to the members left and
        to the user. Direct and group messages have fixed members, as on the server."""
        with self._lock:
            target = self._channels[id_of(channel)]
        if target.type in ("D", "G"):
            raise ValueError(f"cannot remove a member of a {target.type} channel")
        self._remove(target, id_of(user), id_of(by) if by is not None else id_of(user))

    def dm_channel(self, a: User | str, b: User | str) -> Channel:
        """The direct channel of two users (made on first use), named ``<id>__<id>`` like the server's."""
        first, second = sorted((id_of(a), id_of(b)))
        return self._direct(f"{first}__{second}", "", "D", [first, second])

    def group_channel(self, *users: User | str) -> Channel:
        """The group message of 3 to 8 users (made on first use), named and titled like the
        server's (GetGroupNameFromUserIds, GetGroupDisplayNameFromUsers); team_id "". Every member
        hears every post in it, with a mention, as in a DM."""
        ids = sorted(dict.fromkeys(id_of(u) for u in users))
        if not GROUP_MIN_USERS <= len(ids) <= GROUP_MAX_USERS:
            sizes = f"{GROUP_MIN_USERS} to {GROUP_MAX_USERS}"
            raise ValueError(f"a group message has {sizes} users, not {len(ids)}")
        with self._lock:
            title = ", ".join(sorted(self._user(i).username for i in ids))[:64]
        return self._direct(hashlib.sha1("".join(ids).encode()).hexdigest(), title, "G", ids)

    def _direct(self, name: str, title: str, type: str, ids: list[str]) -> Channel:
        with self._lock:
            for channel in self._channels.values():
                if channel.name == name:
                    return channel
            return self.add_channel(name, display_name=title, type=type, members=ids)

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
            self._user(id_of(user)),
            {"channel_id": id_of(channel), "message": message, "root_id": root_id, "props": props or {}},
        )

    def react_as(self, user: User | str, post_id: str, emoji_name: str) -> dict[str, Any]:
        """React as the user (``POST /reactions``: stored, and broadcast as ``reaction_added``)."""
        uid = id_of(user)
        return self._react(self._user(uid), {"user_id": uid, "post_id": post_id, "emoji_name": emoji_name})

    def edit_as(self, user: User | str, post_id: str, message: str) -> dict[str, Any]:
        return self._patch_post(self._user(id_of(user)), post_id, {"message": message})

    # -- what the tests read back -----------------------------------------------------------
    def user(self, user: User | str) -> User:
        """The user as the server has them now."""
        with self._lock:
            return self._user(id_of(user))

    def post(self, post_id: str) -> dict[str, Any]:
        with self._lock:
            return self._post_json(self._posts[post_id])

    def posts_by(self, user: User | str) -> list[dict[str, Any]]:
        with self._lock:
            return [self._post_json(p) for p in self._posts.values() if p["user_id"] == id_of(user)]

    def posts_in(self, channel: Channel | str) -> list[dict[str, Any]]:
        with self._lock:
            return [self._post_json(p) for p in self._posts.values() if p["channel_id"] == id_of(channel)]

    def calls(self, method: str, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == method and r.path == path]

    def connected(self, user: User | str | None = None) -> int:
        """Authenticated WebSocket connections (of one user, or of all)."""
        with self._lock:
            return sum(1 for c in self._sockets if c.user_id and (user is None or c.user_id == id_of(user)))

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
            if refuse and self._listener.running:
                self.stop()
        else:
            self._down = False
            if not self._listener.running:
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


def serve(**options: Any) -> Iterator[FakeMattermost]:
    """For a fixture: ``yield from serve()`` starts a fake and stops it after the test."""
    with FakeMattermost(**options) as fake:
        yield fake
