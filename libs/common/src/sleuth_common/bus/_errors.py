"""The typed errors of a request over the bus: may a retry help, or not."""

from __future__ import annotations

from typing import ClassVar, Literal

__all__ = ["BusError", "PermanentBusError", "Reason", "TemporaryBusError"]

Reason = Literal[
    "no_responders",  # nothing subscribes to the subject (the service is not running)
    "timeout",  # no answer in time
    "disconnected",  # no connection to NATS, or it was lost while waiting
    "failed",  # any other failure of the client or server to carry the request
    "responder_error",  # the responder answered with a temporary error reply (it crashed …)
    "invalid_request",  # the responder refused the request as invalid (a permanent error reply)
    "malformed_reply",  # the answer is not the reply model
    "rejected",  # the server refused the request (a subject or payload it cannot carry)
]


class BusError(Exception):
    """A request over the bus got no usable answer. ``str(exc)`` is a sentence for a person
    (the service, what went wrong; never the request's content); ``reason`` is the kind of failure,
    ``ref`` the responder's log reference when it reported an error."""

    temporary: ClassVar[bool] = True

    def __init__(self, message: str, *, reason: Reason = "failed", subject: str = "", ref: str = "") -> None:
        super().__init__(message)
        self.reason: Reason = reason
        self.subject = subject
        self.ref = ref


class TemporaryBusError(BusError):
    """Retrying may help: a timeout, no responders, a lost connection, a responder that failed."""

    temporary = True


class PermanentBusError(BusError):
    """Retrying will not help: the reply cannot be read, or the request was refused as invalid."""

    temporary = False
