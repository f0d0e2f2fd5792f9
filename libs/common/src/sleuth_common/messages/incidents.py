"""Incident memory (``sleuth.incidents.recorded``): what an agent remembers of a finished investigation.

One agent records an incident when it answered a job with a diagnosis, stores it in Redis and
announces it here; every agent (and only agents: the subject is in no other service's NATS
permissions, not even the audit reader's) adds it to its "seen before" index. The record never
holds raw tool output: the evidence is kept as a normalised *signature* (reasons, exit codes, error
messages with numbers, ids, hashes and IPs replaced), beside the root cause's summary and the
actions' text, which name objects of the asker's own namespaces — so an incident is shown only to
readers who may read every namespace it names (``namespaces``) on every cluster it may be from.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sleuth_common.messages.base import Message

__all__ = ["FIXED_BY_MAX", "FeedbackReply", "FeedbackRequest", "Incident", "IncidentRecorded", "Verdict"]

Verdict = Literal["", "up", "down"]

FIXED_BY_MAX = 500
"""Longest "fixed by" text kept with an incident."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class Incident(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    clusters: tuple[str, ...]
    """The cluster it happened on; several when the investigation covered more than one that has the
    namespace (a reader must be allowed on every one)."""
    namespaces: tuple[str, ...] = ()
    """Every namespace the record names: the root cause's, the decisive evidence's, any the text
    mentions. A reader needs all of them."""
    cluster_wide_only: bool = False
    """A cluster-scoped root cause or evidence read across namespaces: for cluster-wide readers only."""
    family: str
    resource: str
    """``Kind/namespace/name`` (or ``Kind/name``) of the object where the fix belongs."""
    confidence: str = ""
    alerts: tuple[str, ...] = ()
    """The alert names the job answered, if any."""
    signature: tuple[str, ...] = ()
    """Normalised highlights of the evidence the root cause cites."""
    summary: str = ""
    actions: tuple[str, ...] = ()
    at: float = 0.0
    """When it was answered (unix seconds)."""
    user: str = ""
    """Who asked."""
    origin: str = ""
    verdict: Verdict = ""
    """Feedback on the answer: 👍 ``up``, 👎 ``down``."""
    fixed_by: str = ""
    """What fixed it, as someone told Sleuth ("fixed by: ...")."""
    readers: tuple[str, ...] = ()
    """The user names the answer was shown to besides the asker (a channel's members), who may give
    feedback on it as the asker may."""
    reader_groups: tuple[str, ...] = ()
    """Groups of a channel's audience (a member given as a group): their members may give feedback."""
    feedback_by: str = ""
    """Who gave the latest feedback."""
    feedback_at: float = 0.0
    question: str = ""
    """The asker's question (shortened), for ``sleuth incidents export``; never shown in an answer."""
    commands: tuple[str, ...] = ()
    """The commands of the decisive evidence (what ran, never what it returned), for the export."""

    def may_give_feedback(self, user: str, groups: tuple[str, ...] = ()) -> bool:
        """Whether ``user`` (with ``groups``) got this answer: the asker or one of its readers."""
        if not user:
            return False
        return user == self.user or user in self.readers or bool(set(groups) & set(self.reader_groups))


class IncidentRecorded(Message):
    kind: Literal["incidents.recorded"] = "incidents.recorded"
    schema_version: int = 1
    incident: Incident


class FeedbackRequest(Message):
    """👍/👎 and "fixed by: ..." on an answer (``<prefix>.agent.feedback``, gateway → one agent; reply
    :class:`FeedbackReply` into a branch of the gateway's inbox). ``user``/``groups`` are who the
    gateway authenticated; only the answer's asker or readers may give it."""

    kind: Literal["agent.feedback.request"] = "agent.feedback.request"
    schema_version: int = 1
    job_id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,100}$")
    verdict: Verdict = ""
    fixed_by: str = Field(default="", max_length=FIXED_BY_MAX)
    user: str = Field(min_length=1)
    groups: tuple[str, ...] = ()
    origin: str = ""
    """Where it was given (``api``, ``mcp``, ``web``, ``chat``)."""

    @field_validator("fixed_by")
    @classmethod
    def _plain_text(cls, value: str) -> str:
        """One line of plain text: no control character (tabs and line breaks included) and no
        invisible formatting character (Unicode category Cf: bidi marks, zero-width spaces …) —
        others read it, so it may not reorder, hide or break out of the line it is shown in."""
        if _CONTROL.search(value) or any(unicodedata.category(c) in ("Cc", "Cf") for c in value):
            raise ValueError("control and invisible formatting characters (line breaks, tabs, bidi marks, "
                             "zero-width spaces) are not allowed in the fix text")
        return value.strip()

    @model_validator(mode="after")
    def _something(self) -> FeedbackRequest:
        if not self.verdict and not self.fixed_by:
            raise ValueError("give a verdict (up or down) or what fixed it")
        return self


class FeedbackReply(Message):
    kind: Literal["agent.feedback.reply"] = "agent.feedback.reply"
    schema_version: int = 1
    ok: bool
    text: str
    """What to tell the person (Markdown)."""
    reason: Literal["", "unknown", "unavailable", "disabled"] = ""
    """Why not: ``unknown`` — no such answer for this person (a job they did not get reads the same)."""
