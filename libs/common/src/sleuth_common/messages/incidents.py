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

from typing import Literal

from pydantic import BaseModel, ConfigDict

from sleuth_common.messages.base import Message

__all__ = ["Incident", "IncidentRecorded", "Verdict"]

Verdict = Literal["", "up", "down"]


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


class IncidentRecorded(Message):
    kind: Literal["incidents.recorded"] = "incidents.recorded"
    schema_version: int = 1
    incident: Incident
