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
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType
from nats.js.errors import BadRequestError, NotFoundError

from sleuth_common.subjects import Subjects

log = logging.getLogger(__name__)

__all__ = ["StreamSpec", "ensure_streams", "stream_specs"]

_STREAM_NAME_IN_USE = 10058
AUDIT_MAX_AGE = 30 * 86400.0
"""Default of ``audit.max_age``: 30 days."""
AUDIT_MAX_BYTES = 1 << 30
"""Default of ``audit.max_bytes``: 1 GiB."""


@dataclass(frozen=True)
class StreamSpec:
    name: str
    subjects: tuple[str, ...]
    duplicate_window: float = 120.0
    """Seconds within which a message with the same Nats-Msg-Id is stored once."""
    retention: RetentionPolicy = RetentionPolicy.WORK_QUEUE
    """WORK_QUEUE: a message is gone once acked; LIMITS: kept until ``max_age`` / ``max_bytes``."""
    max_age: float = 0.0
    """Seconds a message is kept at most (0: no limit)."""
    max_bytes: int = -1
    """Bytes the stream keeps at most, the oldest messages dropped first (-1: no limit)."""
    max_msgs_per_subject: int = -1
    """Messages kept per subject (-1: no limit)."""


def stream_specs(
    subjects: Subjects, *, results_max_age: float = 3600.0, results_max_bytes: int = 1 << 30,
    audit_max_age: float = AUDIT_MAX_AGE, audit_max_bytes: int = AUDIT_MAX_BYTES,
) -> dict[str, StreamSpec]:
    """JOBS (investigation jobs), CHAT (posts to deliver, deduplicated by post id for 10 minutes),
    ALERTS (webhook payloads and alert investigations' answers): work queues on file storage.
    RESULTS (every job's answer on ``jobs.done.<job>``, one per job, deduplicated by job id): kept
    ``results_max_age`` seconds (config ``jetstream.results_max_age``), so a gateway restarted while
    a question ran still finds its answer. AUDIT (every ``audit.<kind>`` event): kept
    ``audit_max_age`` seconds and ``audit_max_bytes`` at most (config ``audit.max_age`` /
    ``audit.max_bytes``), the oldest dropped first, so an auditor can replay what it missed."""
    return {
        "jobs": StreamSpec(subjects.stream_jobs, (subjects.jobs_investigate,)),
        "chat": StreamSpec(subjects.stream_chat, (subjects.chat_outbound,), 600.0),
        "alerts": StreamSpec(subjects.stream_alerts, (subjects.alerts_ingest, subjects.alerts_results_all)),
        "results": StreamSpec(
            subjects.stream_results,
            (subjects.jobs_done_all,),
            duplicate_window=min(120.0, results_max_age),
            retention=RetentionPolicy.LIMITS,
            max_age=results_max_age,
            max_bytes=results_max_bytes,
            max_msgs_per_subject=1,
        ),
        "audit": StreamSpec(
            subjects.stream_audit,
            (subjects.audit_all,),
            retention=RetentionPolicy.LIMITS,
            max_age=audit_max_age,
            max_bytes=audit_max_bytes,
        ),
    }


async def ensure_streams(
    js: JetStreamContext,
    subjects: Subjects,
    *which: str,
    replicas: int = 1,
    results_max_age: float = 3600.0,
    results_max_bytes: int = 1 << 30,
    audit_max_age: float = AUDIT_MAX_AGE,
    audit_max_bytes: int = AUDIT_MAX_BYTES,
) -> None:
    """Create the named streams (``"jobs"``, ``"chat"``, ``"alerts"``, ``"results"``) if absent,
    with ``replicas`` copies (config ``jetstream.replicas``). Safe to call from several processes
    at once."""
    specs = stream_specs(subjects, results_max_age=results_max_age, results_max_bytes=results_max_bytes,
                         audit_max_age=audit_max_age, audit_max_bytes=audit_max_bytes)
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
                retention=spec.retention,
                storage=StorageType.FILE,
                duplicate_window=spec.duplicate_window,
                max_age=spec.max_age or None,
                max_bytes=spec.max_bytes,
                max_msgs_per_subject=spec.max_msgs_per_subject,
                discard=DiscardPolicy.OLD,
                num_replicas=replicas,
            )
            log.info("created JetStream stream %s", spec.name)
        except BadRequestError as exc:
            if exc.err_code != _STREAM_NAME_IN_USE:
                raise
