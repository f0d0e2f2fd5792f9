"""The asking side of request/reply: a request model in, the reply model out, or a typed error.

Every core request/reply call of Sleuth goes through ``request`` (or, where the caller picks its
own reply subject, ``publish`` + ``read_reply``), so each asker handles the same two cases:
``TemporaryBusError`` (no responder, timeout, lost connection, the responder failed — retrying may
help) and ``PermanentBusError`` (the reply cannot be read, the request was refused as invalid —
retrying will not help). Error messages name ``service`` and what went wrong, never the request's
content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, TypeVar

from nats.aio.client import Client as NatsClient
from nats.errors import (
    BadSubjectError,
    ConnectionClosedError,
    ConnectionDrainingError,
    ConnectionReconnectingError,
    MaxPayloadError,
    NoRespondersError,
    OutboundBufferLimitError,
    StaleConnectionError,
)
from nats.errors import Error as NatsError
from pydantic import BaseModel, ValidationError

from sleuth_common.bus._errors import PermanentBusError, TemporaryBusError
from sleuth_common.messages.errors import ERROR_HEADER, BusErrorReply

__all__ = ["read_reply", "request"]

R = TypeVar("R", bound=BaseModel)

NO_RESPONDERS = "503"
"""The ``Status`` header nats-server puts on the answer to a request nobody subscribes to."""


class _Reply(Protocol):
    @property
    def data(self) -> bytes: ...

    @property
    def headers(self) -> dict[str, str] | None: ...


async def request(
    nc: NatsClient,
    subject: str,
    req: BaseModel,
    reply: type[R],
    *,
    wait: float,
    service: str,
    headers: Mapping[str, str] | None = None,
) -> R:
    """Send ``req`` on ``subject`` through the nats-py client ``nc`` and return the ``reply`` model
    (waiting ``wait`` seconds at most).

    ``service`` names the responder in error messages (``"authz-cache"``, ``"the alerts service"``).
    Raises ``TemporaryBusError`` or ``PermanentBusError`` (both ``BusError``), nothing else for a
    failure of the bus or the responder.
    """
    payload = req.model_dump_json().encode()
    try:
        msg = await nc.request(subject, payload, timeout=wait, headers=dict(headers) if headers else None)
    except NoRespondersError as exc:
        raise TemporaryBusError(f"{service} is not running", reason="no_responders", subject=subject) from exc
    except TimeoutError as exc:  # nats-py's TimeoutError is an asyncio.TimeoutError, which is this one
        raise TemporaryBusError(
            f"{service} did not answer within {wait:g}s", reason="timeout", subject=subject
        ) from exc
    except (ConnectionClosedError, ConnectionDrainingError, ConnectionReconnectingError, StaleConnectionError,
            OutboundBufferLimitError) as exc:
        raise TemporaryBusError(
            f"not connected to NATS, {service} could not be asked", reason="disconnected", subject=subject
        ) from exc
    except (BadSubjectError, MaxPayloadError) as exc:
        raise PermanentBusError(
            f"the request to {service} cannot be sent ({type(exc).__name__})", reason="rejected", subject=subject
        ) from exc
    except NatsError as exc:
        raise TemporaryBusError(
            f"the request to {service} failed ({type(exc).__name__})", reason="failed", subject=subject
        ) from exc
    return read_reply(msg, reply, service=service, subject=subject)


def read_reply(msg: _Reply, reply: type[R], *, service: str, subject: str = "") -> R:
    """The ``reply`` model in ``msg``; a typed error for an error reply, a no-responders status or a
    body that is not the model."""
    headers = msg.headers or {}
    if headers.get("Status") == NO_RESPONDERS:
        raise TemporaryBusError(f"{service} is not running", reason="no_responders", subject=subject)
    kind = headers.get(ERROR_HEADER)
    if kind is not None:
        try:
            err = BusErrorReply.model_validate_json(msg.data)
        except ValidationError as exc:
            raise PermanentBusError(
                f"{service} sent a malformed error reply", reason="malformed_reply", subject=subject
            ) from exc
        ref = f" (ref {err.ref})" if err.ref else ""
        if kind == "permanent" and not err.temporary:
            raise PermanentBusError(
                f"{service} refused the request: {err.error}{ref}", reason="invalid_request", subject=subject,
                ref=err.ref,
            )
        raise TemporaryBusError(
            f"{service} could not answer: {err.error}{ref}", reason="responder_error", subject=subject, ref=err.ref
        )
    try:
        return reply.model_validate_json(msg.data)
    except ValidationError as exc:
        raise PermanentBusError(f"{service} sent a malformed reply", reason="malformed_reply", subject=subject) from exc

