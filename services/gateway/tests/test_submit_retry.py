"""A job submitted while JOBS has nobody to take it (a clustered stream electing a new leader after
its node died; here the stream briefly absent) is sent again within ``publish_timeout`` and
stored once; past that it is a clear "try again" error. Found by the chaos soak (tests/test_soak.py),
where questions asked during the election were refused with 503. Real nats-server."""

from __future__ import annotations

import asyncio
import time

import nats
import pytest

from sleuth.embedded import NatsServer
from sleuth_common.bus import TemporaryBusError
from sleuth_common.config import NatsSettings
from sleuth_common.health import RetryLog
from sleuth_common.messages import InvestigationJob, Requester
from sleuth_common.streams import ensure_streams
from sleuth_common.subjects import Subjects
from sleuth_gateway.bus import Bus

pytestmark = pytest.mark.connected


async def test_a_job_sent_while_jobs_has_no_leader_is_sent_again_and_stored_once(nats_server: NatsServer) -> None:
    subjects = Subjects("retry")
    bus = Bus(NatsSettings(url=nats_server.url), subjects, request_timeout=1.0, publish_timeout=3.0)
    bus.prepare(RetryLog("NATS", nats_server.url, 1.0))
    await bus.connect()  # makes JOBS
    nc = await nats.connect(nats_server.url)
    js = nc.jetstream()
    try:
        await js.delete_stream(subjects.stream_jobs)  # nobody answers a publish on jobs.investigate now
        job = InvestigationJob(requester=Requester(user="alice"), question="what is failing in team-a?")
        submitting = asyncio.create_task(bus.submit(job))
        await asyncio.sleep(0.6)
        assert not submitting.done(), "the submit gave up at once"
        await ensure_streams(js, subjects, "jobs")  # the stream answers again
        await asyncio.wait_for(submitting, 5)
        info = await js.stream_info(subjects.stream_jobs)
        assert info.state.messages == 1

        await js.delete_stream(subjects.stream_jobs)
        t0 = time.monotonic()
        with pytest.raises(TemporaryBusError, match="did not accept"):
            await bus.submit(InvestigationJob(requester=Requester(user="alice"), question="again?"))
        assert 2.0 <= time.monotonic() - t0 < 10, "tried again until publish_timeout, then gave up"
    finally:
        await nc.close()
        await bus.close()
