"""The JetStream streams the scheduler writes to, and its publishes."""

from __future__ import annotations

import logging

from nats.aio.client import Client as Nats
from nats.js import JetStreamContext
from nats.js.api import PubAck

from sleuth_common.audit import AuditLog
from sleuth_common.config import ServiceSettings
from sleuth_common.messages import ChatPost, InvestigationJob
from sleuth_common.messages.audit import ScheduleChanged
from sleuth_common.streams import ensure_streams as common_ensure_streams
from sleuth_common.subjects import Subjects

__all__ = ["audit_log", "ensure_streams", "publish_audit", "publish_job", "publish_post"]

log = logging.getLogger(__name__)


async def ensure_streams(js: JetStreamContext, subjects: Subjects, replicas: int = 1) -> None:
    """JOBS (the runs' investigations) and CHAT (their answers), as sleuth_common.streams defines
    them; an existing stream is left as it is."""
    await common_ensure_streams(js, subjects, "jobs", "chat", replicas=replicas)


async def publish_job(js: JetStreamContext, subjects: Subjects, job: InvestigationJob, wait: float) -> PubAck:
    """Put a run's job on JOBS. The stream stores one copy per job id within its duplicate window
    (a run published again by a replica that took over a stale claim), and the agent answers a
    job id once."""
    return await js.publish(subjects.jobs_investigate, job.to_bytes(), stream=subjects.stream_jobs,
                            timeout=wait, headers={"Nats-Msg-Id": job.id})


async def publish_post(js: JetStreamContext, subjects: Subjects, post: ChatPost, wait: float) -> None:
    """Put a post on CHAT; the stream drops a second copy with the same id, and the gateway shows
    a post id once."""
    await js.publish(subjects.chat_outbound, post.to_bytes(), stream=subjects.stream_chat, timeout=wait,
                     headers={"Nats-Msg-Id": post.id})


_OPS = {"create": "created", "delete": "deleted", "pause": "paused", "resume": "resumed"}


async def publish_audit(audit: AuditLog, op: str, *, schedule: str, user: str, owner: str,
                        groups: tuple[str, ...] = ()) -> None:
    """``audit.schedule_changed``: who created, paused, resumed or deleted which schedule (``user``
    = ``scheduler`` when it disabled one itself). Never its question, its answers or its target."""
    await audit.emit(ScheduleChanged(op=_OPS.get(op, op), schedule=schedule, user=user, groups=groups, owner=owner,
                                     entry="schedule" if user == "scheduler" else "bus"))


def audit_log(nc: Nats, settings: ServiceSettings) -> AuditLog:
    """An AuditLog bound to ``nc``, for parts built without the app's (tests)."""
    audit = AuditLog(Subjects(settings.prefix), "scheduler", settings.audit)
    audit.bind_nats(nc)
    return audit
