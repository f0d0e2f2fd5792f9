"""The JetStream streams of the bus, defined once (DESIGN §1).

Every service that publishes to or consumes from a stream calls ``ensure_streams`` at start-up
with the streams it uses; whichever starts first creates them, with the same configuration, so
replicas and services never race each other into conflicting configs. An existing stream is left
as it is (an operator may have tuned it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType
from nats.js.errors import BadRequestError, NotFoundError

from sleuth_common.subjects import Subjects

log = logging.getLogger(__name__)

__all__ = ["StreamSpec", "ensure_streams", "stream_specs"]

_STREAM_NAME_IN_USE = 10058


@dataclass(frozen=True)
class StreamSpec:
    name: str
    subjects: tuple[str, ...]
    duplicate_window: float = 120.0
    """Seconds within which a message with the same Nats-Msg-Id is stored once."""


def stream_specs(subjects: Subjects) -> dict[str, StreamSpec]:
    """JOBS (investigation jobs), CHAT (posts to deliver, deduplicated by post id for 10 minutes),
    ALERTS (webhook payloads and alert investigations' answers). All work queues on file storage."""
    return {
        "jobs": StreamSpec(subjects.stream_jobs, (subjects.jobs_investigate,)),
        "chat": StreamSpec(subjects.stream_chat, (subjects.chat_outbound,), 600.0),
        "alerts": StreamSpec(subjects.stream_alerts, (subjects.alerts_ingest, subjects.alerts_results_all)),
    }


async def ensure_streams(js: JetStreamContext, subjects: Subjects, *which: str, replicas: int = 1) -> None:
    """Create the named streams (``"jobs"``, ``"chat"``, ``"alerts"``) if absent, with ``replicas``
    copies (config ``jetstream.replicas``). Safe to call from several processes at once."""
    specs = stream_specs(subjects)
    for key in which:
        spec = specs[key]
        try:
            await js.stream_info(spec.name)
            continue
        except NotFoundError:
            pass
        try:
            await js.add_stream(
                name=spec.name,
                subjects=list(spec.subjects),
                retention=RetentionPolicy.WORK_QUEUE,
                storage=StorageType.FILE,
                duplicate_window=spec.duplicate_window,
                num_replicas=replicas,
            )
            log.info("created JetStream stream %s", spec.name)
        except BadRequestError as exc:
            if exc.err_code != _STREAM_NAME_IN_USE:
                raise
