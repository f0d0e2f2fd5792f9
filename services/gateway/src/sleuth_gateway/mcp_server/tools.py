"""The tools of Sleuth's MCP server, who is offered which, and how each call is counted.

- ``ask(question, cluster=None)`` runs what ``POST /v1/query`` runs for the caller (the same
  admission, job, conversation memory, metrics and log lines; ``sleuth_gateway.asking``) and
  answers with the Markdown answer as text and ``{answer, result, user, job_id, request_id}`` as
  structured content; a whole-message chat command (``help``, ``access`` …) is answered by the
  command runner every chat surface shares. While it runs, MCP progress notifications carry the
  stages the web chat shows, and a "still investigating" one after ``gateway.mcp.heartbeat``
  quiet seconds.
- ``whoami()`` answers exactly what ``GET /v1/whoami`` answers (it runs that very handler).

Who is offered a tool is explicit (``OFFERS``: tool → audience): ``tools/list`` shows a caller
only the tools offered to them, and a call of any other tool is answered as for a tool that does
not exist. A refusal inside a tool (a per-user limit, a dependency down, a timeout) is a tool
error with the reason — ``is_error`` with ``{error, status, request_id …}`` — never a crash.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ListToolsResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request

from sleuth_common.messages import FIXED_BY_MAX, JobProgress
from sleuth_gateway import asking, handlers
from sleuth_gateway.auth import Identity
from sleuth_gateway.commands import Command, parse_command, run_command
from sleuth_gateway.conversation import answer_message, question_message
from sleuth_gateway.errors import ApiError, Busy, Unauthorized
from sleuth_gateway.feedback import give_feedback
from sleuth_gateway.runtime import Gateway

log = logging.getLogger(__name__)

__all__ = ["CALLER_KEY", "OFFERS", "AskAnswer", "Audience", "Caller", "FeedbackAnswer", "build_server", "signed_in"]

CALLER_KEY = "mcp_caller"
"""Where the endpoint leaves the ``Caller`` in the request's state."""

_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


@dataclass(frozen=True)
class Caller:
    """Who calls, as the endpoint authenticated them for this one HTTP request."""

    identity: Identity
    token: str = field(repr=False)  # for this request only: a job gets a fresh signed identity
    request_id: str = ""
    chosen_id: str = ""
    """``request_id`` when the client chose it (``X-Request-Id``): ``ask`` sent again with it gets
    the first call's job."""


Audience = Callable[[Gateway, Identity], Awaitable[bool]]
"""Whether a tool is offered to a signed-in person."""


async def signed_in(gw: Gateway, identity: Identity) -> bool:
    """Every signed-in person (the endpoint refused everyone else before the MCP layer)."""
    return True


OFFERS: dict[str, Audience] = {"ask": signed_in, "whoami": signed_in, "feedback": signed_in}
"""Each tool and who it is offered to; a tool without an entry is offered to nobody. An
admin-only tool gets an audience that asks authz-cache (e.g. cluster-wide on every cluster)."""


class AskAnswer(BaseModel):
    """The structured content of ``ask``: what ``POST /v1/query`` answers, without the HTML."""

    answer: str = Field(description="The answer in Markdown.")
    result: dict[str, Any] | None = Field(
        description="The investigation result (status, root_cause, candidates, evidence with replayable "
        "kubectl commands, actions, withheld, unavailable); null for a command's answer."
    )
    user: str = Field(description="Who asked, as Sleuth authenticated the bearer token.")
    job_id: str | None = Field(default=None, description="The investigation's id (absent for a command).")
    command: str | None = Field(default=None, description="The command answered (absent for a question).")
    request_id: str = Field(description="The HTTP request's id, as in the gateway's logs.")


class FeedbackAnswer(BaseModel):
    """The structured content of ``feedback``: what ``POST /v1/feedback`` answers."""

    ok: bool
    text: str = Field(description="What Sleuth did with it.")
    job_id: str
    request_id: str = Field(description="The HTTP request's id, as in the gateway's logs.")


class WhoAmI(BaseModel):
    """The structured content of ``whoami``: the body of ``GET /v1/whoami``."""

    model_config = ConfigDict(extra="allow")

    user: str
    groups: list[str]


_INSTRUCTIONS = (
    "Sleuth investigates Kubernetes clusters read-only as you: every answer contains only what your "
    "own Kubernetes credentials let you read. Ask in plain words with `ask` (for example 'what is "
    "failing in team-a?' or 'why is the api deployment in team-a crashing?'); the answer names the "
    "root cause, cites evidence (E01, E02 ...) with the kubectl command that reproduces each item, "
    "and says what to do. `whoami` shows who Sleuth thinks you are and what you can see."
)
_ASK = (
    "Investigate a Kubernetes question as the signed-in user and answer in Markdown: problem, root "
    "cause (the object where the fix belongs), evidence E01... each with a replayable kubectl "
    "command, and actions. Read-only. Takes seconds; progress notifications show the stages. "
    "Follow-up questions see the conversation so far. A whole-message command is answered instead "
    "of investigated: help, access, refresh. Structured content: {answer, result, user, job_id, "
    "request_id} where result has status (diagnosed, healthy, insufficient_evidence, denied, "
    "error), root_cause, evidence and actions."
)
_FEEDBACK = (
    "Tell Sleuth whether an answer you got (by its job_id from `ask`) was right: verdict 'up' or "
    "'down', and/or fixed_by: what actually fixed the problem (shown to your team when the same "
    "failure comes back). Only the person who asked, or who was shown the answer, may."
)
_WHOAMI = (
    "Who Sleuth thinks you are (user, groups) and what you may read: per cluster, cluster-wide or "
    "the namespaces. Use it when an answer says something is outside your access."
)

