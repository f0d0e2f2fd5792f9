"""Asking a question for one signed-in person: the path ``POST /v1/query`` and the MCP tool
``ask`` share, so both admit, submit, remember and count a question the same way.

1. ``check_question`` — not empty, within ``gateway.question_limit`` (400 / 413).
2. ``admit`` — one token from the person's question bucket and one of their in-flight slots
   (429 with Retry-After); the caller gives the slot back with ``gw.inflight.release`` when its
   answer is delivered (or its client went away).
3. ``submit`` — a fresh signed identity for the job (authz-cache, never the token itself), the
   ``InvestigationJob`` on JetStream, the job's progress and result subjects subscribed first,
   the question in the person's conversation.
4. ``wait`` — progress to a callback (and ``None`` after ``heartbeat`` quiet seconds), then
   ``finish``: the answer in the conversation, the latency metric, the payload both surfaces
   return. A deadline passed is ``finish_timeout`` and ``JobTimeout`` (504).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sleuth_common.channels import audience_claims
from sleuth_common.identity import IdentityError
from sleuth_common.messages import HistoryTurn, InvestigationJob, InvestigationResult, JobProgress, Requester
from sleuth_common.messages.jobs import Origin
from sleuth_gateway.auth import Identity
from sleuth_gateway.bus import BusError, JobWatch
from sleuth_gateway.conversation import ConversationStore, answer_message, question_message
from sleuth_gateway.errors import (
    BadRequest,
    BusUnavailable,
    DependencyUnavailable,
    JobTimeout,
    PayloadTooLarge,
    RateLimited,
)
from sleuth_gateway.render import render_markdown
from sleuth_gateway.runtime import Gateway

log = logging.getLogger(__name__)

__all__ = [
    "TIMEOUT_MESSAGE",
    "Asking",
    "Memory",
    "Progress",
    "admit",
    "check_question",
    "finish",
    "finish_timeout",
    "submit",
    "take_question",
    "wait",
]

TIMEOUT_MESSAGE = "the investigation did not finish in time"

Progress = Callable[[JobProgress | None], Awaitable[None]]
"""Called with each progress message of a job, and with ``None`` after quiet ``heartbeat`` seconds."""


@dataclass(frozen=True)
class Memory:
    """Where a conversation is remembered: a store and a key in it (a person's own
    conversation, or a chat thread's)."""

    store: ConversationStore
    key: str


@dataclass(frozen=True)
class Asking:
    """One submitted question: its job, the subscription to its answer, who asked, and when."""

    job: InvestigationJob
    watch: JobWatch
    identity: Identity
    request_id: str
    t0: float
    memory: Memory | None
    """Where the question and its answer are remembered; ``None``: the caller remembers them
    (after it showed the answer)."""


def check_question(text: str, limit: int, name: str = "query") -> None:
    """400 for an empty question (``name``: what the caller called it), 413 for one longer than
    ``limit`` characters."""
    if not text.strip():
        raise BadRequest(f"{name} must not be empty")
    if len(text) > limit:
        raise PayloadTooLarge(f"the question is {len(text)} characters long; the limit is {limit} characters")


async def take_question(gw: Gateway, identity: Identity, what: str) -> None:
    """One token from the user's question bucket (questions and channel posts), or 429."""
    decision = await gw.ratelimiter.take(identity.user)
    if not decision.allowed:
        gw.metrics.rate_limited.inc()
        raise RateLimited(
            f"too many {what}: try again in {max(1, round(decision.retry_after))} s", decision.retry_after
        )


async def admit(gw: Gateway, identity: Identity) -> str:
    """A question's admission: a token from the question bucket, then an in-flight slot (its id,
    to give back with ``gw.inflight.release(identity.user, slot)``); 429 when either is used up."""
    await take_question(gw, identity, "questions")
    slot = await gw.inflight.acquire(identity.user)
    if slot is None:
        raise RateLimited(
            f"too many questions in flight: at most {gw.inflight.limit} at once; wait for one to finish",
            2.0,
            reason="inflight",
        )
    return slot


async def submit(
    gw: Gateway,
    identity: Identity,
    token: str | None,
    question: str,
    *,
    request_id: str,
    origin: Origin,
    history: tuple[HistoryTurn, ...] | None = None,
    review: bool = False,
    clusters: tuple[str, ...] = (),
    audience: tuple[Requester, ...] = (),
    remember: bool = True,
) -> Asking:
    """Publish the job for ``question`` and return what waits for its answer; 503 when the bus
    cannot take it.

    ``token``: the person's bearer token (authz-cache signs who they are), or ``None`` for a
    chat user the gateway mapped itself (it signs as ``sleuth-chat``). ``audience``: everyone
    else who reads the answer (a chat channel's members). ``history`` ``None``: the last turns of
    the person's own conversation, where the question and its answer are then stored;
    ``remember=False``: nothing is stored (the caller keeps its own memory, e.g. a chat thread's)."""
    cfg = gw.settings.gateway
    t0 = time.monotonic()
    memory = Memory(gw.conversations, identity.user)
    if history is None:
        history = await memory.store.history(memory.key, cfg.history_turns)
    job_id = uuid.uuid4().hex
    # The agent trusts the requester only with a signature over it (a fresh one per job):
    # authz-cache's over a login, or the gateway's own over a chat user it mapped.
    if token is not None:
        assertion = await gw.authenticator.assertion(token)
    else:
        assertion = _chat_assertion(gw, identity, job_id, audience)
    job = InvestigationJob(
        id=job_id,
        origin=origin,
        requester=Requester(user=identity.user, groups=identity.groups),
        question=question,
        history=history,
        clusters=clusters,
        audience=audience,
        review=review,
        deadline=time.time() + cfg.answer_timeout,
        reply_subject=gw.bus.subjects.jobs_done(job_id),
        identity=assertion,
    )
    try:
        watch = await gw.bus.watch(job.id)
    except BusError as exc:
        raise BusUnavailable(f"the investigation service is unavailable ({exc}); try again shortly") from exc
    try:
        await gw.bus.submit(job)
    except BusError as exc:
        await watch.close()
        raise BusUnavailable(f"the investigation service is unavailable ({exc}); try again shortly") from exc
    log.info(
        "question submitted",
        extra={
            "request_id": request_id,
            "user": identity.user,
            "job_id": job.id,
            "origin": origin,
            "chars": len(question),
        },
    )
    if not remember:
        return Asking(job, watch, identity, request_id, t0, None)
    await memory.store.append(memory.key, question_message(question, request_id))
    return Asking(job, watch, identity, request_id, t0, memory)


def _chat_assertion(gw: Gateway, identity: Identity, job_id: str, audience: tuple[Requester, ...]) -> str:
    signer = gw.chat_signer
    if signer is None:
        raise DependencyUnavailable(
            "chat questions cannot be investigated: the gateway has no identity signing key "
            "(identity.signing_key_file)"
        )
    try:
        return signer.mint(
            identity.user, identity.groups, audience=gw.settings.identity.job_audience, job=job_id,
            members=audience_claims(audience),
        )
    except IdentityError as exc:
        raise DependencyUnavailable(f"the chat identity cannot be signed ({exc})") from exc


async def wait(
    gw: Gateway, asking: Asking, on_progress: Progress | None = None, heartbeat: float | None = None
) -> dict[str, Any]:
    """The answer's payload (see ``finish``), progress passed to ``on_progress`` on the way;
    ``JobTimeout`` at the job's deadline. Closes the job's subscription either way."""
    try:
        async for item in asking.watch.events(asking.job.deadline, heartbeat=heartbeat):
            if isinstance(item, InvestigationResult):
                return await finish(gw, asking, item)
            if on_progress is not None:
                await on_progress(item)
    except TimeoutError:
        await finish_timeout(gw, asking)
        raise JobTimeout(TIMEOUT_MESSAGE, job_id=asking.job.id) from None
    finally:
        await asking.watch.close()
    raise JobTimeout(TIMEOUT_MESSAGE, job_id=asking.job.id)  # pragma: no cover - events() ends with a result


async def finish(gw: Gateway, asking: Asking, result: InvestigationResult) -> dict[str, Any]:
    """Count and remember a delivered answer; the payload ``/v1/query`` answers with (without
    ``request_id``): ``answer``, ``answer_html``, ``result``, ``user``, ``job_id``."""
    identity, job = asking.identity, asking.job
    gw.metrics.query_seconds.observe(time.monotonic() - asking.t0)
    log.info(
        "answer delivered",
        extra={
            "request_id": asking.request_id,
            "user": identity.user,
            "job_id": job.id,
            "status": result.status,
        },
    )
    if asking.memory is not None:
        await asking.memory.store.append(
            asking.memory.key,
            answer_message(result.answer_markdown, asking.request_id, result=result, job_id=job.id),
        )
    return {
        "answer": result.answer_markdown,
        "answer_html": render_markdown(result.answer_markdown),
        "result": result.public_json(),
        "user": identity.user,
        "job_id": job.id,
    }


async def finish_timeout(gw: Gateway, asking: Asking) -> None:
    """Count and remember a question whose answer did not come in time."""
    identity, job = asking.identity, asking.job
    gw.metrics.query_seconds.observe(time.monotonic() - asking.t0)
    log.warning(
        "investigation timed out",
        extra={"request_id": asking.request_id, "user": identity.user, "job_id": job.id},
    )
    if asking.memory is not None:
        await asking.memory.store.append(
            asking.memory.key, answer_message(f"Sorry: {TIMEOUT_MESSAGE}.", asking.request_id, job_id=job.id)
        )
