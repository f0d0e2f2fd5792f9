"""``make bench``: performance figures, each against a floor measured in the same run.

Every module in this package exposes ``run() -> None`` and prints one JSON line per figure:
``{"figure", "value", "unit", "floor", "floor_value", "ratio", "target", ...}``. Machines here are
shared and noisy, so the ratio against a floor taken moments earlier on the same machine is what
to compare across runs, not the absolute numbers.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["emit"]


def emit(figure: str, value: float, unit: str, floor: str, floor_value: float, target: str, **extra: Any) -> None:
    """Print one figure as a JSON line, with its ratio to the floor."""
    ratio = value / floor_value if floor_value else float("inf")
    print(json.dumps({"figure": figure, "value": round(value, 4), "unit": unit, "floor": floor,
                      "floor_value": round(floor_value, 4), "ratio": round(ratio, 2), "target": target, **extra}),
          flush=True)
