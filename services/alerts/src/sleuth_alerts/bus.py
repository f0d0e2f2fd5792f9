"""JetStream streams the alerts service relies on, and the publishes it makes."""

from __future__ import annotations

import logging

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType
from nats.js.errors import BadRequestError, NotFoundError

from sleuth_common.messages import ChatPost
from sleuth_common.subjects import Subjects

__all__ = ["ensure_streams", "publish_post"]

log = logging.getLogger(__name__)

_STREAM_NAME_IN_USE = 10058


async def _ensure(
    js: JetStreamContext,
    name: str,
    subjects: list[str],
    retention: RetentionPolicy,
    duplicate_window: float = 120.0,
) -> None:
    try:
        await js.stream_info(name)
        return
    except NotFoundError:
        pass
    try:
        await js.add_stream(
            name=name,
            subjects=subjects,
            retention=retention,
            storage=StorageType.FILE,
            duplicate_window=duplicate_window,
        )
        log.info("created JetStream stream %s", name)
    except BadRequestError as exc:
        if exc.err_code != _STREAM_NAME_IN_USE:
            raise


async def ensure_streams(js: JetStreamContext, subjects: Subjects) -> None:
    """ALERTS (webhook payloads and alert investigations' answers; work queue), CHAT (posts to
    deliver; work queue, deduplicated by post id for 10 minutes) and JOBS (as the gateway makes
    it). An existing stream is left as its creator made it."""
    await _ensure(
        js,
        subjects.stream_alerts,
        [subjects.alerts_ingest, subjects.alerts_results_all],
        RetentionPolicy.WORK_QUEUE,
    )
    await _ensure(js, subjects.stream_chat, [subjects.chat_outbound], RetentionPolicy.WORK_QUEUE, 600.0)
    await _ensure(js, subjects.stream_jobs, [subjects.jobs_investigate], RetentionPolicy.WORK_QUEUE)


async def publish_post(
    js: JetStreamContext, subjects: Subjects, post: ChatPost, publish_timeout: float
) -> None:
    """Put a post on CHAT; the stream drops a second copy with the same id."""
    await js.publish(
        subjects.chat_outbound,
        post.to_bytes(),
        stream=subjects.stream_chat,
        timeout=publish_timeout,
        headers={"Nats-Msg-Id": post.id},
    )
