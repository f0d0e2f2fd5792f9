"""Asking the agent for a report: one ``InvestigationJob`` of origin ``report`` on JOBS, for the
asker (the requester) and every other reader of the target (the audience: the agent makes the
report with the intersection of all their scopes), signed by the reporter's key as issuer
``sleuth-reporter`` (the agent trusts nothing else about who asked), answered on
``jobs.done.<job>``.

Every try is a new job with a new id: a reporter that died while the agent worked leaves the
task to another replica, which asks again rather than wait for an answer nobody is listening for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid

from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from pydantic import ValidationError

from sleuth_common.channels import audience_claims
from sleuth_common.identity import IdentityError, IdentitySigner
from sleuth_common.messages import InvestigationJob, InvestigationResult, ReportTask, Requester
from sleuth_common.subjects import Subjects
from sleuth_reporter.settings import Settings

__all__ = ["REPORTER_ISSUER", "AgentClient", "audience_of"]

log = logging.getLogger(__name__)

REPORTER_ISSUER = "sleuth-reporter"


def audience_of(asker: Requester, members: tuple[Requester, ...]) -> tuple[Requester, ...]:
    """The readers besides the asker, each once (the asker is the requester)."""
    seen = {(asker.user, frozenset(asker.groups))}
    out = []
    for m in members:
        key = (m.user, frozenset(m.groups))
        if key not in seen:
            seen.add(key)
            out.append(m)
    return tuple(out)


class AgentClient:
    def __init__(self, nc: Nats, js: JetStreamContext, settings: Settings, signer: IdentitySigner | None) -> None:
        self.nc = nc
        self.js = js
        self.settings = settings
        self.cfg = settings.reporter
        self.subjects = Subjects(settings.prefix)
        self.signer = signer

    def job(self, task: ReportTask) -> InvestigationJob:
        req = task.request
        asker = Requester(user=req.user, groups=req.groups)
        audience = audience_of(asker, req.members)
        job_id = uuid.uuid4().hex
        return InvestigationJob(
            id=job_id,
            origin="report",
            requester=asker,
            question="best-practice report",
            clusters=req.clusters,
            deadline=time.time() + self.cfg.report_timeout,
            unattended=True,
            reply_subject=self.subjects.jobs_done(job_id),
            chat_target=req.target,
            audience=audience,
            identity=self._assert(asker, job_id, audience, task.id),
        )

    def _assert(self, who: Requester, job_id: str, audience: tuple[Requester, ...], report_id: str) -> str:
        if self.signer is None:
            return ""  # the agent refuses it, and says so in the post
        try:
            return self.signer.mint(who.user, who.groups, audience=self.settings.identity.job_audience,
                                    job=job_id, members=audience_claims(audience))
        except IdentityError as e:
            log.warning("cannot sign the report's identity: %s", e, extra={"report": report_id})
            return ""

    async def ask(self, task: ReportTask) -> InvestigationResult | None:
        """The agent's answer, or None when none came by the deadline and its grace."""
        job = self.job(task)
        answered: asyncio.Future[InvestigationResult] = asyncio.get_running_loop().create_future()

        async def on_done(msg: Msg) -> None:
            try:
                result = InvestigationResult.model_validate_json(msg.data)
            except ValidationError:
                log.error("dropped a malformed answer to a report job", extra={"report": task.id, "job_id": job.id})
                return
            if not answered.done():
                answered.set_result(result)

        sub = await self.nc.subscribe(self.subjects.jobs_done(job.id), cb=on_done)
        try:
            await self.nc.flush(timeout=max(1, int(self.cfg.publish_timeout)))
            await self.js.publish(self.subjects.jobs_investigate, job.to_bytes(), stream=self.subjects.stream_jobs,
                                  timeout=self.cfg.publish_timeout, headers={"Nats-Msg-Id": job.id})
            log.info("report job submitted", extra={"report": task.id, "job_id": job.id, "user": job.requester.user,
                                                    "readers": len(job.audience) + 1})
            try:
                return await asyncio.wait_for(answered, self.cfg.report_timeout + self.cfg.answer_grace)
            except TimeoutError:
                log.warning("no answer to the report job", extra={"report": task.id, "job_id": job.id})
                return None
        finally:
            with contextlib.suppress(NatsError):
                await sub.unsubscribe()
