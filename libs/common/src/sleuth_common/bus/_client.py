"""The asking side of request/reply: a request model in, the reply model out, or a typed error.

Every core request/reply call of Sleuth goes through ``request`` (or, where the caller picks its
own reply subject, ``publish`` + ``read_reply``), so each asker handles the same two cases:
``TemporaryBusError`` (no responder, timeout, lost connection, the responder failed — retrying may
help) and ``PermanentBusError`` (the reply cannot be read, the request was refused as invalid —
retrying will not help). Error messages name ``service`` and what went wrong, never the request's
content.

A responder that is alive to NATS but does not answer — a replica frozen (SIGSTOP, a stuck event
loop, a paused VM) — still gets its share of a queue group's requests, and each of those would wait
the whole ``wait``. ``hedge_after`` sends the same request again each time that many seconds pass
without an answer; the first reply wins and the total wait stays ``wait``. Only for requests that may be
answered twice (reads: a scope, a token's user).
"""

from __future__ import annotations

import asyncio
import contextlib
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
    hedge_after: float = 0.0,
) -> R:
    """Send ``req`` on ``subject`` through the nats-py client ``nc`` and return the ``reply`` model
    (waiting ``wait`` seconds at most).

    ``service`` names the responder in error messages (``"authz-cache"``, ``"the alerts service"``).
    Raises ``TemporaryBusError`` or ``PermanentBusError`` (both ``BusError``), nothing else for a
    failure of the bus or the responder. ``hedge_after`` (> 0, < ``wait``): ask once more after that
    many seconds without an answer, and again after each further ``hedge_after`` (see the module's doc).
    """
    payload = req.model_dump_json().encode()
    hdrs = dict(headers) if headers else None
    try:
        if 0 < hedge_after < wait:
            msg = await _hedged(nc, subject, payload, hdrs, wait, hedge_after)
        else:
            msg = await nc.request(subject, payload, timeout=wait, headers=hdrs)
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


_MAX_COPIES = 16


async def _hedged(nc: NatsClient, subject: str, payload: bytes, headers: dict[str, str] | None, wait: float,
                  hedge_after: float) -> _Reply:
    """The first reply of the request or of a copy sent every ``hedge_after`` s without one (at most
    :data:`_MAX_COPIES`); every copy ends by ``wait``. The queue group picks a replica per copy, so
    with one of two replicas frozen all copies miss the live one with probability 2^-copies. A copy
    that fails leaves the others to answer; when all fail, the first copy's error."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    copies = [asyncio.ensure_future(nc.request(subject, payload, timeout=wait, headers=headers))]
    pending = set(copies)
    try:
        while pending:
            left = deadline - loop.time()
            more = len(copies) < _MAX_COPIES and left > hedge_after
            done, pending = await asyncio.wait(pending, timeout=hedge_after if more else None,
                                               return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task.exception() is None:
                    return task.result()
                if isinstance(task.exception(), NoRespondersError):
                    return task.result()  # nobody listens: no copy will do better
            if more and not done:
                copy = asyncio.ensure_future(nc.request(subject, payload, timeout=deadline - loop.time(),
                                                        headers=headers))
                copies.append(copy)
                pending.add(copy)
        return copies[0].result()  # every copy failed: raises the first one's error
    finally:
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


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

