"""The JetStream streams the reporter uses, and its publishes.

REPORTS is the reporter's own work queue (``<prefix>.reports.queued.<id>``, durable consumer
``reporter`` shared by its replicas): a report accepted by one replica is made by whichever is
free, and one that dies mid-report leaves it to another. It is defined here, not in
``sleuth_common.streams``, because no other service reads or writes it."""

from __future__ import annotations

import logging

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType
from nats.js.errors import BadRequestError, NotFoundError

from sleuth_common.messages import ChatPost
from sleuth_common.streams import StreamSpec
from sleuth_common.streams import ensure_streams as common_ensure_streams
from sleuth_common.subjects import Subjects

__all__ = ["ensure_streams", "publish_post", "reports_stream"]

log = logging.getLogger(__name__)

_STREAM_NAME_IN_USE = 10058


def reports_stream(subjects: Subjects) -> StreamSpec:
    return StreamSpec(subjects.stream_reports, (subjects.reports_queued_all,), 600.0)


async def ensure_streams(js: JetStreamContext, subjects: Subjects, replicas: int = 1) -> None:
    """REPORTS (here), JOBS (report jobs for the agent) and CHAT (the posts), with ``replicas``
    copies; an existing stream is left as it is."""
    await common_ensure_streams(js, subjects, "chat", "jobs", replicas=replicas)
    spec = reports_stream(subjects)
    try:
        await js.stream_info(spec.name)
        return
    except NotFoundError:
        pass
    try:
        await js.add_stream(
            name=spec.name, subjects=list(spec.subjects), retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE, duplicate_window=spec.duplicate_window, num_replicas=replicas,
        )
        log.info("created JetStream stream %s", spec.name)
    except BadRequestError as exc:
        if exc.err_code != _STREAM_NAME_IN_USE:
            raise


async def publish_post(js: JetStreamContext, subjects: Subjects, post: ChatPost, publish_timeout: float) -> None:
    """Put a post on CHAT; the stream (and the gateway) keep one copy per post id."""
    await js.publish(subjects.chat_outbound, post.to_bytes(), stream=subjects.stream_chat, timeout=publish_timeout,
                     headers={"Nats-Msg-Id": post.id})
