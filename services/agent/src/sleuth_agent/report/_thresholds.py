"""The rules' thresholds: versioned data (``thresholds.yaml``), logic stays in the rules."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

__all__ = ["thresholds"]


@cache
def _all() -> dict[str, dict[str, Any]]:
    text = resources.files("sleuth_agent.report").joinpath("thresholds.yaml").read_text(encoding="utf-8")
    doc = yaml.safe_load(text) or {}
    return {str(k): dict(v or {}) for k, v in doc.items()}


def thresholds(rule_id: str) -> dict[str, Any]:
    """The section of ``rule_id`` (KeyError when it has none: a rule names its own data)."""
    return _all()[rule_id]
