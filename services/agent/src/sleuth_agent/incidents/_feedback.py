"""Feedback on an answer (``<prefix>.agent.feedback``, queue group ``agent``): 👍 ``up``, 👎 ``down``
and "fixed by: ...", kept with the answer's incident.

- **Who**: only the asker of that answer, or one of the readers it was shown to (a channel's
  members, recorded with the incident). Anyone else gets exactly the reply of a job id that does not
  exist — so the reply never says that a job exists, its family or its resource. Only diagnosed
  answers are remembered as incidents, so only they take feedback.
- **Where it goes**: the incident in Redis is replaced (``IncidentStore.put``) and announced on
  ``<prefix>.incidents.recorded``, so every agent's index has the verdict and the fix; "seen before"
  prints the fix text. A "fixed by" naming another namespace (``Kind/ns/name``, ``-n ns``) makes the
  incident visible only to readers of that namespace too.
- **Redis down**: "try again", whatever the job id (never a different reply for a job that exists).
- **Metric** ``sleuth_agent_feedback_total{verdict,family}`` counts only accepted feedback (the family
  of a job someone may not give feedback on is never a label).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from faststream.nats import NatsRouter
from prometheus_client import Counter
from redis.exceptions import RedisError

from sleuth_agent._responders import command_router
from sleuth_agent.incidents._record import namespaces_named
from sleuth_agent.incidents._store import IncidentMemory
from sleuth_common.messages import FeedbackReply, FeedbackRequest
from sleuth_common.subjects import Subjects

log = logging.getLogger(__name__)

__all__ = ["FeedbackResponder", "feedback_router", "unknown_answer"]

UNAVAILABLE = "Feedback not stored: the incident store (Redis) is unavailable; try again shortly."
DISABLED = "Feedback is not kept here (incident memory is off)."


def unknown_answer(job_id: str) -> str:
    """The reply for a job that does not exist, is not a diagnosis, or that the person did not get."""
    return (f"No answer `{job_id}` that you can give feedback on: only its asker and the readers it was shown to "
            "may, on answers with a diagnosis.")


class FeedbackResponder:
    def __init__(self, memory: IncidentMemory | None, given: Counter, refused: Counter) -> None:
        self.memory = memory
        self.given = given
        self.refused = refused

    async def reply(self, req: FeedbackRequest) -> FeedbackReply:
        if self.memory is None:
            return FeedbackReply(ok=False, text=DISABLED, reason="disabled")
        try:
            incident = await self.memory.find(req.job_id)
        except (RedisError, OSError, TimeoutError) as e:
            log.warning("feedback by %s not taken: Redis unavailable (%s)", req.user, e)
            self.refused.labels("unavailable").inc()
            return FeedbackReply(ok=False, text=UNAVAILABLE, reason="unavailable")
        if incident is None or not incident.may_give_feedback(req.user, req.groups):
            log.info("feedback by %s refused: no answer they may give feedback on", req.user,
                     extra={"job_id": req.job_id})
            self.refused.labels("unknown").inc()
            return FeedbackReply(ok=False, text=unknown_answer(req.job_id), reason="unknown")
        update: dict[str, object] = {"feedback_by": req.user, "feedback_at": time.time()}
        if req.verdict:
            update["verdict"] = req.verdict
        if req.fixed_by:
            update["fixed_by"] = req.fixed_by
            update["namespaces"] = tuple(sorted(set(incident.namespaces) | namespaces_named(req.fixed_by)))
        if not await self.memory.replace(incident.model_copy(update=update)):
            self.refused.labels("unavailable").inc()
            return FeedbackReply(ok=False, text=UNAVAILABLE, reason="unavailable")
        self.given.labels(req.verdict or "none", incident.family).inc()
        log.info("feedback %s by %s (%s)", req.verdict or "fix", req.user, req.origin or "?",
                 extra={"job_id": req.job_id})
        return FeedbackReply(ok=True, text=_thanks(req))


def _thanks(req: FeedbackRequest) -> str:
    parts = []
    if req.verdict == "up":
        parts.append("marked helpful 👍")
    elif req.verdict == "down":
        parts.append("marked wrong 👎")
    if req.fixed_by:
        parts.append("the fix is noted: it shows under \"Seen before\" when this failure comes back")
    return f"Thanks — answer `{req.job_id}` {' and '.join(parts)}."


FEEDBACK_WORKERS = 4


def feedback_router(responder: Callable[[], FeedbackResponder | None], subjects: Subjects, *,
                    crashes: Counter | None = None) -> NatsRouter:
    """The subscriber of ``<prefix>.agent.feedback`` (see :func:`~sleuth_agent._responders.command_router`)."""
    return command_router(subjects.agent_feedback, subjects.agent_queue, FeedbackRequest, FeedbackReply,
                          responder, name="feedback", workers=FEEDBACK_WORKERS, crashes=crashes)
