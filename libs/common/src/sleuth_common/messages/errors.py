"""How a responder says it could not answer a request (``sleuth_common.bus``).

An error reply is a message carrying the header ``Sleuth-Error`` (``temporary`` or ``permanent``)
with a ``BusErrorReply`` body, sent to the request's reply subject instead of the reply model, so
the asker learns at once why there is no answer (never a silent timeout):

- ``permanent``: the request was refused as invalid (it did not validate, or the responder refused
  it); sending it again will not help.
- ``temporary``: the responder failed while answering (a crash, a dependency it needs is down);
  the same request may succeed later.

``error`` is short and safe to show a person: never the request's content (a token, a question),
never an exception's text. ``ref`` names the responder's log line of a crash.
"""

from __future__ import annotations

from typing import Literal

from sleuth_common.messages.base import Message

__all__ = ["ERROR_HEADER", "BusErrorReply", "ErrorKind"]

ERROR_HEADER = "Sleuth-Error"
"""Header of an error reply; its value is the ``ErrorKind``."""

ErrorKind = Literal["temporary", "permanent"]


class BusErrorReply(Message):
    """Why a responder did not answer a request (the body of an error reply)."""

    kind: Literal["bus.error"] = "bus.error"
    schema_version: int = 1
    temporary: bool
    """Whether the same request may succeed later."""
    error: str
    """What went wrong, for a person (no request content, no exception text)."""
    ref: str = ""
    """The reference of the responder's log line (crashes), to find it in the logs."""
