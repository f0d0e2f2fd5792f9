"""What happens when someone posts, edits, types, leaves or changes, and the events it sends."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from ._model import Channel, MattermostError, Member, Typing, User, broadcast, go_json, hashtags, new_id
from ._state import State

_WORD = re.compile(r"[\w:.\-@]+")  # FieldsFunc in getExplicitMentions: letters, digits and :.-_@
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)  # code is never a mention


class Events(State):
    def _join(self, channel_id: str, user_id: str, *, admin: bool = False) -> None:
        """SaveMember: a new member has read nothing yet; last_update_at is when they joined."""
        with self._lock:
            members = self._members[channel_id]
            if user_id not in members:
                members[user_id] = Member(user_id, scheme_admin=admin, last_update_at=self._now())

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
                "hashtags": hashtags(message), "file_ids": [], "pending_post_id": pending,
            }
            self._posts[post["id"]] = post
            if pending:
                self._pending[pending] = post["id"]
            if root is not None:
                root["update_at"] = now
            rendered = self._post_json(post)
            mentions = self._mentions(channel, user.id, message)
            self._count(channel, post, mentions)
            sender = f"@{user.username}"
            data = {  # app/notification.go, SendNotifications
                "channel_display_name": self._channel_name(channel, sender), "channel_name": channel.name,
                "channel_type": channel.type, "post": go_json(rendered), "sender_name": sender,
                "set_online": True, "team_id": channel.team_id,
            }
        self._publish("posted", data, channel_id=channel_id, mentions=mentions)
        return rendered

    def _channel_name(self, channel: Channel, sender: str) -> str:
        """PostNotification.GetChannelName: a DM is named for its sender, a group message for all
        its members (usernames, sorted, comma-separated), any other channel by its display name."""
        if channel.type == "D":
            return sender
        if channel.type == "G":
            return ", ".join(sorted(self._users[m].username for m in self._members[channel.id]))
        return channel.display_name

    def _count(self, channel: Channel, post: dict[str, Any], mentions: set[str]) -> None:
        """IncrementMentionCount for those mentioned; and a poster who is not a bot has read the
        channel up to their own post (CreatePost's MarkChannelsAsViewed)."""
        members, now = self._members[channel.id], post["create_at"]
        for user_id in mentions & members.keys():
            members[user_id].mention_count += 1
            members[user_id].mention_count_root += 0 if post["root_id"] else 1
            members[user_id].last_update_at = now
        poster = members.get(post["user_id"])
        if poster is not None and "from_bot" not in post["props"]:
            posts = [p for p in self._posts.values() if p["channel_id"] == channel.id]
            poster.last_viewed_at, poster.last_update_at = now, now
            poster.msg_count, poster.msg_count_root = len(posts), sum(1 for p in posts if not p["root_id"])
            poster.mention_count = poster.mention_count_root = 0

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
                post["hashtags"] = hashtags(message)
            if isinstance(patch.get("props"), dict):
                post["props"] = dict(patch["props"])
            if isinstance(patch.get("is_pinned"), bool):
                post["is_pinned"] = patch["is_pinned"]
            post["update_at"] = now
            rendered = self._post_json(post)
        self._publish("post_edited", {"post": go_json(rendered)}, channel_id=post["channel_id"])
        return rendered

    def _react(self, user: User, body: dict[str, Any]) -> dict[str, Any]:
        """SaveReactionForPost: only as oneself, on a post in a channel one may read; a repeat of the
        same emoji is stored once. ``reaction_added`` goes to the channel's members with
        ``data.reaction`` a JSON string of model.Reaction (app/reaction.go, sendReactionEvent)."""
        post_id, emoji = body.get("post_id"), body.get("emoji_name")
        if not isinstance(post_id, str) or not isinstance(emoji, str) or not emoji or len(emoji) > 64:
            raise MattermostError(400, "api.context.invalid_body_param.app_error", name="reaction")
        if body.get("user_id") != user.id:
            raise MattermostError(403, "api.context.permissions.app_error")
        with self._lock:
            post = self._posts.get(post_id)
            channel = self._channels.get(post["channel_id"]) if post is not None else None
            if post is None or channel is None or (user.id not in self._members[channel.id] and channel.type != "O"):
                raise MattermostError(403, "api.context.permissions.app_error")
            now = self._now()
            reaction = {  # model.Reaction, fields in declaration order
                "user_id": user.id, "post_id": post_id, "emoji_name": emoji, "create_at": now,
                "update_at": now, "delete_at": 0, "remote_id": None, "channel_id": channel.id,
            }
            self._reactions[(user.id, post_id, emoji)] = reaction
        self._publish("reaction_added", {"reaction": go_json(reaction)}, channel_id=channel.id)
        return reaction

    def _mentions(self, channel: Channel, sender_id: str, message: str) -> set[str]:
        """getExplicitMentionsAndKeywords: in a DM, the other side; elsewhere ``@username`` of a
        member and ``@channel``/``@all``/``@here``, outside code, and in a group message every
        member besides (GMMention: group messages notify like DMs). The word rules are
        StandardMentionParser.ProcessText's. Never the poster."""
        members = self._members[channel.id].keys()
        if channel.type == "D":
            return members - {sender_id}
        keywords = {"@" + self._users[m].username: {m} for m in members if m in self._users}
        keywords["@channel"] = keywords["@all"] = set(members)
        keywords["@here"] = members & {c.user_id for c in self._sockets if c.user_id}
        found: set[str] = set(members) if channel.type == "G" else set()

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
        user_id: str = "",
        omit_users: dict[str, bool] | None = None,
        mentions: Iterable[str] = (),
        data_for: Callable[[str], dict[str, Any]] | None = None,
    ) -> None:
        """Hub broadcast: ShouldSendEvent per connection (a live session; the one user, or the
        channel's members, or everyone; not the omitted), then the add_mentions hook. ``data_for``
        gives each receiving user their own data, as the sanitized/sensitive pairs of events do."""
        shown = broadcast(user_id=user_id, channel_id=channel_id, omit_users=omit_users)
        mentioned = set(mentions)
        with self._lock:
            members = self._members.get(channel_id, {})
            targets = [
                (c, data_for(c.user_id) if data_for else data)
                for c in self._sockets
                if c.user_id
                and self._token_owner(c.token) == c.user_id
                and c.user_id not in (omit_users or {})
                and (not user_id or c.user_id == user_id)
                and (not channel_id or c.user_id in members)
            ]
        for conn, payload in targets:
            own = dict(payload)
            if conn.user_id in mentioned:
                own["mentions"] = go_json([conn.user_id])
            conn.send({"event": event, "data": dict(sorted(own.items())), "broadcast": shown})

    def _user_typing(self, user_id: str, channel_id: str, parent_id: str, via: str) -> None:
        with self._lock:
            self.typing_events.append(Typing(user_id, channel_id, parent_id, via))
        self._publish(
            "typing",
            {"parent_id": parent_id, "user_id": user_id},
            channel_id=channel_id,
            omit_users={user_id: True},
        )

    def _user_updated(self, user: User) -> None:
        """sendUpdatedUserEvent: everyone else gets the profile as they may see it (a system admin
        whole, others sanitized), the user their own (a deactivated user has no session left)."""

        def sanitized(viewer: str) -> dict[str, Any]:
            return {"user": self._user_json(user, own=False, admin=self._users[viewer].is_admin)}

        self._publish("user_updated", {}, omit_users={user.id: True}, data_for=sanitized)
        self._publish("user_updated", {"user": self._user_json(user, own=True)}, user_id=user.id)

    def _remove(self, channel: Channel, user_id: str, remover_id: str) -> None:
        """removeUserFromChannel: ``user_removed`` to the members left, and to the one removed."""
        with self._lock:
            if self._members[channel.id].pop(user_id, None) is None:
                raise ValueError(f"{user_id} is not a member of {channel.name}")
        self._publish("user_removed", {"remover_id": remover_id, "user_id": user_id}, channel_id=channel.id)
        self._publish("user_removed", {"channel_id": channel.id, "remover_id": remover_id}, user_id=user_id)
