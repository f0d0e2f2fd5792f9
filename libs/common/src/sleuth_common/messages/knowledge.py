"""The chat command ``kb`` (``sleuth.agent.kb``): runbooks the agents link in answers.

Core request/reply like ``diagnostics``: the gateway asks for a person it authenticated, one agent
of queue group ``agent`` answers into a branch of the gateway's inbox (``Subjects.agent_kb_reply``).
The gateway says who asks, whether they may edit (``editor``: a cluster admin) and what they may
read (``scope``): ``show`` and ``list`` give only runbooks that scope allows.
"""

from __future__ import annotations

from typing import Literal

from sleuth_common.messages.authz import ScopeReply
from sleuth_common.messages.base import Message

__all__ = ["KbOp", "KbReply", "KbRequest"]

KbOp = Literal["add", "show", "list", "rm"]


class KbRequest(Message):
    kind: Literal["agent.kb.request"] = "agent.kb.request"
    schema_version: int = 1
    op: KbOp
    user: str
    editor: bool = False
    """May add and remove runbooks (the gateway decides: a cluster admin)."""
    scope: ScopeReply
    """What the asker may read: ``show``/``list`` answer only with runbooks it allows."""
    id: str = ""
    """The runbook (``add``, ``show``, ``rm``)."""
    text: str = ""
    """The runbook as written, front matter and body (``add``)."""


class KbReply(Message):
    kind: Literal["agent.kb.reply"] = "agent.kb.reply"
    schema_version: int = 1
    ok: bool
    text: str
    """The answer in Markdown."""
