"""Prometheus metrics of one gateway app (own registry, so several apps can live in one process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

__all__ = ["Metrics"]


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
            "MCP tool calls at /mcp by tool and outcome: ok, limited (a per-user limit: 429), "
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
            "command, timeout, limited, too_long, "
            "unmapped (no Kubernetes identity), readers (a channel the bot cannot answer in), "
            "refused, unavailable, error.",
            ["outcome"],
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

    def render(self) -> bytes:
        return generate_latest(self.registry)
