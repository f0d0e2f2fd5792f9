"""Prometheus metrics of one gateway app (own registry, so several apps can live in one process)."""

from __future__ import annotations

from typing import Literal, get_args

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from sleuth_common.bus import handler_crashes
from sleuth_common.jobs_queue import JobsQueueGauges
from sleuth_common.messages.jobs import ResultStatus

__all__ = ["MESSAGE_OUTCOMES", "SURFACES", "MessageOutcome", "Metrics", "Surface"]

Surface = Literal["api", "mcp", "mattermost", "web"]
"""Where a question or message came in: ``POST /v1/query``, the MCP tool ``ask``, a Mattermost
post, a web-chat channel post."""
SURFACES: tuple[Surface, ...] = get_args(Surface)
MessageOutcome = Literal["answered", "denied", "agent_error", "timeout", "rate_limited", "busy", "ignored"]
"""``answered`` (the agent's answer delivered), ``denied`` (refused: the agent's identity check, an
unmapped chat account, a refused identity, a channel whose readers cannot be checked),
``agent_error`` (the agent answered with an error), ``timeout`` (no answer by the deadline),
``rate_limited`` (a per-user limit), ``busy`` (refused: the JOBS queue is over
``gateway.max_queue_depth`` or ``max_queue_wait``), ``ignored`` (a chat post not for the bot)."""
MESSAGE_OUTCOMES: tuple[MessageOutcome, ...] = get_args(MessageOutcome)
_OUTCOME_OF_STATUS: dict[ResultStatus, MessageOutcome] = {
    "diagnosed": "answered", "healthy": "answered", "insufficient_evidence": "answered",
    "denied": "denied", "error": "agent_error",
}


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "sleuth_gateway_requests_total",
            "HTTP requests by route template and status code.",
            ["route", "status"],
            registry=self.registry,
        )
        self.query_seconds = Histogram(
            "sleuth_gateway_query_seconds",
            "Seconds from a question's arrival to its answer (or timeout).",
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120),
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "sleuth_gateway_rate_limited",
            "Questions and channel posts refused by the per-user rate limit.",
            registry=self.registry,
        )
        self.refused = Counter(
            "sleuth_gateway_refused",
            "Requests refused by the other guards, by reason: read_rate (the per-user read bucket), "
            "busy (requests in progress per user), inflight (questions running per user), "
            "sign_in_throttle, sign_in_busy, identity (Sleuth's own identities), host (unknown Host).",
            ["reason"],
            registry=self.registry,
        )

        self.mcp_tool_calls = Counter(
            "sleuth_gateway_mcp_tool_calls",
            "MCP tool calls at /mcp by tool and outcome: ok, limited (a per-user limit: 429), busy (the "
            "agents' queue is full: 503), "
            "timeout (the investigation did not finish in time), error (anything else the caller "
            "was told), hidden (a tool not offered to the caller).",
            ["tool", "outcome"],
            registry=self.registry,
        )

        self.mattermost_ignored = Counter(
            "sleuth_gateway_mattermost_ignored",
            "Mattermost posts the bot did not answer, by reason: own (its own posts), system, "
            "not_mentioned (a channel post without @bot), already_answered (by this or another replica), "
            "limited (an account posting faster than the question rate limit), webhook (posts made "
            "through a webhook carry its creator's id: nobody's question).",
            ["reason"],
            registry=self.registry,
        )
        self.mattermost_posts = Counter(
            "sleuth_gateway_mattermost_posts",
            "Mattermost posts answered, by outcome: answered, withheld (a reader joined while it ran), "
            "command, timeout, limited, busy (the agents' queue is full), too_long, "
            "unmapped (no Kubernetes identity), readers (a channel the bot cannot answer in), "
            "refused, unavailable, error.",
            ["outcome"],
            registry=self.registry,
        )
        self.mattermost_feedback = Counter(
            "sleuth_gateway_mattermost_feedback",
            "Feedback in Mattermost by how (reaction: 👍/👎 on an answer; fixed_by: a \"fixed by:\" reply in its "
            "thread) and outcome: taken, unknown (the agent took none from this person on that answer), "
            "unmapped (no Kubernetes identity: ignored), refused, limited, unavailable (no identity lookup), "
            "error.",
            ["how", "outcome"],
            registry=self.registry,
        )
        self.mattermost_errors = Counter(
            "sleuth_gateway_mattermost_errors",
            "Mattermost posts whose handling crashed (logged with a reference; the listener goes on).",
            registry=self.registry,
        )
        self.mattermost_connects = Counter(
            "sleuth_gateway_mattermost_connects",
            "Mattermost listener connection attempts, by outcome (ok, failed).",
            ["outcome"],
            registry=self.registry,
        )

        self.messages = Counter(
            "sleuth_gateway_messages",
            "Questions and chat messages by surface (api, mcp, mattermost, web) and outcome (answered, "
            "denied, agent_error, timeout, rate_limited, busy, ignored); commands are not counted",
            ["surface", "outcome"],
            registry=self.registry,
        )
        for surface in SURFACES:
            for outcome in MESSAGE_OUTCOMES:
                self.messages.labels(surface, outcome)
        self.crashes = handler_crashes(self.registry, "gateway", "http", "mattermost_post")
        self.jobs_queue = JobsQueueGauges(self.registry)
        self.queue_unchecked = Counter(
            "sleuth_gateway_queue_unchecked",
            "Questions accepted without the backpressure check because the JOBS queue could not be "
            "read (NATS down, no agent consumer yet): the gateway fails open",
            registry=self.registry,
        )

    def message(self, surface: Surface, outcome: MessageOutcome) -> None:
        self.messages.labels(surface, outcome).inc()

    def answered(self, surface: Surface, status: ResultStatus) -> None:
        """A question's result delivered: counted by what the agent said."""
        self.message(surface, _OUTCOME_OF_STATUS[status])

    def render(self) -> bytes:
        return generate_latest(self.registry)
