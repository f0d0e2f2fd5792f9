"""Request bodies: read within a size and a time limit, parse as a JSON object within limits.

Whatever a client sends, the outcome is the parsed object or a one-line ``BadRequest`` (400),
``PayloadTooLarge`` (413) or ``RequestTimeout`` (408): never an exception that becomes a 500.
Refused before or while parsing: bytes that are not UTF-8, nesting deeper than ``max_depth``
(checked before the parser recurses), integers longer than ``_MAX_DIGITS`` digits, floats that
overflow, ``NaN``/``Infinity`` (not JSON), and strings holding lone surrogate escapes
(``"\\ud800"``), which no UTF-8 store or message can carry.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from itertools import accumulate, repeat
from typing import Any

from starlette.requests import Request

from sleuth_gateway.errors import BadRequest, PayloadTooLarge, RequestTimeout

__all__ = ["parse_json_object", "read_body"]

_MAX_DIGITS = 40
# A string (its closing quote optional, so an unterminated one ends the scan instead of being
# retried from every later quote: linear time whatever the input) or a bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


async def read_body(request: Request, limit: int, seconds: float) -> bytes:
    """The whole body: 413 over ``limit`` bytes, 408 when it takes longer than ``seconds``."""
    declared = request.headers.get("content-length", "")
    too_large = f"the request body is larger than the limit of {limit} bytes"
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(too_large)
    size = 0
    chunks = []
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(too_large)
                chunks.append(chunk)
    except TimeoutError:
        raise RequestTimeout(f"the request body did not arrive within {seconds:g} s") from None
    return b"".join(chunks)


class _Refused(ValueError):
    """A value the parser met that the gateway does not accept (its message is the caller's)."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_DIGITS:
        raise _Refused(f"a number in the body is longer than {_MAX_DIGITS} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused("a number in the body is out of range")
    return value


def _constant(text: str) -> Any:
    raise _Refused(f"{text} is not a number JSON allows")


def _depth(text: str) -> int:
    """Deepest nesting of arrays and objects in ``text`` (brackets inside strings do not count)."""
    return max(accumulate(map(_STEP.get, _TOKEN.findall(text), repeat(0))), default=0)


def parse_json_object(raw: bytes, max_depth: int, example: str) -> dict[str, Any]:
    """``raw`` as a JSON object, or a one-line 400 naming what is wrong (``example`` shows the shape)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the body is not valid UTF-8 (byte {exc.start})") from None
    if _depth(text) > max_depth:
        raise BadRequest(f"the body is nested deeper than {max_depth} levels")
    try:
        doc = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except _Refused as exc:
        raise BadRequest(str(exc)) from None
    except RecursionError:
        raise BadRequest(f"the body is nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise BadRequest(f"malformed JSON: {_one_line(str(exc))}") from None
    if not isinstance(doc, dict):
        raise BadRequest(f"the body must be a JSON object like {example}")
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("the body holds text that is not valid Unicode (a lone surrogate escape)") from None
    return doc


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
