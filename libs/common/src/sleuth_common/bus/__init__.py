"""Core request/reply over NATS, both sides, with typed errors (DESIGN §1: "requests that can
simply be retried use core request/reply").

Asking: ``await request(nc, subject, ScopeRequest(...), ScopeReply, wait=2, service="authz-cache")``
returns the reply model or raises ``TemporaryBusError`` (retrying may help) or
``PermanentBusError`` (it will not), both ``BusError``.

Answering: FastStream subscribers behind ``error_replies(...)``, which answers a request that does
not validate with a permanent error reply and a crash with a temporary one (logged with a
reference, counted). An error reply carries the ``Sleuth-Error`` header and a ``BusErrorReply``
(``sleuth_common.messages.errors``); ``request`` and ``read_reply`` turn it into the typed error.

JetStream: the pull consumers (agent jobs, alerts ingest and results, reporter queue, gateway
chat posts) stay hand-written nats-py loops that fetch only when a worker slot is free and send
in-progress heartbeats while working. FastStream 0.7.8's ``ConcurrentPullStreamSubscriber``
(``max_workers`` > 1) fetches a batch, then waits in ``_put_msg`` for the limiter — which it holds
only to put the message in a ``max_workers``-sized memory buffer — while its workers are busy: the
fetched messages are then held by this replica (ack-pending, no heartbeat) instead of being left
to an idle one, and may pass ``ack_wait`` and be redelivered while still queued. Measured with 2
busy workers and 8 messages: 3 ack-pending after 1 s.
"""

from sleuth_common.bus._client import read_reply, request
from sleuth_common.bus._errors import BusError, PermanentBusError, Reason, TemporaryBusError
from sleuth_common.bus._responder import ErrorReplies, error_replies, error_reply, handler_crashes

__all__ = [
    "BusError",
    "ErrorReplies",
    "PermanentBusError",
    "Reason",
    "TemporaryBusError",
    "error_replies",
    "error_reply",
    "handler_crashes",
    "read_reply",
    "request",
]
