"""Bus edges: ``<prefix>.alerts.channels.<op>`` (request/reply, queue group ``alerts``), the chat
commands ``alerts on|off|status`` from the gateway (``ChannelCommands``)."""

from __future__ import annotations

import logging

from faststream.nats import NatsRouter
from prometheus_client import Counter
from redis.exceptions import RedisError

from sleuth_alerts.channels import ChannelCommands
from sleuth_common.bus import error_replies
from sleuth_common.messages import AlertChannelReply, AlertChannelRequest
from sleuth_common.subjects import Subjects

__all__ = ["ALERTS_QUEUE", "build_router"]

log = logging.getLogger(__name__)

ALERTS_QUEUE = "alerts"
"""Queue group of the alerts replicas (one answers a command)."""


def build_router(commands: ChannelCommands, subjects: Subjects, *, crashes: Counter | None = None) -> NatsRouter:
    """The channel commands, answered one at a time per replica (as the marks are read and written
    in order); a malformed command gets a permanent error reply, a crash a temporary one."""
    router = NatsRouter(middlewares=[error_replies(crashes, "alerts")])

    @router.subscriber(subjects.alerts_channels_all, queue=ALERTS_QUEUE)
    async def channel_command(req: AlertChannelRequest) -> AlertChannelReply:
        try:
            return await commands.handle(req)
        except (RedisError, OSError) as exc:
            log.warning("alerts command failed: %s", exc)
            return AlertChannelReply(ok=False, text="The alert state is unavailable; try again shortly.")

    return router
