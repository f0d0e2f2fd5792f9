"""Prometheus metrics of one alerts process (served on ``/metrics`` of the webhook server)."""

from __future__ import annotations

from typing import get_args

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from sleuth_alerts.triage import Disposition
from sleuth_common.bus import handler_crashes

__all__ = ["Metrics"]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.received = Counter(
            "sleuth_alerts_received",
            "Alerts taken from the stream, by what happened to them",
            ["disposition"],
            registry=self.registry,
        )
        for d in get_args(Disposition):
            self.received.labels(d)
        self.webhook = Counter(
            "sleuth_alerts_webhook_requests",
            "Webhook posts, by route and HTTP status",
            ["route", "status"],
            registry=self.registry,
        )
        self.refused = Counter(
            "sleuth_alerts_webhook_refused",
            "Webhook posts refused, by route (\"unknown\" when not configured) and reason (host, "
            "origin, unknown_route, token, no_token_configured, content_type, too_large, too_deep, "
            "malformed_json, invalid_payload, unavailable)",
            ["route", "reason"],
            registry=self.registry,
        )
        self.investigations = Counter(
            "sleuth_alert_investigations",
            "Alert batches finished, by outcome (result status, outside_access, no_identity, no_readers, not_finished)",
            ["outcome"],
            registry=self.registry,
        )
        self.pending = Gauge(
            "sleuth_alerts_pending", "New alerts waiting in open windows", registry=self.registry
        )
        self.seconds = Histogram(
            "sleuth_alert_investigation_seconds",
            "Seconds from a window closing to its answer being posted",
            registry=self.registry,
            buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300),
        )

        self.crashes = handler_crashes(self.registry, "alerts", "webhook")

    def render(self) -> bytes:
        return generate_latest(self.registry)
