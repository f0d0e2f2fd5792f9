"""Asking a question for one signed-in person: the path ``POST /v1/query`` and the MCP tool
``ask`` share, so both admit, submit, remember and count a question the same way.

1. ``check_question`` — not empty, within ``gateway.question_limit`` (400 / 413).
2. ``check_capacity`` — the agents' queue (JOBS) within ``gateway.max_queue_depth`` and
   ``max_queue_wait``, else 503 "Sleuth is busy" with Retry-After: a new question is not taken
   when it could not be answered in time. Commands and retries of an accepted question skip it.
3. ``admit`` — one token from the person's question bucket and one of their in-flight slots
   (429 with Retry-After); the caller gives the slot back with ``gw.inflight.release`` when its
   answer is delivered (or its client went away).
4. ``submit`` — a fresh signed identity for the job (authz-cache, never the token itself), the
   ``InvestigationJob`` on JetStream, the job's progress and result subjects subscribed first,
   the question in the person's conversation.
5. ``wait`` — progress to a callback (and ``None`` after ``heartbeat`` quiet seconds), then
   ``finish``: the answer in the conversation (once per job), the latency metric, the payload
   both surfaces return. A deadline passed is ``finish_timeout`` and ``JobTimeout`` (504).

A request id the caller chose (``X-Request-Id``) names the question: the same person sending it
again — the web chat reconnecting after the gateway restarted, an MCP or API client retrying —
gets the job it started (``resume``, or ``submit`` losing a race to a twin), its answer kept in
RESULTS or still to come; never a second investigation (sleuth_gateway.pending).
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
    Busy,
    Conflict,
    DependencyUnavailable,
    JobTimeout,
    PayloadTooLarge,
    RateLimited,
)
from sleuth_gateway.metrics import Surface
from sleuth_gateway.pending import PendingJob, question_digest
from sleuth_gateway.render import render_markdown
from sleuth_gateway.runtime import Gateway

log = logging.getLogger(__name__)

__all__ = [
    "SURFACE_OF_ORIGIN",
    "TIMEOUT_MESSAGE",
    "Asking",
    "Memory",
    "Progress",
    "admit",
    "check_capacity",
    "check_question",
    "finish",
    "finish_timeout",
    "resume",
    "submit",
    "take_question",
    "wait",
]

TIMEOUT_MESSAGE = "the investigation did not finish in time"

SURFACE_OF_ORIGIN: dict[str, Surface] = {"api": "api", "mcp": "mcp", "chat": "mattermost"}
"""The surface a question asked through the gateway came in on, by its job's origin."""

Progress = Callable[[JobProgress | None], Awaitable[None]]
"""Called with each progress message of a job, and with ``None`` after quiet ``heartbeat`` seconds."""


@dataclass(frozen=True)
class Memory:
    """Where a conversation is remembered: a store and a key in it (a person's own
    conversation, or a chat thread's)."""

    store: ConversationStore
    key: str


@dataclass(frozen=True)
class JobRef:
    """What waiting for a job needs of it."""

    id: str
    deadline: float
    """Unix seconds."""


@dataclass(frozen=True)
class Asking:
    """One submitted question: its job, the subscription to its answer, who asked, and when."""

    job: JobRef
    watch: JobWatch
    identity: Identity
    request_id: str
    t0: float
    memory: Memory | None
    """Where the question and its answer are remembered; ``None``: the caller remembers them
    (after it showed the answer)."""
    resumed: bool = False
    """A job asked before (a retry with the same request id): not counted again."""
    slot: str = ""
    """The in-flight slot the job was admitted with (given back with its answer)."""
    surface: Surface = "api"
    """Where the question came in (``sleuth_gateway_messages_total``)."""


def check_question(text: str, limit: int, name: str = "query") -> None:
    """400 for an empty question (``name``: what the caller called it), 413 for one longer than
    ``limit`` characters."""
    if not text.strip():
        raise BadRequest(f"{name} must not be empty")
    if len(text) > limit:
        raise PayloadTooLarge(f"the question is {len(text)} characters long; the limit is {limit} characters")


