"""Feedback on an answer — 👍 ``up``, 👎 ``down``, "fixed by: ..." — from every surface: ``POST
/v1/feedback``, the MCP tool ``feedback`` (and the web chat through the API). The gateway says who
gives it (the person it authenticated); one agent keeps it with the answer's incident
(``<prefix>.agent.feedback``) and takes it only from the answer's asker or readers: to anyone else,
a job they did not get reads exactly like one that does not exist (404, the same text).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from sleuth_common.bus import BusError
from sleuth_common.messages import FeedbackReply, FeedbackRequest
from sleuth_gateway import handlers
from sleuth_gateway.auth import Identity
from sleuth_gateway.body import parse_json_object, read_body
from sleuth_gateway.errors import BadRequest, DependencyUnavailable, NotFound
from sleuth_gateway.runtime import Gateway

log = logging.getLogger(__name__)

__all__ = ["FeedbackBody", "feedback", "give_feedback"]

EXAMPLE = '{"job_id": "3f2a…", "verdict": "down", "fixed_by": "raised the memory limit to 1Gi"}'


class FeedbackBody(BaseModel):
    model_config = ConfigDict(extra="ignore")

    job_id: str
    verdict: str = ""
    fixed_by: str = ""


async def give_feedback(gw: Gateway, identity: Identity, job_id: str, verdict: str, fixed_by: str,
                        origin: str) -> FeedbackReply:
    """Feedback by ``identity`` on ``job_id``'s answer: the agent's reply when it took it; ``BadRequest``
    for malformed feedback, ``NotFound`` for an answer this person did not get (or none), and
    ``DependencyUnavailable`` when no agent or Redis can keep it."""
    try:
        req = FeedbackRequest(job_id=job_id, verdict=verdict, fixed_by=fixed_by,  # type: ignore[arg-type]
                              user=identity.user, groups=identity.groups, origin=origin)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'feedback'}: {e['msg']}"
                             for e in exc.errors()[:3])
        raise BadRequest(f"invalid feedback: {' '.join(problems.split())}", reason="feedback") from None
    try:
        reply = await gw.bus.agent_feedback(req, gw.settings.gateway.alerts_timeout)
    except BusError as exc:
        raise DependencyUnavailable(f"feedback cannot be kept now ({exc}); try again shortly") from exc
    if reply.reason == "unknown":
        raise NotFound(reply.text, reason="feedback_unknown")
    if not reply.ok:
        raise DependencyUnavailable(reply.text)
    return reply


async def feedback(request: Request) -> Response:
    """``POST /v1/feedback`` ``{"job_id", "verdict"?: "up"|"down", "fixed_by"?}`` → ``{"ok", "text",
    "job_id"}``; 404 for an answer the caller did not get."""
    gw: Gateway = request.app.state.gateway
    cfg = gw.settings.gateway
    identity = await handlers._identify(request)
    raw = await read_body(request, cfg.max_body_bytes, cfg.body_timeout)
    doc: dict[str, Any] = parse_json_object(raw, cfg.max_json_depth, EXAMPLE)
    try:
        body = FeedbackBody.model_validate(doc)
    except ValidationError:
        raise BadRequest(f"invalid request: expected {EXAMPLE}", reason="feedback") from None
    reply = await give_feedback(gw, identity, body.job_id, body.verdict, body.fixed_by, "api")
    return handlers._json(request, {"ok": reply.ok, "text": reply.text, "job_id": body.job_id})
