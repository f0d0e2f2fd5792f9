"""Parsing a tool result into a value the filter can walk (DESIGN §2 step 2): JSON, YAML, or
text. Kept apart from the walk so limits on parsing (depth, size, aliases) live in one place."""

from __future__ import annotations

import json
from typing import Any

import yaml

__all__ = ["parse_result"]

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_result(text: str) -> tuple[Any, bool]:
    """``(data, True)`` when ``text`` is JSON or structured YAML, else ``(text, False)``.

    YAML counts as structured when it is a list holding objects or lists, or an object with a
    nested object/list or a namespace key — so a log line such as ``ERROR: boom`` stays text.
    """
    s = text.lstrip()
    if not s:
        return text, False
    if s[0] in "[{":
        try:
            return json.loads(s), True
        except ValueError:
            pass
    if "\n" not in s.rstrip() and ": " not in s and not s.startswith("- "):
        return text, False
    try:
        data = yaml.load(s, Loader=_YAML_LOADER)
    except yaml.YAMLError:
        return text, False
    except (ValueError, RecursionError):
        return text, False
    if isinstance(data, list):
        if not data or any(isinstance(x, dict | list) for x in data):
            return data, True
        return text, False
    if isinstance(data, dict) and data:
        if any(isinstance(v, dict | list) for v in data.values()) or any(
            isinstance(k, str) and "namespace" in k.lower() for k in data
        ):
            return data, True
    return text, False