Question = Annotated[
    str,
    Field(description="The question in plain words, e.g. 'what is failing in team-a?'.", min_length=1),
]
ClusterName = Annotated[
    str | None,
    Field(
        description="Investigate on this cluster (its name or an alias); default: the clusters the "
        "question names, else every cluster you can read.",
        max_length=100,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
    ),
]


JobId = Annotated[str, Field(description="The answer's job_id (from `ask`).", min_length=1, max_length=100,
                             pattern=r"^[A-Za-z0-9_.-]+$")]
VerdictArg = Annotated[
    Literal["up", "down"] | None, Field(description="'up': the answer was right; 'down': it was wrong.")]
FixedBy = Annotated[str | None, Field(description="What fixed it, in a sentence.", max_length=FIXED_BY_MAX)]


def build_server(gw: Gateway) -> MCPServer[Any]:
    """The MCP server with ``ask``, ``feedback`` and ``whoami`` for ``gw`` (no transport yet)."""
    level = gw.settings.logging.level.upper()
    # MCPServer calls logging.basicConfig; a placeholder handler makes that a no-op, so the
    # process keeps its own logging (JSON in deployments).
    guard = logging.NullHandler()
    logging.getLogger().addHandler(guard)
    try:
        server: MCPServer[Any] = MCPServer(
            name="sleuth",
            title="Sleuth",
            instructions=_INSTRUCTIONS,
            version=version("sleuth-gateway"),
            log_level=level if level in _LEVELS else "INFO",  # type: ignore[arg-type]
        )
    finally:
        logging.getLogger().removeHandler(guard)

    async def ask(
        question: Question, ctx: Context, cluster: ClusterName = None
    ) -> Annotated[CallToolResult, AskAnswer]:
        return await _counted(gw, "ask", ctx, lambda caller: _ask(gw, caller, ctx, question, cluster))

    async def feedback(
        job_id: JobId, ctx: Context, verdict: VerdictArg = None, fixed_by: FixedBy = None
    ) -> Annotated[CallToolResult, FeedbackAnswer]:
        return await _counted(gw, "feedback", ctx,
                              lambda caller: _feedback(gw, caller, job_id, verdict or "", fixed_by or ""))

    async def whoami(ctx: Context) -> Annotated[CallToolResult, WhoAmI]:
        return await _counted(gw, "whoami", ctx, lambda caller: _whoami(_request(ctx)))

    server.add_tool(
        ask,
        name="ask",
        title="Ask Sleuth",
        description=_ASK,
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True),
    )
    server.add_tool(
        feedback,
        name="feedback",
        title="Feedback on an answer",
        description=_FEEDBACK,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),
    )
    server.add_tool(
        whoami,
        name="whoami",
        title="Who am I (and what can I see)",
        description=_WHOAMI,
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    server.middleware.append(_OfferedOnly(gw, OFFERS))
    return server


class _OfferedOnly:
    """``tools/list`` lists only the tools offered to the caller; ``tools/call`` of any other
    tool is answered as the SDK answers a tool that does not exist (nothing to learn from it)."""

    def __init__(self, gw: Gateway, offers: dict[str, Audience]) -> None:
        self._gw = gw
        self._offers = offers

    async def _offered(self, identity: Identity) -> set[str]:
        return {name for name, audience in self._offers.items() if await audience(self._gw, identity)}

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in ("tools/list", "tools/call"):
            return await call_next(ctx)
        caller = _caller(ctx.request)
        offered = await self._offered(caller.identity)
        if ctx.method == "tools/call":
            name = str((ctx.params or {}).get("name", ""))
            if name in offered:
                return await call_next(ctx)
            tool = name if name in self._offers else "unknown"
            self._gw.metrics.mcp_tool_calls.labels(tool=tool, outcome="hidden").inc()
            return CallToolResult(
                content=[TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True
            )
        result = await call_next(ctx)
        if isinstance(result, ListToolsResult):
            return result.model_copy(update={"tools": [t for t in result.tools if t.name in offered]})
        return result


def _request(ctx: Context) -> Request:
    request = ctx.request_context.request
    assert isinstance(request, Request), "the MCP endpoint serves HTTP only"
    return request


def _caller(request: object) -> Caller:
    caller = getattr(getattr(request, "state", None), CALLER_KEY, None)
    if not isinstance(caller, Caller):  # only a request that did not come through McpEndpoint
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    return caller


def _outcome(exc: ApiError) -> str:
    if isinstance(exc, Busy):
        return "busy"
    return {429: "limited", 504: "timeout"}.get(exc.status, "error")


async def _counted(
    gw: Gateway, tool: str, ctx: Context, run: Callable[[Caller], Awaitable[CallToolResult]]
) -> CallToolResult:
    """Run one tool call for its caller: an ``ApiError`` becomes a tool error with the reason (and
    the refusal metrics and log line the API has); every call is counted by tool and outcome."""
    caller = _caller(_request(ctx))
    outcome = "error"
    try:
        result = await run(caller)
        outcome = "ok"
        return result
    except ApiError as exc:
        outcome = _outcome(exc)
        handlers._note_refused(gw, exc, caller.request_id, caller.identity.user, "mcp")
        body = {"error": exc.message, "status": exc.status, **exc.extra, "request_id": caller.request_id}
        return CallToolResult(
            content=[TextContent(type="text", text=exc.message)], structured_content=body, is_error=True
        )
    except asyncio.CancelledError:
        outcome = "cancelled"
        raise
    finally:
        gw.metrics.mcp_tool_calls.labels(tool=tool, outcome=outcome).inc()


async def _shielded(cleanup: Awaitable[None]) -> None:
    """Finish a clean-up even while the call is being cancelled (its client went away)."""
    await asyncio.shield(asyncio.ensure_future(cleanup))


async def _ask(
    gw: Gateway, caller: Caller, ctx: Context, question: str, cluster: str | None
) -> CallToolResult:
    identity = caller.identity
    asking.check_question(question, gw.settings.gateway.question_limit, "question")
    command = parse_command(question)
    # A call sent again with the same X-Request-Id (the gateway restarted, the connection broke):
    # the answer of the job it started, never a second investigation.
    resumed = None if command is not None else await asking.resume(gw, identity, caller.chosen_id, question)
    if resumed is not None:
        payload = await _wait(gw, ctx, resumed)
    else:
        if command is None:
            await asking.check_capacity(gw, "mcp")
        slot = await asking.admit(gw, identity, "mcp")
        try:
            if command is not None:
                payload = await _command(gw, caller, question, command)
            else:
                payload = await _investigate(gw, caller, ctx, question, cluster, slot)
        finally:
            await _shielded(gw.inflight.release(identity.user, slot))
    payload["request_id"] = caller.request_id
    return CallToolResult(
        content=[TextContent(type="text", text=payload["answer"])], structured_content=payload
    )


async def _command(gw: Gateway, caller: Caller, text: str, command: Command) -> dict[str, Any]:
    identity, rid = caller.identity, caller.request_id
    answer = await run_command(gw, identity, command, surface="mcp", token=caller.token)
    await gw.conversations.append(identity.user, question_message(text, rid))
    await gw.conversations.append(identity.user, answer_message(answer, rid, command=command.name))
    return {"answer": answer, "result": None, "user": identity.user, "command": command.name}


async def _investigate(
    gw: Gateway, caller: Caller, ctx: Context, question: str, cluster: str | None, slot: str
) -> dict[str, Any]:
    asked = await asking.submit(
        gw,
        caller.identity,
        caller.token,
        question,
        request_id=caller.request_id,
        origin="mcp",
        clusters=(cluster,) if cluster else (),
        retry_id=caller.chosen_id,
        slot=slot,
    )
    return await _wait(gw, ctx, asked)


async def _wait(gw: Gateway, ctx: Context, asked: asking.Asking) -> dict[str, Any]:
    progress = _Progress(ctx)
    try:
        await progress.send("accepted", "investigating")
        payload = await asking.wait(gw, asked, progress.on_job, heartbeat=gw.settings.gateway.mcp.heartbeat)
    finally:
        # Again, shielded: a close cut short by a cancelled call is finished here.
        await _shielded(asked.watch.close())
    payload.pop("answer_html", None)
    return payload


class _Progress:
    """MCP progress notifications for one ``ask``: the stages the web chat shows, numbered."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._count = 0
        self._t0 = time.monotonic()

    async def send(self, stage: str, message: str) -> None:
        self._count += 1  # progress must increase with each notification
        await self._ctx.report_progress(self._count, None, f"{stage}: {message}" if message else stage)

    async def on_job(self, item: JobProgress | None) -> None:
        if item is None:
            await self.send("working", f"still investigating ({round(time.monotonic() - self._t0)} s)")
        else:
            await self.send(item.stage, item.message)


async def _feedback(gw: Gateway, caller: Caller, job_id: str, verdict: str, fixed_by: str) -> CallToolResult:
    await handlers._take_read(gw, caller.identity)
    reply = await give_feedback(gw, caller.identity, job_id, verdict, fixed_by, "mcp")
    body = {"ok": reply.ok, "text": reply.text, "job_id": job_id, "request_id": caller.request_id}
    return CallToolResult(content=[TextContent(type="text", text=reply.text)], structured_content=body)


async def _whoami(request: Request) -> CallToolResult:
    # The very handler GET /v1/whoami runs: the same answer (and the same read bucket), always.
    response = await handlers.whoami(request)
    body = json.loads(bytes(response.body))
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body, indent=2))], structured_content=body
    )
