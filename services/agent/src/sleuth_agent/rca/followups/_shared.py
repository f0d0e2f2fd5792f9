"""Helpers more than one follow-up uses: label selectors, the liveness-failure pattern, CPU
quantities and log timestamps."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sleuth_agent.rca.engine.graph import selector_of
from sleuth_common.k8s import LabelSelector, format_quantity, quantity_or_none

__all__ = ["LIVENESS_FAILED", "cpu_double", "label_selects", "parse_selector", "when"]

LIVENESS_FAILED = re.compile(r"Liveness probe failed|failed liveness probe", re.IGNORECASE)


def parse_selector(text: Any) -> LabelSelector | None:
    """A selector as kube-mcp writes it (``*`` selects everything, set-based operators included);
    ``None`` (selects nothing) when there is none: a Service without a selector has no pods."""
    return selector_of(text)


def label_selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    return selector is not None and selector.matches(labels)


def cpu_double(q: str) -> str:
    value = quantity_or_none(q)
    if value is None or value <= 0:
        return "<a higher limit>"
    return format_quantity(value * 2, binary=False)


_LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(Z|[+-]\d\d:\d\d)?\s")


def when(ts: str) -> Any:
    m = _LOG_TS.match(ts.strip() + " ")
    if not m:
        return None
    whole, _, frac = m.group(1).partition(".")
    try:
        t = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    return t.timestamp() + (float("0." + frac[:6]) if frac else 0.0)
