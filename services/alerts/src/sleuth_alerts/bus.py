"""JetStream streams the alerts service relies on, and the publishes it makes."""

from __future__ import annotations

import logging

from nats.js import JetStreamContext

from sleuth_common.messages import ChatPost
from sleuth_common.streams import ensure_streams as common_ensure_streams
from sleuth_common.subjects import Subjects

__all__ = ["ensure_streams", "publish_post"]

log = logging.getLogger(__name__)



async def ensure_streams(js: JetStreamContext, subjects: Subjects, replicas: int = 1) -> None:
    """ALERTS (webhook payloads and alert investigations' answers), CHAT (posts to deliver) and
    JOBS, as defined once in sleuth_common.streams, with ``replicas`` copies. An existing stream
    is left as it is."""
    await common_ensure_streams(js, subjects, "alerts", "chat", "jobs", replicas=replicas)


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
