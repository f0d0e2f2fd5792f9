"""Audit events (``sleuth_common.messages.audit``) and their publisher (``sleuth_common.audit``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nats
import pytest
from nats.js.api import RetentionPolicy
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from sleuth_common.audit import AuditLog, tool_call_event
from sleuth_common.config import AuditSettings
from sleuth_common.mcp import ToolAuditEvent
from sleuth_common.messages.audit import (
    AUDIT_KINDS,
    Authenticated,
    CommandRun,
    JobFinished,
    ScheduleChanged,
    ScopeResolved,
    ToolCall,
    parse_audit_event,
)
from sleuth_common.subjects import Subjects

S = Subjects("sleuth")


def test_every_kind_parses_back_and_names_its_subject() -> None:
    events = [Authenticated(user="alice", decision="refused", reason="invalid_token"),
              CommandRun(command="alerts", user="bob"), ScheduleChanged(op="created", schedule="s1"),
              JobFinished(job_id="j1", status="diagnosed", counts={"evidence": 3})]
    for e in events:
        back = parse_audit_event(e.to_bytes())
        assert back == e and type(back) is type(e)
        assert S.audit(back.subject_name) == f"sleuth.audit.{e.kind.removeprefix('audit.')}"
    assert parse_audit_event(events[0].model_dump(mode="json")) == events[0]
    assert len(set(AUDIT_KINDS)) == len(AUDIT_KINDS) == 16


def test_unknown_kinds_and_free_text_reasons_are_refused() -> None:
    with pytest.raises(ValidationError):
        parse_audit_event(b'{"kind": "audit.something_else", "user": "x"}')
    with pytest.raises(ValidationError):  # a reason is a code, never a sentence that could carry data
        Authenticated(reason="the token eyJhbGci... was not accepted")
    assert JobFinished(counts={"withheld": -3}).counts == {"withheld": 0}


def test_a_tool_call_event_carries_counts_and_codes_only() -> None:
    e = tool_call_event(ToolAuditEvent(user="alice", cluster="demo", server="kube", tool="pods_list",
                                       outcome="denied", removed=4, reason="namespace_out_of_scope", redacted=2),
                        job_id="j1", entry="api", user="alice", groups=("team-a",))
    assert isinstance(e, ToolCall)
    assert (e.decision, e.reason, e.job_id, e.entry, e.groups) == ("refused", "namespace_out_of_scope", "j1", "api",
                                                                    ("team-a",))
    assert e.counts == {"removed": 4, "redacted": 2, "cut": 0, "calls": 1}


def _count(registry: CollectorRegistry, outcome: str) -> float:
    return registry.get_sample_value("sleuth_audit_events_total", {"outcome": outcome}) or 0.0


async def test_a_full_backlog_drops_the_oldest_and_counts_it() -> None:
    registry = CollectorRegistry()
    log = AuditLog(S, "gateway", AuditSettings(backlog=2), registry)  # never bound: nothing is published
    for user in ("a", "b", "c"):
        await log.emit(Authenticated(user=user))
    assert log.pending == 2 and _count(registry, "dropped") == 1
    await log.aclose()
    assert _count(registry, "dropped") == 3


@pytest.mark.connected
async def test_events_wait_out_a_missing_stream_and_are_stored_once(nats_server: Any) -> None:
    """JetStream cannot take events (no AUDIT stream yet): emit still returns at once, the failures
    are counted, and once the stream exists every event is stored, each once."""
    registry = CollectorRegistry()
    settings = AuditSettings(max_age=3600, max_bytes=1 << 21, publish_timeout=0.5)
    nc = await nats.connect(nats_server.url)
    log = AuditLog(S, "agent", settings, registry)
    try:
        log.bind_nats(nc)
        events = [ScopeResolved(user="alice", job_id=f"j{i}", counts={"namespaces": i}) for i in range(3)]
        t0 = time.monotonic()
        for e in events:
            await log.emit(e)
        await log.emit(events[0])  # a retry of the same event
        assert time.monotonic() - t0 < 0.05, "emit must not wait for JetStream"
        async with asyncio.timeout(5):
            while _count(registry, "failed") < 1:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert log.pending == 4

        await log.ensure_stream(nc)
        async with asyncio.timeout(10):
            while log.pending:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        info = await nc.jetstream().stream_info(S.stream_audit)
        assert info.config.retention == RetentionPolicy.LIMITS
        assert (info.config.max_age, info.config.max_bytes) == (3600, 1 << 21)
        assert info.state.messages == 3 and _count(registry, "published") == 4

        got = []
        sub = await nc.jetstream().subscribe(S.audit_all, stream=S.stream_audit, ordered_consumer=True)
        for _ in range(3):
            got.append(parse_audit_event((await sub.next_msg(timeout=2)).data))
        assert [e.job_id for e in got] == ["j0", "j1", "j2"] and all(e.service == "agent" for e in got)
    finally:
        await log.aclose()
        await nc.close()
