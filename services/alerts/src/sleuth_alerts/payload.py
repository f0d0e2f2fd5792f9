"""Bytes → ``AlertmanagerWebhook``, the one parser of the webhook and the batcher.

Limits are checked before the JSON parser runs: nesting deeper than ``max_depth`` is refused
(Python's parser would otherwise recurse until ``RecursionError``), the body must be UTF-8, and
``NaN``/``Infinity`` are not JSON. Every failure is a ``PayloadError`` with a one-line message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from sleuth_common.messages import AlertmanagerWebhook

__all__ = ["PayloadError", "deeper_than", "parse_payload"]

# A JSON string, or the rest of the input after an unterminated one: it always matches where it
# starts, so stripping strings is one linear pass (no backtracking, no retries inside a string).
_STRING = re.compile(rb'"[^"\\]*+(?:\\.?[^"\\]*+)*+(?:"|\Z)', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\x00\x00")


class PayloadError(ValueError):
    def __init__(self, reason: str, message: str) -> None:
        message = " ".join(message.split())
        super().__init__(message[:300])
        self.reason = reason
        self.message = message[:300]


def deeper_than(body: bytes, limit: int) -> bool:
    """Do arrays and objects nest more than ``limit`` levels (a top-level object is level 1)?
    Brackets inside strings do not count. Strings are stripped and brackets kept in C-level
    passes; the loop over the brackets stops at the first level past the limit."""
    depth = 0
    for step in _STRING.sub(b"", body).translate(None, _NOT_BRACKETS).translate(_STEP):
        if step:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p)[:40] for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
    )


def parse_payload(body: bytes, *, max_depth: int) -> AlertmanagerWebhook:
    if deeper_than(body, max_depth):
        raise PayloadError("too_deep", f"the JSON nests arrays and objects more than {max_depth} levels deep")
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=_no_constants)
    except UnicodeDecodeError as exc:
        raise PayloadError("malformed_json", f"the body is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except (ValueError, RecursionError) as exc:
        raise PayloadError("malformed_json", f"malformed JSON: {exc}") from exc
    try:
        return AlertmanagerWebhook.model_validate(data)
    except ValidationError as exc:
        raise PayloadError(
            "invalid_payload", f"not an Alertmanager webhook payload (version 4): {_problems(exc)}"
        ) from exc
