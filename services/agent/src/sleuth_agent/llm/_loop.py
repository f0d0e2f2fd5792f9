"""The tool-use loop: ask, run the round's tool calls concurrently, repeat; continue answers cut
at the output limit, send back replies that announce work they did not do, demand a final answer
at the limit, and drop the oldest tool output when the context budget is exceeded."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from sleuth_agent.llm._catalog import ToolCatalog
from sleuth_agent.llm._prompt import CONTINUE, NUDGE, announces_work, demand_text
from sleuth_agent.metrics import Metrics
from sleuth_common.llm import (
    ChatMessage,
    LlmClient,
    LlmRequest,
    LlmResponse,
    ToolCall,
    ToolOutput,
    ToolSpec,
    Usage,
)
from sleuth_common.mcp import ToolResult, kubectl_command

__all__ = ["AgentLoop", "LoopConfig", "LoopResult", "ReadRecord"]

log = logging.getLogger(__name__)

Progress = Callable[[str, str], Awaitable[None]]


@dataclass(frozen=True)
class LoopConfig:
    max_iterations: int = 8
    max_calls_per_round: int = 8
    tool_timeout: float = 10.0
    max_continuations: int = 3
    max_nudges: int = 2
    context_budget: int = 100_000
    """Characters of conversation (system prompt included) before old tool output is dropped."""
    tool_output_chars: int = 12_000


@dataclass(frozen=True)
class ReadRecord:
    """One successful tool read of the model, with the evidence id it may cite."""

    id: str
    cluster: str
    result: ToolResult


@dataclass
class LoopResult:
    text: str
    outcome: str  # answered | max_iterations | demanded
    messages: list[ChatMessage]
    records: list[ReadRecord] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)


_DROPPED = (
    "[This tool output ({id}) was dropped to fit the context budget; call the tool again if you need it.]"
)


class AgentLoop:
    def __init__(
        self,
        client: LlmClient,
        catalog: ToolCatalog,
        config: LoopConfig,
        *,
        system: str,
        metrics: Metrics,
        progress: Progress,
        next_evidence_id: Callable[[], str],
        before_call: Callable[[], Awaitable[None]] | None = None,
        deadline: float | None = None,
        reserve: float = 0.0,
    ) -> None:
        self.client = client
        self.catalog = catalog
        self.cfg = config
        self.system = system
        self.metrics = metrics
        self.progress = progress
        self.next_id = next_evidence_id
        self.before_call = before_call
        self.deadline = deadline
        """``time.monotonic()`` by which the answer must be in; ``reserve`` seconds before it no new
        tool round starts and the final answer is demanded instead."""
        self.reserve = reserve
        self.usage = Usage()
        self.calls = 0
        self.records: list[ReadRecord] = []
        self.results: list[ToolResult] = []

    # -- the model ---------------------------------------------------------------------------
    async def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> LlmResponse:
        """One request (counted against the daily cap); tool-less requests see the conversation
        flattened to text so that no provider needs tool definitions for them."""
        if self.before_call is not None:
            await self.before_call()
        msgs = tuple(messages) if tools else flatten(messages)
        self.calls += 1
        response = await self.client.complete(LlmRequest(self.system, msgs, tuple(tools)))
        self.usage = self.usage + response.usage
        self.metrics.llm_tokens.labels("input").inc(response.usage.input_tokens)
        self.metrics.llm_tokens.labels("output").inc(response.usage.output_tokens)
        return response

    async def ask(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> LlmResponse:
        """``complete``, continuing an answer cut at the output limit (up to ``max_continuations``)."""
        response = await self.complete(messages, tools)
        parts = [response.text]
        n = 0
        while response.stop == "max_tokens" and not response.tool_calls and n < self.cfg.max_continuations:
            n += 1
            self.metrics.llm_continuations.inc()
            so_far = "".join(parts)
            response = await self.complete(
                [*messages, ChatMessage.assistant(so_far), ChatMessage.user(CONTINUE)], tools
            )
            parts.append(response.text)
        text = "".join(parts)
        if response.stop == "max_tokens" and not response.tool_calls:
            text += "\n\n_(This answer was cut at the model's output limit.)_"
        return dataclasses.replace(response, text=text)

    # -- the loop ----------------------------------------------------------------------------
    async def run(self, opening: Sequence[ChatMessage]) -> LoopResult:
        messages = list(opening)
        tools = self.catalog.specs
        nudges = 0
        for round_no in range(1, self.cfg.max_iterations + 1):
            if round_no > 1 and self.deadline is not None and self.deadline - time.monotonic() < self.reserve:
                return await self._demand(messages, "demanded", "Time is almost up.", why="time ran out")
            await self.progress("llm", f"asking the model (round {round_no})")
            response = await self.ask(messages, tools)
            if response.tool_calls:
                messages.append(ChatMessage.assistant(response.text, response.tool_calls))
                outputs = await self._round(response.tool_calls)
                messages.append(ChatMessage.tools(outputs))
                messages = self._fit(messages)
                continue
            if tools and announces_work(response.text):
                messages.append(ChatMessage.assistant(response.text))
                if nudges < self.cfg.max_nudges:
                    nudges += 1
                    self.metrics.llm_nudges.inc()
                    messages.append(ChatMessage.user(NUDGE))
                    continue
                return await self._demand(
                    messages,
                    "demanded",
                    "You announced more work several times without doing it.",
                    why="the model kept announcing work instead of doing it",
                )
            return self._result(response.text, "answered", messages)
        return await self._demand(
            messages,
            "max_iterations",
            f"You have used all {self.cfg.max_iterations} tool rounds.",
            why=f"the limit of {self.cfg.max_iterations} tool rounds was reached",
        )

    async def _demand(
        self, messages: list[ChatMessage], outcome: str, reason: str, *, why: str
    ) -> LoopResult:
        await self.progress("llm", "asking the model for its final answer")
        messages = [*messages, ChatMessage.user(demand_text(reason))]
        response = await self.ask(messages, ())
        text = response.text.rstrip() + (
            f"\n\n_I stopped investigating here because {why}; this answer rests on what was read so far._"
        )
        return self._result(text, outcome, [*messages, ChatMessage.assistant(response.text)])

    def _result(self, text: str, outcome: str, messages: list[ChatMessage]) -> LoopResult:
        return LoopResult(text, outcome, messages, list(self.records), list(self.results))

    # -- tools -------------------------------------------------------------------------------
    async def _round(self, calls: Sequence[ToolCall]) -> tuple[ToolOutput, ...]:
        todo = list(calls[: self.cfg.max_calls_per_round])
        skipped = [
            ToolOutput(
                c.id,
                c.name,
                f"Not run: at most {self.cfg.max_calls_per_round} tool calls per turn. Ask again if needed.",
                True,
            )
            for c in calls[self.cfg.max_calls_per_round :]
        ]
        outputs = await asyncio.gather(*(self._one(c) for c in todo))
        return (*outputs, *skipped)

    async def _one(self, call: ToolCall) -> ToolOutput:
        offered = self.catalog.lookup(call.name)
        if offered is None:
            names = ", ".join(o.name for o in self.catalog.offered[:40])
            return ToolOutput(call.id, call.name, f"There is no tool {call.name!r}. Tools: {names}.", True)
        command = kubectl_command(offered.tool, call.arguments) or offered.tool
        await self.progress("tool_calls", f"{offered.cluster or 'runbooks'}: {command}")
        limit = self.cfg.tool_timeout
        try:
            result = await asyncio.wait_for(
                offered.toolbox.call(offered.tool, call.arguments, timeout=limit), limit + min(1.0, limit)
            )
        except TimeoutError:
            return ToolOutput(
                call.id,
                call.name,
                f"{offered.tool} on cluster {offered.cluster} did not answer within {limit:g}s.",
                True,
            )
        self.results.append(result)
        if not result.ok:
            # Refusals name only what the caller may see; server errors come marked as data.
            return ToolOutput(call.id, call.name, result.for_model(), True)
        if not offered.evidence:  # the team's runbooks: knowledge to act on, never an id to cite
            return ToolOutput(call.id, call.name, "[team runbook: not evidence, do not cite it as [E..]]\n"
                              + result.for_model())
        eid = self.next_id()
        self.records.append(ReadRecord(eid, offered.cluster, result))
        return ToolOutput(call.id, call.name, self._render(eid, offered.cluster, result))

    def _render(self, eid: str, cluster: str, result: ToolResult) -> str:
        """The evidence id and the command, then the filtered result inside the scope filter's
        data markers (``ToolResult.for_model``)."""
        text = result.text if result.text else json.dumps(result.data, ensure_ascii=False)
        cap = self.cfg.tool_output_chars
        if len(text) > cap:
            text = text[:cap] + f"\n[... {len(text) - cap} more characters cut; narrow the query to see them]"
        head = f"[{eid}] cluster {cluster}: `{result.command or result.tool}`"
        if result.removed:
            head += f" ({result.removed} record(s) outside this person's access were removed)"
        return head + "\n" + dataclasses.replace(result, text=text).for_model()

    # -- context budget ------------------------------------------------------------------------
    def _fit(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """Drop the oldest tool outputs (never the latest round's) until the conversation fits
        ``context_budget``; each dropped output says so in its place."""
        total = len(self.system) + sum(m.size() for m in messages)
        last_tools = max((i for i, m in enumerate(messages) if m.role == "tool"), default=-1)
        for i, m in enumerate(messages):
            if total <= self.cfg.context_budget:
                break
            if m.role != "tool" or i == last_tools:
                continue
            outs = []
            for o in m.tool_outputs:
                if total > self.cfg.context_budget and not o.content.startswith("[This tool output"):
                    eid = (
                        o.content[1 : o.content.find("]")] if o.content.startswith("[E") else "no evidence id"
                    )
                    note = _DROPPED.format(id=eid)
                    total -= len(o.content) - len(note)
                    o = dataclasses.replace(o, content=note)
                    self.metrics.llm_trims.inc()
                outs.append(o)
            messages[i] = dataclasses.replace(m, tool_outputs=tuple(outs))
        return messages


def flatten(messages: Sequence[ChatMessage]) -> tuple[ChatMessage, ...]:
    """The conversation as plain user/assistant text (tool calls and outputs written out)."""
    out: list[ChatMessage] = []
    for m in messages:
        if m.role == "tool":
            text = "\n\n".join(f"Tool output ({o.name}):\n{o.content}" for o in m.tool_outputs)
            out.append(ChatMessage.user(text))
        elif m.role == "assistant" and m.tool_calls:
            calls = "\n".join(f"[called {c.name} {json.dumps(c.arguments)}]" for c in m.tool_calls)
            out.append(ChatMessage.assistant((m.text + "\n" + calls).strip()))
        else:
            out.append(m)
    merged: list[ChatMessage] = []
    for m in out:
        if merged and merged[-1].role == m.role:
            merged[-1] = ChatMessage(m.role, text=merged[-1].text + "\n\n" + m.text)
        else:
            merged.append(m)
    return tuple(merged)
