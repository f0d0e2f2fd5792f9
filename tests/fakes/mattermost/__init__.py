"""A fake Mattermost server speaking the real REST v4 and WebSocket APIs, for tests: a bot
adapter's own HTTP and WebSocket code runs against it over real sockets on 127.0.0.1.

Shapes and behaviour follow mattermost-server (model/post.go, model/post_list.go, model/user.go,
model/channel.go, model/channel_member.go, model/websocket_message.go, app/notification.go,
app/channel.go, app/user.go, app/platform/web_conn.go, web_hub.go, websocket_router.go,
wsapi/user.go, api4/websocket.go, api4/channel.go, web/handlers.go, web/params.go,
store/sqlstore/post_store.go):

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
  (``@username``, ``@channel``/``@all``/``@here``, or the other side of a DM; in a group message
  every member but the poster, as GMMention makes it). ``seq`` counts events per connection;
  replies (``seq_reply``) take no seq.
- A post by a bot account gets ``props.from_bot = "true"``; a reply bumps its root's update_at;
  a repeated ``pending_post_id`` returns the first post again without a second event.
- ``GET /channels/{id}/posts?since=`` returns what changed after ``since`` (update_at > since:
  new, edited or replied to), newest first in ``order``, with the roots of changed replies in
  ``posts`` for context only; ``page``/``per_page`` are read as web/params.go does (a bad value
  is the default, per_page at most 200).
- ``GET /channels/{id}/members`` lists ChannelMembers (scheme roles, default notify_props, the
  poster's read state and mention counts kept as the server keeps them) to members and system
  admins only: read_channel comes from a channel role, so a non-member gets 403 even for an open
  channel, as does an unknown channel.
- Users: ``email`` and ``delete_at`` are always in a profile, ``is_bot`` only when true. Another
  user's email (and first/last name) is blanked unless PrivacySettings show it — on by default;
  ``FakeMattermost(show_email_address=False, show_full_name=False)`` turns them off — or the
  caller is a system admin (``add_user(..., system_admin=True)``); a bot sees no more than any
  user. A deactivated user's tokens answer 401 and their sockets hear nothing more.
  ``deactivate`` and ``set_email`` send ``user_updated`` (the profile as each receiver may see
  it; ``data.user`` an object); ``remove_member`` sends ``user_removed`` to the members left
  (``user_id``, ``remover_id``) and to the user (``channel_id``, ``remover_id``).

Test controls (thread-safe; call them from the test while the adapter runs):

    with FakeMattermost() as mm:                        # or, in a fixture: yield from serve()
        bot = mm.add_user("sleuth", is_bot=True)        # bot.token: its personal access token
        alice, bob = mm.add_user("alice"), mm.add_user("bob")   # system_admin=True: an admin
        town = mm.add_channel("town-square", members=[bot, alice])   # first member: the creator
        dm = mm.dm_channel(alice, bot)
        gm = mm.group_channel(alice, bob, bot)          # type "G", 3 to 8 users
        mm.post_as(alice, town, "@sleuth what is failing in team-a?")   # a human typing
        replies = await mm.wait_for_async(lambda: mm.posts_by(bot))     # wait_for() in sync tests
        mm.requests, mm.calls("POST", "/api/v4/posts")  # every request: method, path, headers, body
        mm.typing_events, mm.ws_received, mm.connected(bot), mm.user(alice)   # alice as she is now
        mm.add_member(town, bob); mm.remove_member(town, bob, by=alice)
        mm.set_email(alice, "alice@corp.example"); mm.deactivate(bob)
        mm.react_as(alice, post_id, "+1")                # a reaction (reaction_added)
        mm.drop_connections(); mm.refuse_connections(True); mm.revoke_token(bot.token)
        mm.set_down(True)                # 503 from "the proxy"; set_down(True, refuse=True): refused

- ``POST /reactions`` (only as oneself, on a post one may read) sends ``reaction_added`` to the
  channel's members with ``data.reaction`` a JSON string of model.Reaction.

Not modelled: files, removing reactions (and a post's ``has_reactions``), deletes, collapsed-threads events (``thread_updated``), statuses,
``posted_ack``, reliable-reconnect queues (a reconnect is always a new connection: hello again,
seq from 0), before/after paging of channel posts (without ``since`` the newest page is
returned, without the rest of its threads), the system posts and events of joining
(``user_added``, ``direct_added``, ``group_added``, "joined/left the channel"), reactivation,
the ChannelMember fields of 11.x (``autotranslation_disabled``; other members' last_viewed_at
and last_update_at hidden), and permissions beyond channel membership (members may post;
anyone in the team may read or post in an open channel; system admins may read any channel).
"""

from ._fake import FakeMattermost, serve
from ._model import API as API  # importable from here as before, not part of __all__
from ._model import MAX_POST_RUNES as MAX_POST_RUNES
from ._model import Channel, MattermostError, Recorded, Typing, User, WsReceived
from ._model import go_json as go_json
from ._model import new_id as new_id

__all__ = [
    "Channel", "FakeMattermost", "MattermostError", "Recorded", "Typing", "User", "WsReceived", "serve",
]
