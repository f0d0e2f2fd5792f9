"""The answering side: one FastStream middleware that turns every failure of a responder into an
error reply (``sleuth_common.messages.errors``), so an asker never waits out a timeout for a
request that was never going to be answered.

- a request that does not validate against the handler's model, or a handler raising
  ``PermanentBusError`` → a ``permanent`` error reply (logged at info, without the request);
- a handler raising ``TemporaryBusError`` (a dependency it asked is down) → a ``temporary`` one;
- any other exception (a crash) → logged with a reference id and its traceback, counted, and a
  ``temporary`` error reply naming the reference. Crashes are counted in the service's ``sleuth_handler_crashes``
  counter (labels ``service``, ``handler``: the handler function's name).

Put it on every responder's router: ``NatsRouter(middlewares=[error_replies(metrics.crashes, "alerts")])``.
A handler whose message has no reply subject (a plain publish) is logged and counted the same way.
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from faststream import Response
from faststream.middlewares import BaseMiddleware
from prometheus_client import CollectorRegistry, Counter
from pydantic import ValidationError

from sleuth_common.bus._errors import PermanentBusError, TemporaryBusError
from sleuth_common.messages.errors import ERROR_HEADER, BusErrorReply, ErrorKind
from sleuth_common.redact import redact_text


def handler_crashes(registry: CollectorRegistry, service: str, *handlers: str) -> Counter:
    """Every service's ``sleuth_handler_crashes{service,handler}``: messages or requests whose
    handler raised unexpectedly (logged with its traceback). ``handlers`` are pre-created at 0 so
    a rule sees the series before the first crash."""
    crashes = Counter(
        "sleuth_handler_crashes",
        "Messages or requests whose handler raised unexpectedly (logged with its traceback), by service and handler",
        ["service", "handler"],
        registry=registry,
    )
    for handler in handlers:
        crashes.labels(service, handler)
    return crashes

if TYPE_CHECKING:
    from faststream._internal.context.repository import ContextRepo
    from faststream.message import StreamMessage

__all__ = ["ErrorReplies", "error_replies", "error_reply"]

log = logging.getLogger(__name__)

_MAX_FIELDS = 3


def error_reply(kind: ErrorKind, error: str, ref: str = "") -> Response:
    """The error reply a responder sends instead of its reply model."""
    body = BusErrorReply(temporary=kind == "temporary", error=error, ref=ref)
    return Response(body.to_bytes(), headers={ERROR_HEADER: kind, "content-type": "application/json"})


def _argument_error(exc: ValidationError) -> bool:
    """Whether ``exc`` is the handler's argument failing validation (raised by FastStream's
    dependency injection before the handler ran), not a model the handler itself built."""
    innermost = ""
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if f"{os.sep}pydantic{os.sep}" not in name:
            innermost = name
        tb = tb.tb_next
    return f"{os.sep}fast_depends{os.sep}" in innermost


def _fields(exc: ValidationError) -> str:
    """Which fields failed, and how, as error types only: a message could quote the input (a token).
    The first element of each location is the handler's argument name, left out."""
    errors = exc.errors(include_input=False, include_url=False, include_context=False)
    parts = [f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'} ({e['type']})" for e in errors[:_MAX_FIELDS]]
    more = f" and {len(errors) - _MAX_FIELDS} more" if len(errors) > _MAX_FIELDS else ""
    return ", ".join(parts) + more


class ErrorReplies(BaseMiddleware):
    """The middleware (one instance per message); build it with ``error_replies``."""

    def __init__(self, msg: Any, /, *, context: ContextRepo, crashes: Counter | None = None,
                 service: str = "") -> None:
        super().__init__(msg, context=context)
        self._crashes = crashes
        self._service = service

    def _subject(self) -> str:
        """The subscription (a pattern such as ``sleuth.schedules.*``), not the concrete subject."""
        address = getattr(self.context.get_local("handler_"), "subject", None)
        return str(getattr(address, "template", "") or "") or "unknown"

    def _handler(self) -> str:
        """The handler function's name (a bounded metric label)."""
        calls = getattr(self.context.get_local("handler_"), "calls", None) or ()
        return ",".join(c.name for c in calls) or "unknown"

    async def consume_scope(self, call_next: Callable[..., Any], msg: StreamMessage[Any]) -> Any:
        try:
            return await call_next(msg)
        except PermanentBusError as exc:
            log.info("refused a request on %s: %s", self._subject(), exc, extra={"subject": self._subject()})
            return error_reply("permanent", str(exc))
        except ValidationError as exc:
            if not _argument_error(exc):
                return self._crashed(exc)
            fields = _fields(exc)
            log.info("refused a malformed request on %s: %s", self._subject(), fields,
                     extra={"subject": self._subject()})
            return error_reply("permanent", f"malformed request: {fields}")
        except TemporaryBusError as exc:
            log.warning("could not answer a request on %s: %s", self._subject(), exc,
                        extra={"subject": self._subject()})
            return error_reply("temporary", str(exc))
        except Exception as exc:  # the process edge of every handler: logged with a reference, counted, answered
            return self._crashed(exc)

    def _crashed(self, exc: Exception) -> Response:
        ref = secrets.token_hex(4)
        subject = self._subject()
        # The traceback and the exception's text with credential-shaped values redacted (an
        # exception may quote what it was handling); never the request.
        text, _ = redact_text(str(exc))
        log.error("handler on %s crashed (ref %s): %s: %s\n%s", subject, ref, type(exc).__name__, text,
                  "".join(traceback.format_tb(exc.__traceback__)).rstrip(), extra={"subject": subject, "ref": ref})
        if self._crashes is not None:
            self._crashes.labels(self._service, self._handler()).inc()
        return error_reply("temporary", "the service failed while answering; the failure is logged", ref)


def error_replies(crashes: Counter | None, service: str) -> Callable[..., ErrorReplies]:
    """The ``ErrorReplies`` middleware counting crashes in ``crashes`` (the service's
    ``sleuth_handler_crashes`` counter, labels ``service`` and ``handler``: the function's name)."""
    return functools.partial(ErrorReplies, crashes=crashes, service=service)