async def check_capacity(gw: Gateway, surface: Surface) -> None:
    """503 (``Busy``, with Retry-After) when more jobs wait for an agent than
    ``gateway.max_queue_depth``, or the oldest has waited longer than ``max_queue_wait``. The
    queue is read at most every few seconds for all questions; when it cannot be read the
    question is taken (counted in ``sleuth_gateway_queue_unchecked``): a metrics read failing
    must not take Sleuth down."""
    cfg = gw.settings.gateway
    if not cfg.max_queue_depth and not cfg.max_queue_wait:
        return
    queue = await gw.jobs_queue()
    if queue is None:
        gw.metrics.queue_unchecked.inc()
        return
    deep = bool(cfg.max_queue_depth) and queue.pending > cfg.max_queue_depth
    slow = bool(cfg.max_queue_wait) and queue.pending_oldest > cfg.max_queue_wait
    if not (deep or slow):
        return
    gw.metrics.message(surface, "busy")
    log.info("question refused: JOBS queue over its bound", extra={"pending": queue.pending,
             "pending_oldest_s": round(queue.pending_oldest, 1), "surface": surface})
    # No figures for the asker: how much others ask is not theirs to read.
    seconds = max(1, int(cfg.busy_retry_after + 0.999))
    raise Busy(f"Sleuth is busy with other questions; try again in {seconds} s", cfg.busy_retry_after)


async def take_question(gw: Gateway, identity: Identity, what: str, surface: Surface) -> None:
    """One token from the user's question bucket (questions and channel posts), or 429."""
    decision = await gw.ratelimiter.take(identity.user)
    if not decision.allowed:
        gw.metrics.rate_limited.inc()
        gw.metrics.message(surface, "rate_limited")
        raise RateLimited(
            f"too many {what}: try again in {max(1, round(decision.retry_after))} s", decision.retry_after
        )


async def admit(gw: Gateway, identity: Identity, surface: Surface) -> str:
    """A question's admission: a token from the question bucket, then an in-flight slot (its id,
    to give back with ``gw.inflight.release(identity.user, slot)``); 429 when either is used up."""
    await take_question(gw, identity, "questions", surface)
    slot = await gw.inflight.acquire(identity.user)
    if slot is None:
        gw.metrics.message(surface, "rate_limited")
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
    retry_id: str = "",
    slot: str = "",
    surface: str = "",
    target: dict[str, Any] | None = None,
) -> Asking:
    """Publish the job for ``question`` and return what waits for its answer; 503 when the bus
    cannot take it.

    ``token``: the person's bearer token (authz-cache signs who they are), or ``None`` for a
    chat user the gateway mapped itself (it signs as ``sleuth-chat``). ``audience``: everyone
    else who reads the answer (a chat channel's members). ``history`` ``None``: the last turns of
    the person's own conversation, where the question and its answer are then stored;
    ``remember=False``: nothing is stored (the caller keeps its own memory, e.g. a chat thread's).

    ``retry_id``: the request id the caller chose; when this person asked with it before, the
    ``Asking`` of that job (see ``resume``). ``slot``: the admission's in-flight slot. ``surface``
    and ``target``: where a gateway restarted meanwhile delivers the answer (default: the person's
    conversation when ``remember``, else nowhere)."""
    cfg = gw.settings.gateway
    t0 = time.monotonic()
    memory = Memory(gw.conversations, identity.user)
    job_id = uuid.uuid4().hex
    deadline = time.time() + cfg.answer_timeout
    if retry_id:
        earlier = await gw.pending.claim_request(identity.user, retry_id, job_id, deadline)
        if earlier is not None:  # a twin of this request got there first
            return await _resumed(gw, identity, earlier, request_id, question)
    try:
        return await _submit(
            gw, identity, token, question, job_id=job_id, deadline=deadline, t0=t0, memory=memory,
            request_id=request_id, origin=origin, history=history, review=review, clusters=clusters,
            audience=audience, remember=remember, slot=slot,
            surface=surface or ("conversation" if remember else "none"), target=target or {},
        )
    except BaseException:
        if retry_id:
            await gw.pending.forget_request(identity.user, retry_id)
        raise


async def _submit(
    gw: Gateway,
    identity: Identity,
    token: str | None,
    question: str,
    *,
    job_id: str,
    deadline: float,
    t0: float,
    memory: Memory,
    request_id: str,
    origin: Origin,
    history: tuple[HistoryTurn, ...] | None,
    review: bool,
    clusters: tuple[str, ...],
    audience: tuple[Requester, ...],
    remember: bool,
    slot: str,
    surface: str,
    target: dict[str, Any],
) -> Asking:
    cfg = gw.settings.gateway
    if history is None:
        history = await memory.store.history(memory.key, cfg.history_turns)
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
        deadline=deadline,
        reply_subject=gw.bus.subjects.jobs_done(job_id),
        identity=assertion,
    )
    try:
        watch = await gw.bus.watch(job.id)
    except BusError as exc:
        raise BusUnavailable(f"the investigation service is unavailable ({exc}); try again shortly") from exc
    # Recorded before it is submitted: a gateway that dies just after still knows where it goes.
    await gw.pending.record(PendingJob(
        job.id, identity.user, identity.groups, deadline, request_id=request_id, origin=origin,
        question=question_digest(question), surface=surface, slot=slot, target=target,
    ))
    try:
        await gw.bus.submit(job)
    except BusError as exc:
        await watch.close()
        await gw.pending.done(job.id)
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
    ref, where = JobRef(job.id, deadline), SURFACE_OF_ORIGIN.get(origin, "api")
    if not remember:
        return Asking(ref, watch, identity, request_id, t0, None, slot=slot, surface=where)
    await memory.store.append(memory.key, question_message(question, request_id))
    return Asking(ref, watch, identity, request_id, t0, memory, slot=slot, surface=where)


