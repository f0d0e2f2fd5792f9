"""HTTP edges: /v1/whoami, /v1/query (JSON or Server-Sent Events), /v1/conversation, /healthz,
/readyz, /metrics."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from sleuth_common.health import alive
from sleuth_common.messages import HistoryTurn, JobProgress
from sleuth_common.messages.audit import Entry
from sleuth_gateway import asking, audit
from sleuth_gateway.asking import TIMEOUT_MESSAGE, Asking
from sleuth_gateway.auth import Identity, bearer_token, is_refused
from sleuth_gateway.body import parse_json_object, read_body
from sleuth_gateway.commands import Command, caller_access, parse_command, run_command
from sleuth_gateway.conversation import answer_message, question_message
from sleuth_gateway.errors import (
    ApiError,
    BadRequest,
    DependencyUnavailable,
    Forbidden,
    RateLimited,
)
from sleuth_gateway.middleware import on_finish
from sleuth_gateway.render import render_markdown
from sleuth_gateway.runtime import Gateway

log = logging.getLogger(__name__)

__all__ = [
    "api_error",
    "clear_conversation",
    "conversation",
    "healthz",
    "http_error",
    "metrics",
    "query",
    "readyz",
    "whoami",
]

_SSE_HEARTBEAT = 15.0
_MAX_HISTORY = 50


class QueryBody(BaseModel):
    model_config = ConfigDict(extra="ignore")

    query: str
    history: list[HistoryTurn] | None = Field(default=None, max_length=_MAX_HISTORY)
    review: bool = False


def _gw(request: Request) -> Gateway:
    return request.app.state.gateway


def _rid(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))


def _json(
    request: Request, body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({**body, "request_id": _rid(request)}, status_code=status, headers=headers)


def _note_refused(gw: Gateway, exc: ApiError, request_id: str, user: str, entry: Entry = "api") -> None:
    """Count (by the guard's reason), log and audit a refusal, wherever the caller is told about it."""
    audit.refusal(gw, exc, entry=entry, user=user, request_id=request_id)
    if exc.reason:
        gw.metrics.refused.labels(reason=exc.reason).inc()
    log.info("refused: %s", exc.message, extra={"request_id": request_id, "user": user, "status": exc.status})


async def api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    _note_refused(_gw(request), exc, _rid(request), getattr(request.state, "user", ""),
                  audit.entry_of_path(request.url.path))
    return _json(request, {"error": exc.message, **exc.extra}, exc.status, exc.headers)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _json(request, {"error": exc.detail}, exc.status_code, dict(exc.headers or {}))


async def _identify(request: Request, *, bucket: Literal["read", "none"] = "read") -> Identity:
    """The caller, authenticated and admitted: not one of Sleuth's own identities, within the
    requests one user may have in progress, and (``bucket="read"``) within their read bucket.
    Questions and posts take from the question bucket themselves, once their body is valid."""
    gw = _gw(request)
    cfg = gw.settings.gateway
    token = bearer_token(request.headers.get("authorization"))
    address = request.client.host if request.client else ""
    identity = await gw.authenticator.authenticate(token, address, entry=audit.entry_of_path(request.url.path))
    request.state.user = identity.user
    request.state.token = token  # for this request only: a job gets a fresh signed identity
    if is_refused(identity, cfg.refused_identities):
        raise Forbidden("service identities cannot use chat: sign in with your own credentials", reason="identity")
    gate = gw.requests_per_user
    if not gate.enter(identity.user):
        raise RateLimited(
            f"too many requests in flight: at most {gate.limit} at once; wait for one to finish", 1.0, reason="busy"
        )
    on_finish(request, lambda: gate.leave(identity.user))
    if bucket == "read":
        await _take_read(gw, identity)
    return identity


async def _take_read(gw: Gateway, identity: Identity) -> None:
    """One token from the user's read bucket (everything that is not a question or a post), or 429."""
    decision = await gw.read_ratelimiter.take(identity.user)
    if not decision.allowed:
        raise RateLimited(
            f"too many requests: try again in {max(1, round(decision.retry_after))} s",
            decision.retry_after,
            reason="read_rate",
        )


_take_question = asking.take_question


def _parse_query(raw: bytes, question_limit: int, max_depth: int) -> QueryBody:
    doc = parse_json_object(raw, max_depth, '{"query": "what is failing in team-a?"}')
    try:
        body = QueryBody.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise BadRequest(f"invalid request: {' '.join(problems.split())}") from None
    asking.check_question(body.query, question_limit)
    return body


def _wants_stream(request: Request) -> bool:
    flag = request.query_params.get("stream", "").lower()
    return flag in {"1", "true", "yes"} or "text/event-stream" in request.headers.get("accept", "")


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _stream(
    request: Request, events: AsyncIterator[str], background: BackgroundTask | None = None
) -> StreamingResponse:
    return StreamingResponse(
        events,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        background=background,
    )


# ---------------------------------------------------------------- routes


async def whoami(request: Request) -> Response:
    """``{"user", "groups", "access": {cluster: {"cluster_wide", "namespaces"}}}`` (the answer of
    the ``access`` command); ``"access": null`` and ``"access_error"`` while authz-cache cannot
    say, so signing in still works."""
    identity = await _identify(request)
    body: dict[str, Any] = {"user": identity.user, "groups": list(identity.groups)}
    try:
        body["access"] = (await caller_access(_gw(request), identity)).as_json()
    except DependencyUnavailable as exc:
        body.update(access=None, access_error=exc.message)
    return _json(request, body)


async def query(request: Request) -> Response:
    gw = _gw(request)
    cfg = gw.settings.gateway
    identity = await _identify(request, bucket="none")
    raw = await read_body(request, cfg.max_body_bytes, cfg.body_timeout)
    body = _parse_query(raw, cfg.question_limit, cfg.max_json_depth)
    command = parse_command(body.query)
    if command is None:
        # The same request again (X-Request-Id): the job it started, never a second one.
        resumed = await asking.resume(gw, identity, _chosen_id(request), body.query)
        if resumed is not None:
            await _take_read(gw, identity)
            return await _answer(request, resumed)
        await asking.check_capacity(gw, "api")
    slot = await asking.admit(gw, identity, "api")
    # Released when the response is finished (a stream's last event sent, or its client gone).
    on_finish(request, lambda: gw.inflight.release(identity.user, slot))
    if command is not None:
        return await _command(request, identity, body.query, command)
    return await _investigate(request, identity, body, slot)


def _chosen_id(request: Request) -> str:
    """The request id when the caller chose it (``X-Request-Id``), else "": a retry sends its own."""
    rid = _rid(request)
    return rid if request.headers.get("x-request-id") == rid else ""


async def _command(request: Request, identity: Identity, text: str, command: Command) -> Response:
    gw = _gw(request)
    rid = _rid(request)
    answer = await run_command(gw, identity, command, surface="api", token=request.state.token)
    await gw.conversations.append(identity.user, question_message(text, rid))
    await gw.conversations.append(identity.user, answer_message(answer, rid, command=command.name))
    payload = {
        "answer": answer,
        "answer_html": render_markdown(answer),
        "result": None,
        "user": identity.user,
        "command": command.name,
    }
    if _wants_stream(request):

        async def one() -> AsyncIterator[str]:
            yield _sse("result", {**payload, "request_id": rid})

        return _stream(request, one())
    return _json(request, payload)


async def _investigate(request: Request, identity: Identity, body: QueryBody, slot: str) -> Response:
    gw = _gw(request)
    rid = _rid(request)
    asked = await asking.submit(
        gw,
        identity,
        request.state.token,
        body.query,
        request_id=rid,
        origin="api",
        history=tuple(body.history) if body.history is not None else None,
        review=body.review,
        retry_id=_chosen_id(request),
        slot=slot,
    )
    return await _answer(request, asked)


async def _answer(request: Request, asked: Asking) -> Response:
    gw = _gw(request)
    if _wants_stream(request):
        return _stream(request, _job_events(gw, asked), background=BackgroundTask(asked.watch.close))
    return _json(request, await asking.wait(gw, asked))


async def _job_events(gw: Gateway, asked: Asking) -> AsyncIterator[str]:
    """SSE: ``accepted``, then ``progress``…, then ``result`` (or ``error``); ``: keepalive`` comments."""
    job, rid = asked.job, asked.request_id
    try:
        yield _sse("accepted", {"job_id": job.id, "user": asked.identity.user, "request_id": rid,
                                "resumed": asked.resumed})
        try:
            async for item in asked.watch.events(job.deadline, heartbeat=_SSE_HEARTBEAT):
                if item is None:
                    yield ": keepalive\n\n"
                elif isinstance(item, JobProgress):
                    yield _sse("progress", item.model_dump(mode="json", exclude={"kind", "schema_version"}))
                else:
                    payload = await asking.finish(gw, asked, item)
                    yield _sse("result", {**payload, "request_id": rid})
        except TimeoutError:
            await asking.finish_timeout(gw, asked)
            yield _sse(
                "error", {"error": TIMEOUT_MESSAGE, "status": 504, "job_id": job.id, "request_id": rid}
            )
    finally:
        await asked.watch.close()


async def conversation(request: Request) -> Response:
    identity = await _identify(request)
    messages = await _gw(request).conversations.messages(identity.user)
    for msg in messages:
        if msg.get("role") == "assistant":
            msg["html"] = render_markdown(str(msg.get("text", "")))
    return _json(request, {"user": identity.user, "messages": messages})


async def clear_conversation(request: Request) -> Response:
    identity = await _identify(request)
    await _gw(request).conversations.clear(identity.user)
    return _json(request, {"user": identity.user, "cleared": True})


async def healthz(request: Request) -> Response:
    """Liveness: 200 while the process answers, whatever NATS and Redis do."""
    return _json(request, alive())


async def readyz(request: Request) -> Response:
    """Readiness: 200 when NATS (with the streams and the CHAT consumer) and Redis answer, else
    503 naming what does not."""
    gw = _gw(request)
    # Chat adapters are shown, never decide: a Mattermost outage must not take the API down.
    readiness = await gw.deps.readiness(**{name: state() for name, state in gw.status.items()})
    return _json(request, readiness.body(), readiness.status_code)


async def metrics(request: Request) -> Response:
    gw = _gw(request)
    await gw.refresh_metrics()
    return Response(gw.metrics.render(), media_type=CONTENT_TYPE_LATEST)
