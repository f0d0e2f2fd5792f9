"""The fake Mattermost server answers as the real one does, over real HTTP and WebSocket
connections (httpx and the websockets client), so an adapter tested against it meets the real
shapes: posted events carrying the post as a JSON string, per-recipient mentions, AppErrors,
ChannelMembers, profiles sanitized as the server sanitizes them."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidStatus

from tests.fakes.mattermost import Channel, FakeMattermost, User, serve

POST_KEYS = [  # model.Post as the server serializes it, in declaration order
    "id", "create_at", "update_at", "edit_at", "delete_at", "is_pinned", "user_id", "channel_id",
    "root_id", "original_id", "message", "type", "props", "hashtags", "file_ids", "pending_post_id",
    "reply_count", "last_reply_at", "participants", "metadata",
]  # fmt: skip
USER_KEYS = [  # model.User as another user sees it (is_bot only for a bot: omitempty)
    "id", "create_at", "update_at", "delete_at", "username", "auth_data", "auth_service", "email",
    "nickname", "first_name", "last_name", "position", "roles", "locale", "timezone", "disable_welcome_email",
]  # fmt: skip
MEMBER_KEYS = [  # model.ChannelMember, 10.x
    "channel_id", "user_id", "roles", "last_viewed_at", "msg_count", "mention_count", "mention_count_root",
    "urgent_mention_count", "msg_count_root", "notify_props", "last_update_at", "scheme_guest",
    "scheme_user", "scheme_admin", "explicit_roles",
]  # fmt: skip
BROADCAST_KEYS = ["omit_users", "user_id", "channel_id", "team_id", "connection_id", "omit_connection_id"]
ERROR_KEYS = ["id", "message", "detailed_error", "request_id", "status_code"]


@dataclass(frozen=True)
class Scene:
    mm: FakeMattermost
    bot: User
    alice: User
    bob: User
    town: Channel
    """bot and alice; bob is not a member."""
    lounge: Channel
    """bob only."""
    dm: Channel
    """alice and the bot."""


@pytest.fixture
def scene() -> Iterator[Scene]:
    for mm in serve(auth_timeout=0.3):
        bot = mm.add_user("sleuth", is_bot=True)
        alice, bob = mm.add_user("alice", first_name="Alice"), mm.add_user("bob")
        town = mm.add_channel("town-square", members=[bot, alice])
        lounge = mm.add_channel("lounge", members=[bob])
        yield Scene(mm, bot, alice, bob, town, lounge, mm.dm_channel(alice, bot))


@pytest.fixture
async def api(scene: Scene) -> AsyncIterator[httpx.AsyncClient]:
    """REST as the bot."""
    headers = {"Authorization": f"Bearer {scene.bot.token}"}
    async with httpx.AsyncClient(base_url=scene.mm.url + "/api/v4", headers=headers, timeout=5) as client:
        yield client


def bearer(user: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {user.token}"}


async def socket(mm: FakeMattermost, user: User) -> ClientConnection:
    """A WebSocket authenticated with the Authorization header, its hello already read."""
    ws = await connect(mm.ws_url, additional_headers={"Authorization": f"Bearer {user.token}"})
    hello = await read(ws)
    assert hello["event"] == "hello", hello
    return ws


async def read(ws: ClientConnection) -> dict[str, Any]:
    async with asyncio.timeout(2):
        return json.loads(await ws.recv())


async def next_event(ws: ClientConnection, event: str) -> dict[str, Any]:
    while (message := await read(ws)).get("event") != event:
        pass
    return message


def assert_app_error(response: httpx.Response, error_id: str, status: int) -> None:
    body = response.json()
    assert response.status_code == status and list(body) == ERROR_KEYS, body
    assert (body["id"], body["status_code"], body["detailed_error"]) == (error_id, status, "")
    assert body["message"] and body["request_id"] == response.headers["x-request-id"]


# -- authentication ---------------------------------------------------------------------------
async def test_rest_takes_the_bots_token_and_refuses_a_bad_or_revoked_one(scene: Scene) -> None:
    bearer = {"Authorization": f"Bearer {scene.bot.token}"}
    async with httpx.AsyncClient(base_url=scene.mm.url + "/api/v4") as client:
        me = (await client.get("/users/me", headers=bearer)).json()
        assert (me["id"], me["username"], me["is_bot"]) == (scene.bot.id, "sleuth", True)
        assert "is_bot" not in (await client.get(f"/users/{scene.alice.id}", headers=bearer)).json()
        assert (await client.get("/system/ping")).json()["status"] == "OK"
        for headers in ({"Authorization": "Bearer not-a-token"}, {}):
            refused = await client.get("/users/me", headers=headers)
            assert_app_error(refused, "api.context.session_expired.app_error", 401)

        async with await socket(scene.mm, scene.bot) as ws:
            scene.mm.revoke_token(scene.bot.token)
            revoked = await client.get("/users/me", headers=bearer)
            scene.mm.post_as(scene.alice, scene.town, "@sleuth still there?")
            typing = {"action": "user_typing", "seq": 2, "data": {"channel_id": scene.town.id}}
            await ws.send(json.dumps(typing))
            refusal = await read(ws)  # the socket stays open, but the post above never reached it
    assert_app_error(revoked, "api.context.session_expired.app_error", 401)
    assert refusal["status"] == "FAIL"
    assert refusal["error"]["id"] == "api.web_socket_router.not_authenticated.app_error"


async def test_header_auth_gets_hello_as_event_zero(scene: Scene) -> None:
    bearer = {"Authorization": f"Bearer {scene.bot.token}"}
    async with connect(scene.mm.ws_url, additional_headers=bearer) as ws:
        hello = await read(ws)
    assert list(hello) == ["event", "data", "broadcast", "seq"]
    assert (hello["event"], hello["seq"], hello["broadcast"]["user_id"]) == ("hello", 0, scene.bot.id)
    assert hello["data"]["server_version"].startswith("10.11.0.10.11.0.")
    assert list(hello["broadcast"]) == BROADCAST_KEYS


async def test_challenge_auth_gets_hello_then_the_ok_reply(scene: Scene) -> None:
    challenge = {"seq": 1, "action": "authentication_challenge", "data": {"token": scene.bot.token}}
    async with connect(scene.mm.ws_url) as ws:
        await ws.send(json.dumps(challenge))
        first, second = await read(ws), await read(ws)
    assert (first["event"], first["seq"], first["broadcast"]["user_id"]) == ("hello", 0, scene.bot.id)
    assert second == {"status": "OK", "seq_reply": 1}
    assert scene.mm.ws_received[0].message == challenge


async def test_a_bad_token_never_authenticates_a_socket(scene: Scene) -> None:
    async with connect(scene.mm.ws_url) as ws:
        await ws.send(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": "nope"}}))
        with pytest.raises(ConnectionClosedError):
            await read(ws)  # closed with no reply and no close frame
    async with connect(scene.mm.ws_url, additional_headers={"Authorization": "Bearer nope"}) as ws:
        with pytest.raises(ConnectionClosedError):
            await read(ws)  # upgraded, but no hello; cut when the auth timeout passes
    assert scene.mm.connected() == 0


# -- events -----------------------------------------------------------------------------------
async def test_a_human_post_reaches_a_member_with_the_post_as_a_json_string(scene: Scene) -> None:
    mm = scene.mm
    async with await socket(mm, scene.bot) as ws:
        plain = mm.post_as(scene.alice, scene.town, "morning all")
        asked = mm.post_as(scene.alice, scene.town, "@sleuth: why is <checkout> & cart failing?")
        first, second = await next_event(ws, "posted"), await next_event(ws, "posted")

    assert list(first) == ["event", "data", "broadcast", "seq"] and (first["seq"], second["seq"]) == (1, 2)
    assert "mentions" not in first["data"]
    assert json.loads(first["data"]["post"]) == plain == mm.post(plain["id"])
    assert list(plain) == POST_KEYS and (plain["props"], plain["metadata"]) == ({}, {})
    data = second["data"]
    assert list(data) == sorted(data)  # a Go map
    assert "\\u003ccheckout\\u003e \\u0026" in data["post"]  # escaped as Go's encoder does
    assert json.loads(data["post"]) == asked
    assert json.loads(data["mentions"]) == [scene.bot.id]
    assert data | {"post": "", "mentions": ""} == {
        "channel_display_name": "Town Square", "channel_name": "town-square", "channel_type": "O",
        "mentions": "", "post": "", "sender_name": "@alice", "set_online": True, "team_id": mm.team["id"],
    }  # fmt: skip
    expected = dict.fromkeys(BROADCAST_KEYS, "") | {"omit_users": None, "channel_id": scene.town.id}
    assert second["broadcast"] == expected


async def test_every_post_in_a_dm_mentions_the_other_member(scene: Scene) -> None:
    async with await socket(scene.mm, scene.bot) as ws:
        post = scene.mm.post_as(scene.alice, scene.dm, "hi there")
        event = await next_event(ws, "posted")
    data = event["data"]
    assert json.loads(data["mentions"]) == [scene.bot.id] and json.loads(data["post"])["id"] == post["id"]
    assert (data["channel_type"], data["channel_display_name"], data["team_id"]) == ("D", "@alice", "")
    assert scene.dm.name == "__".join(sorted((scene.alice.id, scene.bot.id)))


@dataclass(frozen=True)
class Case:
    message: str
    mentions_bot: bool


MENTION_CASES = [
    Case("@sleuth why?", True),
    Case("hey @SLEUTH, look", True),
    Case("thanks @sleuth.", True),
    Case("(@sleuth)", True),
    Case("@channel heads up", True),
    Case("@here anyone?", True),  # the bot is online: it has a socket
    Case("@sleuth-bot is down", False),  # another name, not followed by punctuation
    Case("mail sleuth@example.com", False),
    Case("run `@sleuth` to ask", False),
    Case("```\n@sleuth\n```", False),
    Case("sleuth, are you there?", False),
]


async def test_mentions_follow_the_servers_word_rules(scene: Scene) -> None:
    async with await socket(scene.mm, scene.bot) as ws:
        for case in MENTION_CASES:
            scene.mm.post_as(scene.alice, scene.town, case.message)
        events = [await next_event(ws, "posted") for _ in MENTION_CASES]
    got = [(json.loads(e["data"]["post"])["message"], "mentions" in e["data"]) for e in events]
    assert got == [(case.message, case.mentions_bot) for case in MENTION_CASES]


async def test_a_non_member_gets_nothing_from_the_channel(scene: Scene) -> None:
    async with await socket(scene.mm, scene.bob) as ws:
        scene.mm.post_as(scene.alice, scene.town, "@bob are you there?")  # bob is not in town-square
        own = scene.mm.post_as(scene.bob, scene.lounge, "anyone?")
        event = await next_event(ws, "posted")
    assert json.loads(event["data"]["post"])["id"] == own["id"]  # the town-square post never came
    assert "mentions" not in event["data"]  # nor does a post mention its poster


async def test_the_bots_rest_post_reaches_the_channel_and_is_recorded(
    scene: Scene, api: httpx.AsyncClient
) -> None:
    body = {"channel_id": scene.town.id, "message": "Checking **team-a**."}
    async with await socket(scene.mm, scene.alice) as ws, await socket(scene.mm, scene.bot) as own:
        created = await api.post("/posts", json=body)
        event, echo = await next_event(ws, "posted"), await next_event(own, "posted")
    assert created.status_code == 201
    post = created.json()
    assert list(post) == POST_KEYS and post["user_id"] == scene.bot.id
    assert post["props"] == {"from_bot": "true"}  # as the server marks a bot account's posts
    assert json.loads(event["data"]["post"]) == post and event["data"]["sender_name"] == "@sleuth"
    assert echo["data"]["post"] == event["data"]["post"]  # a poster's own sockets get it too
    assert scene.mm.posts_by(scene.bot) == [post]
    (call,) = scene.mm.calls("POST", "/api/v4/posts")
    assert (call.body, call.token) == (body, scene.bot.token)


async def test_a_reply_joins_the_thread_and_a_repeated_pending_id_posts_once(
    scene: Scene, api: httpx.AsyncClient
) -> None:
    root = scene.mm.post_as(scene.alice, scene.town, "@sleuth pods crashing in team-a")
    body = {"channel_id": scene.town.id, "message": "On it.", "root_id": root["id"], "pending_post_id": "p-1"}
    first = (await api.post("/posts", json=body)).json()
    assert (await api.post("/posts", json=body)).json() == first and len(scene.mm.posts_by(scene.bot)) == 1
    thread = (await api.get(f"/posts/{first['id']}/thread")).json()
    assert thread["order"] == [first["id"], root["id"]] and set(thread["posts"]) == {first["id"], root["id"]}
    assert thread["posts"][root["id"]]["reply_count"] == 1
    assert thread["posts"][root["id"]]["update_at"] == first["create_at"]  # a reply bumps its root
    nested = await api.post("/posts", json=body | {"root_id": first["id"], "pending_post_id": ""})
    assert_app_error(nested, "api.post.create_post.root_id.app_error", 400)


async def test_patch_sets_edit_at_and_sends_post_edited(scene: Scene, api: httpx.AsyncClient) -> None:
    post = scene.mm.post_as(scene.bot, scene.town, "Thinking…")
    async with await socket(scene.mm, scene.alice) as ws:
        patched = await api.put(f"/posts/{post['id']}/patch", json={"message": "Root cause: OOMKilled."})
        event = await next_event(ws, "post_edited")
    assert patched.status_code == 200
    assert patched.json()["message"] == "Root cause: OOMKilled."
    assert patched.json()["edit_at"] > post["create_at"]
    assert list(event["data"]) == ["post"] and json.loads(event["data"]["post"]) == patched.json()
    assert event["broadcast"]["channel_id"] == scene.town.id

    theirs = scene.mm.post_as(scene.alice, scene.town, "mine")
    refused = await api.put(f"/posts/{theirs['id']}/patch", json={"message": "edited by the bot"})
    assert_app_error(refused, "api.context.permissions.app_error", 403)


async def test_posts_since_returns_only_what_changed_newest_first(
    scene: Scene, api: httpx.AsyncClient
) -> None:
    p1, p2, p3 = (scene.mm.post_as(scene.alice, scene.town, f"message {n}") for n in (1, 2, 3))
    listing = (await api.get(f"/channels/{scene.town.id}/posts", params={"since": p1["create_at"]})).json()
    assert listing == {
        "order": [p3["id"], p2["id"]], "posts": {p["id"]: p for p in sorted((p2, p3), key=lambda p: p["id"])},
        "next_post_id": "", "prev_post_id": "", "first_inaccessible_post_time": 0,
    }  # fmt: skip
    assert list(listing["posts"]) == sorted(listing["posts"])  # a Go map

    edited = scene.mm.edit_as(scene.alice, p1["id"], "message 1, edited")
    later = (await api.get(f"/channels/{scene.town.id}/posts", params={"since": p3["create_at"]})).json()
    assert later["order"] == [p1["id"]] and later["posts"][p1["id"]]["edit_at"] == edited["edit_at"] > 0


async def test_posts_since_orders_only_what_changed_and_adds_roots_for_context(
    scene: Scene, api: httpx.AsyncClient
) -> None:
    mm, path = scene.mm, f"/channels/{scene.town.id}/posts"
    root = mm.post_as(scene.alice, scene.town, "@sleuth pods crashing in team-a")
    reply = mm.post_as(scene.bot, scene.town, "Looking.", root["id"])  # bumps the root's update_at
    mm.edit_as(scene.bot, reply["id"], "Root cause: OOMKilled.")
    listing = (await api.get(path, params={"since": reply["create_at"]})).json()
    assert listing["order"] == [reply["id"]]  # the root has not changed since: context, not order
    assert set(listing["posts"]) == {reply["id"], root["id"]}
    assert listing["posts"][reply["id"]]["message"] == "Root cause: OOMKilled."
    assert (listing["next_post_id"], listing["prev_post_id"]) == ("", "") and "has_next" not in listing

    newest = [reply["id"], root["id"]]
    assert (await api.get(path, params={"since": 0})).json()["order"] == newest  # no since: a page
    assert (await api.get(path, params={"page": "x", "per_page": -3})).json()["order"] == newest  # defaults
    assert (await api.get(path, params={"page": 1, "per_page": 1})).json()["order"] == [root["id"]]
    bad_since = await api.get(path, params={"since": "soon"})
    assert_app_error(bad_since, "api.context.invalid_url_param.app_error", 400)


async def test_a_message_over_max_post_size_is_refused_with_the_app_error(
    scene: Scene, api: httpx.AsyncClient
) -> None:
    fits = await api.post("/posts", json={"channel_id": scene.town.id, "message": "é" * 16383})  # runes
    assert fits.status_code == 201
    too_long = await api.post("/posts", json={"channel_id": scene.town.id, "message": "x" * 16384})
    assert_app_error(too_long, "model.post.is_valid.message_length.app_error", 400)
    assert len(scene.mm.posts_by(scene.bot)) == 1


async def test_typing_is_acked_and_reaches_the_others_only(scene: Scene, api: httpx.AsyncClient) -> None:
    typing = {"action": "user_typing", "seq": 2, "data": {"channel_id": scene.town.id, "parent_id": ""}}
    async with await socket(scene.mm, scene.bot) as bot_ws, await socket(scene.mm, scene.alice) as alice_ws:
        await bot_ws.send(json.dumps(typing))
        assert await read(bot_ws) == {"status": "OK", "seq_reply": 2}
        event = await next_event(alice_ws, "typing")
        await api.post(f"/users/{scene.bot.id}/typing", json={"channel_id": scene.town.id, "parent_id": "p"})
        rest = await next_event(alice_ws, "typing")
        mine = scene.mm.post_as(scene.alice, scene.town, "ok")
        after = await read(bot_ws)  # the next thing the bot hears is alice's post: no typing echoed to it
    assert json.loads(after["data"]["post"])["id"] == mine["id"]
    assert event["data"] == {"parent_id": "", "user_id": scene.bot.id}
    assert event["broadcast"]["omit_users"] == {scene.bot.id: True} and rest["data"]["parent_id"] == "p"
    assert [(t.user_id, t.channel_id, t.via) for t in scene.mm.typing_events] == [
        (scene.bot.id, scene.town.id, "ws"),
        (scene.bot.id, scene.town.id, "rest"),
    ]


async def test_rest_reads_a_bot_needs(scene: Scene, api: httpx.AsyncClient) -> None:
    users = (await api.post("/users/ids", json=[scene.alice.id, "x" * 26])).json()
    assert [(u["username"], u["first_name"]) for u in users] == [("alice", "Alice")]
    assert [t["id"] for t in (await api.get("/users/me/teams")).json()] == [scene.mm.team["id"]]
    channels = (await api.get(f"/users/me/teams/{scene.mm.team['id']}/channels")).json()
    assert {c["id"] for c in channels} == {scene.town.id, scene.dm.id}  # DMs too
    assert (await api.get(f"/channels/{scene.town.id}")).json()["name"] == "town-square"
    secret = scene.mm.add_channel("secret", type="P", members=[scene.bob])
    assert_app_error(await api.get(f"/channels/{secret.id}"), "api.context.permissions.app_error", 403)
    assert_app_error(await api.get("/channels/nope"), "api.context.invalid_url_param.app_error", 400)


# -- users ------------------------------------------------------------------------------------
async def test_profiles_carry_email_and_delete_at_and_is_bot_only_for_bots(
    scene: Scene, api: httpx.AsyncClient
) -> None:
    alice = (await api.get(f"/users/{scene.alice.id}")).json()
    assert list(alice) == USER_KEYS  # a bot caller sees what any user sees
    assert (alice["email"], alice["first_name"], alice["delete_at"]) == ("alice@example.com", "Alice", 0)
    me = (await api.get("/users/me")).json()
    assert (me["email"], me["is_bot"], "notify_props" in me) == ("sleuth@example.com", True, True)

    async with await socket(scene.mm, scene.bot) as ws:
        changed = scene.mm.set_email(scene.alice, "Alice@Corp.Example")
        update = await next_event(ws, "user_updated")
    profile = (await api.get(f"/users/{scene.alice.id}")).json()
    assert profile["email"] == changed.email == "alice@corp.example"  # normalized, as the server does
    assert profile["update_at"] == changed.update_at > alice["update_at"]
    assert list(update["data"]) == ["user"] and update["data"]["user"] == profile  # an object, not a string
    assert update["broadcast"]["omit_users"] == {scene.alice.id: True}
    assert scene.mm.user(scene.alice) == changed and scene.alice.email == "alice@example.com"  # a snapshot


async def test_hidden_emails_show_only_to_their_owner_and_to_system_admins() -> None:
    with FakeMattermost(show_email_address=False, show_full_name=False) as mm:
        bot, admin = mm.add_user("sleuth", is_bot=True), mm.add_user("root", system_admin=True)
        alice = mm.add_user("alice", first_name="Alice")
        async with httpx.AsyncClient(base_url=mm.url + "/api/v4") as client:
            viewers = (bot, admin, alice)
            seen = [(await client.get(f"/users/{alice.id}", headers=bearer(v))).json() for v in viewers]
        async with await socket(mm, bot) as bot_ws, await socket(mm, admin) as admin_ws:
            async with await socket(mm, alice) as alice_ws:
                mm.set_email(alice, "alice@corp.example")
                sockets = (bot_ws, admin_ws, alice_ws)
                updates = [(await next_event(ws, "user_updated"))["data"]["user"] for ws in sockets]
    assert [(u["email"], u["first_name"]) for u in seen] == [
        ("", ""),  # PrivacySettings hide them from a user, a bot included
        ("alice@example.com", "Alice"),
        ("alice@example.com", "Alice"),
    ]
    assert [u["email"] for u in updates] == ["", "alice@corp.example", "alice@corp.example"]
    assert ["notify_props" in u for u in updates] == [False, False, True]  # her own profile comes whole
    assert mm.user(admin).roles == "system_admin system_user"


async def test_a_deactivated_user_is_marked_and_locked_out(scene: Scene, api: httpx.AsyncClient) -> None:
    mm = scene.mm
    async with await socket(mm, scene.bot) as bot_ws, await socket(mm, scene.alice) as alice_ws:
        gone = mm.deactivate(scene.alice)
        update = await next_event(bot_ws, "user_updated")
        mm.post_as(scene.bot, scene.town, "@alice still there?")
        typing = {"action": "user_typing", "seq": 2, "data": {"channel_id": scene.town.id}}
        await alice_ws.send(json.dumps(typing))
        refusal = await read(alice_ws)  # her session is gone: the post never reached her
    profile = (await api.get(f"/users/{scene.alice.id}")).json()
    assert profile["delete_at"] == profile["update_at"] == gone.delete_at > 0
    assert update["data"]["user"] == profile
    assert refusal["error"]["id"] == "api.web_socket_router.not_authenticated.app_error"
    async with httpx.AsyncClient(base_url=mm.url + "/api/v4") as client:
        locked = await client.get("/users/me", headers=bearer(scene.alice))
    assert_app_error(locked, "api.context.session_expired.app_error", 401)
    async with connect(mm.ws_url, additional_headers=bearer(scene.alice)) as ws:
        with pytest.raises(ConnectionClosedError):
            await read(ws)  # upgraded, never authenticated


# -- channel members --------------------------------------------------------------------------
async def test_channel_members_in_the_servers_shape_for_members_only(
    scene: Scene, api: httpx.AsyncClient
) -> None:
    mm = scene.mm
    asked = mm.post_as(scene.alice, scene.town, "@sleuth anything failing?")
    mm.post_as(scene.bot, scene.town, "Looking.", asked["id"])
    members = (await api.get(f"/channels/{scene.town.id}/members")).json()
    assert [list(m) for m in members] == [MEMBER_KEYS, MEMBER_KEYS]
    bot, alice = members  # in join order; the bot, first, created the channel
    assert (bot["user_id"], bot["roles"], bot["scheme_admin"]) == (
        scene.bot.id, "channel_user channel_admin", True,
    )  # fmt: skip
    assert (alice["user_id"], alice["roles"], alice["scheme_user"], alice["scheme_admin"]) == (
        scene.alice.id, "channel_user", True, False,
    )  # fmt: skip
    assert alice["notify_props"] == {
        "channel_auto_follow_threads": "off", "desktop": "default", "email": "default",
        "ignore_channel_mentions": "default", "mark_unread": "all", "push": "default",
    }  # fmt: skip
    assert (alice["last_viewed_at"], alice["msg_count"]) == (asked["create_at"], 1)  # her own post: read
    assert (bot["mention_count"], bot["mention_count_root"]) == (1, 1)  # alice's question mentioned it
    assert bot["last_viewed_at"] == 0  # and a bot's own post does not mark the channel read
    assert alice["last_update_at"] >= asked["create_at"] and alice["explicit_roles"] == ""

    lounge = f"/channels/{scene.lounge.id}/members"
    assert_app_error(await api.get(lounge), "api.context.permissions.app_error", 403)  # open, not a member
    unknown = await api.get("/channels/" + "x" * 26 + "/members")
    assert_app_error(unknown, "api.context.permissions.app_error", 403)
    assert_app_error(await api.get("/channels/junk/members"), "api.context.invalid_url_param.app_error", 400)
    admin = mm.add_user("root", system_admin=True)
    listed = (await api.get(lounge, headers=bearer(admin))).json()
    assert [m["user_id"] for m in listed] == [scene.bob.id]


@dataclass(frozen=True)
class Paging:
    query: dict[str, Any]
    count: int


PAGING_CASES = [  # 207 members: the bot, alice and 205 more
    Paging({}, 60),
    Paging({"per_page": 500}, 200),
    Paging({"per_page": 200, "page": 1}, 7),
    Paging({"per_page": -1}, 60),
    Paging({"per_page": "many", "page": "next"}, 60),
    Paging({"per_page": 0}, 0),
]


async def test_member_pages_are_read_as_the_server_reads_them(scene: Scene, api: httpx.AsyncClient) -> None:
    for n in range(205):
        scene.mm.add_member(scene.town, scene.mm.add_user(f"user{n}"))
    path = f"/channels/{scene.town.id}/members"
    counts = [len((await api.get(path, params=case.query)).json()) for case in PAGING_CASES]
    assert counts == [case.count for case in PAGING_CASES]
    second = (await api.get(path, params={"per_page": 1, "page": 1})).json()
    assert [m["user_id"] for m in second] == [scene.alice.id]


async def test_remove_member_tells_the_channel_and_the_user(scene: Scene, api: httpx.AsyncClient) -> None:
    mm = scene.mm
    async with await socket(mm, scene.bot) as bot_ws, await socket(mm, scene.alice) as alice_ws:
        mm.remove_member(scene.town, scene.alice, by=scene.bot)
        to_channel = await next_event(bot_ws, "user_removed")
        to_alice = await next_event(alice_ws, "user_removed")
        mm.add_member(scene.town, scene.bob)
        mm.remove_member(scene.town, scene.bob)  # bob leaves
        left = await next_event(bot_ws, "user_removed")
        mm.post_as(scene.bot, scene.town, "@alice after you left")
        mm.post_as(scene.bot, scene.dm, "still here")
        heard = await next_event(alice_ws, "posted")
    assert to_channel["data"] == {"remover_id": scene.bot.id, "user_id": scene.alice.id}
    assert to_channel["broadcast"]["channel_id"] == scene.town.id
    assert to_alice["data"] == {"channel_id": scene.town.id, "remover_id": scene.bot.id}
    assert (to_alice["broadcast"]["user_id"], to_alice["broadcast"]["channel_id"]) == (scene.alice.id, "")
    assert left["data"] == {"remover_id": scene.bob.id, "user_id": scene.bob.id}
    assert json.loads(heard["data"]["post"])["channel_id"] == scene.dm.id  # the town post never came
    members = (await api.get(f"/channels/{scene.town.id}/members")).json()
    assert [m["user_id"] for m in members] == [scene.bot.id]
    with pytest.raises(ValueError):
        mm.remove_member(scene.dm, scene.alice)


# -- group messages ---------------------------------------------------------------------------
async def test_a_group_message_reaches_and_mentions_every_other_member(
    scene: Scene, api: httpx.AsyncClient
) -> None:
    mm, alice, bob, bot = scene.mm, scene.alice, scene.bob, scene.bot
    gm = mm.group_channel(alice, bob, bot)
    assert mm.group_channel(bot, alice, bob) == gm
    name = hashlib.sha1("".join(sorted((alice.id, bob.id, bot.id))).encode()).hexdigest()
    assert (gm.type, gm.name, gm.display_name, gm.team_id) == ("G", name, "alice, bob, sleuth", "")
    async with await socket(mm, bot) as bot_ws, await socket(mm, bob) as bob_ws:
        async with await socket(mm, alice) as alice_ws:
            post = mm.post_as(alice, gm, "morning, both")
            events = [await next_event(ws, "posted") for ws in (bot_ws, bob_ws, alice_ws)]
    mentions = [json.loads(e["data"].get("mentions", "null")) for e in events]
    assert mentions == [[bot.id], [bob.id], None]  # like a DM, not like a channel; never the poster
    data = events[0]["data"]
    assert (data["channel_type"], data["team_id"]) == ("G", "")
    assert data["channel_display_name"] == "alice, bob, sleuth"  # every member, the poster too
    assert json.loads(data["post"]) == post
    channels = (await api.get(f"/users/me/teams/{mm.team['id']}/channels")).json()
    assert {c["id"] for c in channels} == {scene.town.id, scene.dm.id, gm.id}
    members = (await api.get(f"/channels/{gm.id}/members")).json()
    assert {(m["user_id"], m["roles"]) for m in members} == {
        (u.id, "channel_user") for u in (alice, bob, bot)  # no channel admin in a group message
    }
    with pytest.raises(ValueError):
        mm.group_channel(alice, bot)


# -- faults -----------------------------------------------------------------------------------
async def test_drop_connections_cuts_sockets_without_a_close_frame(scene: Scene) -> None:
    ws = await socket(scene.mm, scene.bot)
    assert scene.mm.connected(scene.bot) == 1
    assert scene.mm.drop_connections() == 1
    with pytest.raises(ConnectionClosed) as closed:
        await read(ws)
    assert closed.value.rcvd is None  # abnormal closure (1006), as when the server dies
    assert scene.mm.connected() == 0
    async with await socket(scene.mm, scene.bot):
        assert await scene.mm.wait_for_async(lambda: scene.mm.connected(scene.bot)) == 1
    with pytest.raises(TimeoutError):
        scene.mm.wait_for(lambda: scene.mm.connected(), timeout=0.05)


async def test_refused_upgrades_and_a_server_that_is_down(scene: Scene, api: httpx.AsyncClient) -> None:
    scene.mm.refuse_connections(True)
    with pytest.raises(InvalidStatus) as refused:
        await connect(scene.mm.ws_url, additional_headers={"Authorization": f"Bearer {scene.bot.token}"})
    assert refused.value.response.status_code == 503
    scene.mm.refuse_connections(False)
    await (await socket(scene.mm, scene.bot)).close()

    scene.mm.set_down(True)
    assert (await api.get("/users/me")).status_code == 503
    scene.mm.set_down(True, refuse=True)
    with pytest.raises(httpx.ConnectError):
        await api.get("/users/me")
    scene.mm.set_down(False)
    assert (await api.get("/users/me")).json()["id"] == scene.bot.id  # same URL, same state