async def resume(gw: Gateway, identity: Identity, request_id: str, question: str) -> Asking | None:
    """The job this person started with ``request_id`` (the same request sent again), waiting for
    its answer or holding the one kept in RESULTS; ``None`` when they never used this request id.
    409 when they used it for another question (or with other access: the kept answer was fitted
    to what they could read then). Someone else's use of the id is not theirs: ``None``."""
    if not request_id:
        return None
    job_id = await gw.pending.job_of(identity.user, request_id)
    if job_id is None:
        return None
    return await _resumed(gw, identity, job_id, request_id, question)


async def _resumed(gw: Gateway, identity: Identity, job_id: str, request_id: str, question: str) -> Asking:
    job = await gw.pending.get(job_id)
    if job is None or job.user != identity.user:
        raise Conflict(f"request id {request_id} was used before and its answer is gone; ask with a new request id")
    if job.question != question_digest(question) or tuple(job.groups) != tuple(identity.groups):
        raise Conflict(
            f"request id {request_id} was used before for another question; send a new request id with each question"
        )
    try:
        watch = await gw.bus.watch(job_id, kept=True)
    except BusError as exc:
        raise BusUnavailable(f"the investigation service is unavailable ({exc}); try again shortly") from exc
    memory = Memory(gw.conversations, job.user) if job.surface == "conversation" else None
    log.info("question resumed", extra={"request_id": request_id, "user": identity.user, "job_id": job_id})
    return Asking(JobRef(job_id, job.deadline), watch, identity, request_id, time.monotonic(), memory,
                  resumed=True, slot=job.slot, surface=SURFACE_OF_ORIGIN.get(job.origin, "api"))


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
    if not asking.resumed:
        gw.metrics.query_seconds.observe(time.monotonic() - asking.t0)
    gw.metrics.answered(asking.surface, result.status)
    log.info(
        "answer delivered",
        extra={
            "request_id": asking.request_id,
            "user": identity.user,
            "job_id": job.id,
            "status": result.status,
        },
    )
    await _remember_once(asking, answer_message(result.answer_markdown, asking.request_id, result=result,
                                                job_id=job.id))
    await _settled(gw, asking)
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
    if not asking.resumed:
        gw.metrics.query_seconds.observe(time.monotonic() - asking.t0)
    gw.metrics.message(asking.surface, "timeout")
    log.warning(
        "investigation timed out",
        extra={"request_id": asking.request_id, "user": identity.user, "job_id": job.id},
    )
    await _remember_once(asking, answer_message(f"Sorry: {TIMEOUT_MESSAGE}.", asking.request_id, job_id=job.id))
    await _settled(gw, asking)


async def _remember_once(asking: Asking, message: dict[str, Any]) -> None:
    """The answer in the conversation once per job, whichever delivers it first (this request, a
    retry of it, a restarted gateway resuming it). Best effort, as every conversation write."""
    if asking.memory is None:
        return
    try:
        await asking.memory.store.append_once(asking.memory.key, f"job-{asking.job.id}", message)
    except DependencyUnavailable as exc:
        log.warning("could not store a conversation message: %s", exc.message, extra={"job_id": asking.job.id})


async def _settled(gw: Gateway, asking: Asking) -> None:
    """Nothing left to resume: the job off the pending list, its slot back (again is harmless)."""
    await gw.pending.done(asking.job.id)
    if asking.slot:
        await gw.inflight.release(asking.identity.user, asking.slot)


async def deliver_resumed(gw: Gateway, job: PendingJob, result: InvestigationResult | None) -> None:
    """A restarted gateway's delivery of a question asked over the API, MCP or the web chat: the
    answer (``None``: the timeout notice) in the asker's conversation once per job, the slot back.
    Redis not answering raises: the job stays pending for the next start."""
    text = result.answer_markdown if result is not None else f"Sorry: {TIMEOUT_MESSAGE}."
    message = answer_message(text, job.request_id, result=result, job_id=job.job_id)
    await gw.conversations.append_once(job.user, f"job-{job.job_id}", message)
    if job.slot:
        await gw.inflight.release(job.user, job.slot)
