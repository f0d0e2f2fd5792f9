"""Posts to chat (``sleuth.chat.outbound``, JetStream stream ``CHAT``; DESIGN §1).

Any service publishes a ``ChatPost``; the gateway delivers it to its target once: the stream
deduplicates by ``Nats-Msg-Id`` = ``post.id`` and the gateway stores posts keyed by id, so a
redelivered or republished post never shows twice.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import Field

from sleuth_common.messages.base import Message

__all__ = ["ChatPost", "web_channel", "web_target"]

WEB_PREFIX = "web:"


def web_target(channel: str) -> str:
    """The chat target of a built-in web-chat channel (``web:<channel>``)."""
    return f"{WEB_PREFIX}{channel}"


def web_channel(target: str) -> str | None:
    """The web-chat channel a target names, or None for other chat systems."""
    return target[len(WEB_PREFIX) :] if target.startswith(WEB_PREFIX) else None


class ChatPost(Message):
    kind: Literal["chat.post"] = "chat.post"
    schema_version: int = 1
    id: str
    """Idempotency key: the same id is shown once (alert answers use the batch id)."""
    target: str
    """Where to post: ``web:<channel>``, ``mattermost:<channel_id>``."""
    text: str
    """Markdown."""
    author: str = "sleuth"
    origin: str = ""
    """What made the post: ``alert``, ``command``, ``schedule`` …"""
    created_at: float = Field(default_factory=time.time, description="unix seconds")
    meta: dict[str, str] = Field(default_factory=dict)
    """Small facts for machines (batch id, cluster, job id); never a secret. Keys with a meaning
    beyond the poster:

    - ``readers``: on a post whose content was fitted to the scopes of the people reading
      ``target`` (an alert answer, or an alert post that counts or lists alerts by scope), a JSON
      array of the identities it was fitted to — the investigating identity and every channel
      member it was intersected with — as ``sleuth_common.channels.audience_claims`` writes them
      (``user|group,group``, sorted; a group member as ``|group``). A deliverer must not show
      the post to anyone who is not among them: e.g. the gateway refuses to deliver it when a
      current member of the channel is not (someone joined after ``alerts on``). A post without
      ``readers`` carries nothing fitted to a scope.
    - alert posts also carry ``batch``, ``cluster``, ``outcome`` and, for an answer, ``status``.
    """
