"""Small pieces several rules share (images, quantities, probes)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from sleuth_common.k8s import format_quantity, parse_quantity

__all__ = ["image_parts", "quantity", "round_up_quantity", "sentence"]


def image_parts(image: str) -> tuple[str, str, str]:
    """(repository, tag, digest) of an image reference; missing parts are ``""``."""
    ref, _, digest = image.partition("@")
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1:], digest
    return ref, "", digest


def quantity(resources: Mapping[str, Any] | None, key: str, name: str) -> Decimal | None:
    """``resources[key][name]`` as a Decimal, None when absent; a value that is not a quantity
    raises (the rule's object is then reported as not checked, never guessed)."""
    value = ((resources or {}).get(key) or {}).get(name)
    if value is None or value == "":
        return None
    return parse_quantity(value)


def round_up_quantity(value: Decimal, name: str) -> str:
    """A quantity for a fix, rounded up: CPU in whole millicores, memory in whole Mi."""
    if name == "cpu":
        milli = max(1, math.ceil(value * 1000))
        return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
    mib = Decimal(1024 * 1024)
    return format_quantity(Decimal(max(1, math.ceil(value / mib))) * mib)


def sentence(text: str) -> str:
    return text if text.endswith(".") else text + "."
