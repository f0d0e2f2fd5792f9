"""Prometheus metrics of one app instance (own registry, so several apps can live in a process)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["Metrics"]


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.tool_calls = Counter(
            "sleuth_kube_mcp_tool_calls",
            "Tool calls by tool and outcome (ok, api_<code>, unavailable, bad_request).",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "sleuth_kube_mcp_tool_seconds",
            "Duration of tool calls, Kubernetes API time included.",
            ["tool"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.api_responses = Counter(
            "sleuth_kube_mcp_api_responses",
            "Kubernetes API responses by HTTP status (0 = no answer).",
            ["code"],
            registry=self.registry,
        )

    def count_response(self, code: int) -> None:
        self.api_responses.labels(code=str(code)).inc()
