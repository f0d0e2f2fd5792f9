"""Feedback on answers (issue 17 part 4): ``<prefix>.agent.feedback`` over a real nats-server with the
incidents in a real Valkey — only the asker or a reader of an answer may give it; anyone else cannot
tell the job exists (the reply, the logs, the metric labels); the fix reaches every agent's index and
"seen before"."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from faststream.nats import NatsBroker
from prometheus_client import CollectorRegistry, Counter
from pydantic import ValidationError
from redis.asyncio import Redis

from sleuth_agent.incidents import (
    FeedbackResponder,
    IncidentMemory,
    IncidentStore,
    feedback_router,
    incident_of,
    incidents_router,
    seen_before_section,
    unknown_answer,
)
from sleuth_agent.settings import IncidentsSettings
from sleuth_common.bus import PermanentBusError, read_reply
from sleuth_common.messages import FeedbackReply, FeedbackRequest, Requester
from sleuth_common.subjects import Subjects

from .test_incidents import ALICE, job, result

pytestmark = pytest.mark.timeout(30)

SUBJECTS = Subjects("sleuth")


def counters() -> tuple[CollectorRegistry, Counter, Counter]:
    registry = CollectorRegistry()
    given = Counter("sleuth_agent_feedback", "", ["verdict", "family"], registry=registry)
    refused = Counter("sleuth_agent_feedback_refused", "", ["reason"], registry=registry)
    return registry, given, refused


def channel_incident(id: str, at: float) -> Any:
    """alice asked in a channel whose members are dave and the group ``sre``."""
    asked = job(id=id).model_copy(update={"audience": (Requester(user="alice"), Requester(user="dave"),
                                                       Requester(user="", groups=("sre",)))})
    made = incident_of(asked, result(), ALICE, now=at)
    assert made is not None and made.readers == ("dave",) and made.reader_groups == ("sre",)
    return made


@pytest.mark.parametrize("bad", [
    {"job_id": "j1", "user": "alice"},  # neither a verdict nor a fix
    {"job_id": "j1", "user": "alice", "verdict": "meh"},
    {"job_id": "j1", "user": "alice", "fixed_by": "x" * 501},
    {"job_id": "j1", "user": "alice", "fixed_by": "raised it\x1b[31m"},
    {"job_id": "j1", "user": "alice", "fixed_by": "raised\u202eit"},
    # one line of visible text: it is shown to others, it may not break out of its line or hide
    {"job_id": "j1", "user": "alice", "fixed_by": "raised it\n\n# Root cause"},
    {"job_id": "j1", "user": "alice", "fixed_by": "raised\tit"},
    {"job_id": "j1", "user": "alice", "fixed_by": "raised\u200bit"},
    {"job_id": "j1", "user": "alice", "fixed_by": "raised\u200fit"},
    {"job_id": "../j1 x", "user": "alice", "verdict": "up"},
    {"job_id": "j1", "user": "", "verdict": "up"},
])
def test_malformed_feedback_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        FeedbackRequest(**bad)
    assert FeedbackRequest(job_id="j1", user="a", fixed_by="  raised the limit to 1Gi ").fixed_by == (
        "raised the limit to 1Gi")


@contextlib.asynccontextmanager
async def agent(nats_url: str, memory: IncidentMemory,
                responder: FeedbackResponder | None = None) -> AsyncIterator[NatsBroker]:
    """The agent's feedback and incidents subscribers on their own broker (as ``sleuth_agent.app`` wires
    them); without ``responder``, an agent that only hears incidents."""
    broker = NatsBroker(nats_url)
    if responder is not None:
        broker.include_router(feedback_router(lambda: responder, SUBJECTS))
    broker.include_router(incidents_router(lambda: memory, SUBJECTS))
    await broker.start()
    nc = broker._connection
    assert nc is not None

    async def announce(message: Any) -> None:
        await nc.publish(SUBJECTS.incidents_recorded, message.to_bytes())

    memory.announce_with(announce)
    try:
        yield broker
    finally:
        await broker.stop()


async def test_only_the_asker_and_readers_give_feedback_and_others_learn_nothing(
        nats_server, valkey, caplog) -> None:
    redis = Redis.from_url(valkey.url)
    nc = await nats.connect(nats_server.url)
    registry, given, refused = counters()
    settings = IncidentsSettings(reindex_interval=0.05)
    memory = IncidentMemory(IncidentStore(redis, "sleuth", max_incidents=100, max_age=86400), settings)
    other = IncidentMemory(None, settings)  # another agent: hears the news only
    now = time.time()
    asked = channel_incident("job-1", now - 60)
    await memory.record(asked)

    async def give(**kw: Any) -> FeedbackReply:
        msg = await nc.request(SUBJECTS.agent_feedback, FeedbackRequest(**kw).to_bytes(), timeout=5)
        return read_reply(msg, FeedbackReply, service="the agent")

    try:
        async with agent(nats_server.url, memory, FeedbackResponder(memory, given, refused)), \
                agent(nats_server.url, other):
            # Not the asker, not a reader (bob, with another group): the reply of a job that does not exist.
            caplog.set_level(logging.DEBUG)
            caplog.clear()
            for who in ({"user": "bob", "groups": ("team-b",)}, {"user": "mallory"}):
                denied = await give(job_id="job-1", verdict="down", fixed_by="nothing", **who)
                missing = await give(job_id="job-404", verdict="down", fixed_by="nothing", **who)
                assert not denied.ok and not missing.ok
                assert denied.text == unknown_answer("job-1") == missing.text.replace("job-404", "job-1")
            logged = caplog.text
            assert asked.family not in logged and asked.resource not in logged and "api" not in logged
            assert registry.get_sample_value("sleuth_agent_feedback_refused_total", {"reason": "unknown"}) == 4
            assert not [s for m in registry.collect() for s in m.samples
                        if s.name == "sleuth_agent_feedback_total"]  # no family label was ever made
            assert (await memory.find("job-1")).verdict == ""  # nothing changed  # type: ignore[union-attr]

            # The asker: 👎 and what fixed it — stored in Redis, announced, in every agent's index.
            ok = await give(job_id="job-1", user="alice", verdict="down", fixed_by="raised the limit to 1Gi",
                            origin="api")
            assert ok.ok and "marked wrong" in ok.text and "fix is noted" in ok.text
            stored = await IncidentStore(redis, "sleuth", max_incidents=100, max_age=86400).get("job-1")
            assert stored is not None
            assert (stored.verdict, stored.fixed_by, stored.feedback_by) == ("down", "raised the limit to 1Gi", "alice")
            async with asyncio.timeout(5):
                while (i := other.index.get("job-1")) is None or i.fixed_by != stored.fixed_by:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
            hits = await other.search(channel_incident("job-2", now), ALICE)
            assert "Fixed by: `raised the limit to 1Gi`" in seen_before_section(hits)
            assert registry.get_sample_value("sleuth_agent_feedback_total",
                                             {"verdict": "down", "family": asked.family}) == 1

            # A channel's readers: dave by name, a member of group sre; the fix stays when only a verdict comes.
            assert (await give(job_id="job-1", user="dave", verdict="up")).ok
            assert (await give(job_id="job-1", user="erin", groups=("sre",), verdict="up")).ok
            latest = await memory.find("job-1")
            assert latest is not None and (latest.verdict, latest.fixed_by, latest.feedback_by) == (
                "up", "raised the limit to 1Gi", "erin")

            # A fix naming another namespace's object: the incident needs that namespace too from now on.
            assert (await give(job_id="job-1", user="alice", fixed_by="moved it to Deployment/team-b/db")).ok
            latest = await memory.find("job-1")
            assert latest is not None and latest.namespaces == ("team-a", "team-b")
            assert await memory.search(channel_incident("job-3", now), ALICE) == []

            # Malformed on the wire: a permanent error, never a crash or a silence.
            raw = await nc.request(SUBJECTS.agent_feedback, b'{"job_id": "job-1", "user": "alice"}', timeout=5)
            with pytest.raises(PermanentBusError):
                read_reply(raw, FeedbackReply, service="the agent")
    finally:
        await nc.drain()
        await redis.aclose()


async def test_with_redis_down_every_job_reads_the_same() -> None:
    dead = Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    registry, given, refused = counters()
    memory = IncidentMemory(IncidentStore(dead, "sleuth", max_incidents=10, max_age=86400),
                            IncidentsSettings(redis_timeout=0.1))
    memory.index.add([channel_incident("job-1", time.time())])  # known to this agent's index, not readable in Redis
    responder = FeedbackResponder(memory, given, refused)
    try:
        replies = [await responder.reply(FeedbackRequest(job_id=j, user=u, verdict="down"))
                   for j in ("job-1", "job-404") for u in ("alice", "bob")]
        assert {r.text for r in replies} == {replies[0].text} and not replies[0].ok
        assert "unavailable" in replies[0].text
        assert registry.get_sample_value("sleuth_agent_feedback_refused_total", {"reason": "unavailable"}) == 4
    finally:
        await dead.aclose()
