"""The audit trail end to end on an authenticated nats-server (the permissions ``sleuth up`` and
``sleuth access nats`` write): services write the AUDIT stream, the read-only ``audit`` user
replays it later with ``sleuth audit tail``, filtered by user and kind, as text or JSON."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from nats.js.api import ConsumerConfig, RetentionPolicy

from sleuth.cli import main
from sleuth.commands.audit import TailOptions, parse_since, tail
from sleuth.embedded import NatsServer
from sleuth.embedded.access import AUDIT_USER, Credentials, nats_authorization
from sleuth_common.audit import AuditLog
from sleuth_common.config import AuditSettings, NatsSettings, ServiceSettings
from sleuth_common.messages.audit import Authenticated, JobFinished, ToolCall, parse_audit_event
from sleuth_common.subjects import Subjects

pytestmark = pytest.mark.connected

S = Subjects("sleuth")
HOUR = datetime.now(UTC) - timedelta(hours=1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NatsServer, Credentials]]:
    d = tmp_path_factory.mktemp("audit-trail")
    creds = Credentials.generate()
    srv = NatsServer(d / "nats", log_path=d / "nats.log", authorization=nats_authorization(creds.nats)).start()
    try:
        yield srv, creds
    finally:
        srv.stop()


def _settings(server: tuple[NatsServer, Credentials], user: str, tmp_path: Path) -> ServiceSettings:
    srv, creds = server
    secret = tmp_path / f"{user}.password"
    secret.write_text(creds.nats[user])
    return ServiceSettings(nats=NatsSettings(url=srv.url, user=user, password_env="", password_file=str(secret)))


@pytest.fixture(scope="module")
def written(server: tuple[NatsServer, Credentials], tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """What two services wrote, before any auditor connected: the agent (which creates the stream,
    with the limits of its settings) and the gateway."""
    return asyncio.run(_write(server, tmp_path_factory.mktemp("writers")))


async def _write(server: tuple[NatsServer, Credentials], d: Path) -> list[Any]:
    events: list[Any] = []
    for service, batch in (
        ("agent", [ToolCall(user="alice", job_id="j1", cluster="demo", tool="pods_list", decision="filtered",
                            counts={"removed": 2}),
                   JobFinished(user="alice", job_id="j1", status="diagnosed", counts={"evidence": 3})]),
        ("gateway", [Authenticated(user="", entry="api", decision="refused", reason="invalid_token")]),
    ):
        settings = _settings(server, service, d)
        nc = await nats.connect(**_connect(settings))
        log = AuditLog(S, service, AuditSettings(max_age=7200, max_bytes=1 << 22))
        await log.start(nc)
        for e in batch:
            await log.emit(e)
            events.append(e)
        await log.aclose()
        assert log.pending == 0
        await nc.close()
    return events


def _connect(settings: ServiceSettings) -> dict[str, Any]:
    from sleuth_common.connect import nats_connect_options

    return {**nats_connect_options(settings.nats, name="test"), "allow_reconnect": False}


async def test_an_auditor_replays_what_was_written_before_it_connected(
    server: tuple[NatsServer, Credentials], written: list[Any], tmp_path: Path
) -> None:
    auditor = _settings(server, AUDIT_USER, tmp_path)
    out = io.StringIO()
    assert await tail(auditor, TailOptions(since=HOUR, follow=False, json=True), out) == 3
    got = [parse_audit_event(line) for line in out.getvalue().splitlines()]
    assert [(e.kind, e.service, e.id) for e in got] == [(e.kind, s, e.id) for e, s in
                                                        zip(written, ("agent", "agent", "gateway"), strict=True)]

    nc = await nats.connect(**_connect(auditor))
    try:
        info = await nc.jetstream().stream_info(S.stream_audit)
    finally:
        await nc.close()
    assert info.config.retention == RetentionPolicy.LIMITS  # not a work queue: reading takes nothing away
    assert (info.config.max_age, info.config.max_bytes) == (7200, 1 << 22)


async def test_tail_filters_by_user_and_kind(server: tuple[NatsServer, Credentials], written: list[Any],
                                             tmp_path: Path) -> None:
    auditor = _settings(server, AUDIT_USER, tmp_path)
    out = io.StringIO()
    assert await tail(auditor, TailOptions(since=HOUR, follow=False, user="alice"), out) == 2
    first, second = out.getvalue().splitlines()
    assert first.split()[1:5] == ["agent", "tool_call", "filtered", "alice"]
    assert "tool=pods_list" in first and "job=j1" in first and "removed=2" in first
    assert "job_finished" in second and "status=diagnosed" in second and "evidence=3" in second

    out = io.StringIO()
    assert await tail(auditor, TailOptions(since=HOUR, follow=False, kind="authenticated", json=True), out) == 1
    assert json.loads(out.getvalue())["reason"] == "invalid_token"

    out = io.StringIO()  # a window after everything was written: nothing, and it still returns
    later = datetime.now(UTC) + timedelta(seconds=1)
    assert await tail(auditor, TailOptions(since=later, follow=False), out) == 0


async def test_tail_follows_new_events_until_stopped(server: tuple[NatsServer, Credentials], written: list[Any],
                                                     tmp_path: Path) -> None:
    auditor = _settings(server, AUDIT_USER, tmp_path)
    out, stop = io.StringIO(), asyncio.Event()
    # From an hour ago: the stored events (none of carol's) are replayed first, then new ones follow.
    task = asyncio.create_task(tail(auditor, TailOptions(since=HOUR, user="carol"), out, stop))
    nc = await nats.connect(**_connect(_settings(server, "scheduler", tmp_path)))
    log = AuditLog(S, "scheduler")
    log.bind_nats(nc)
    try:
        await asyncio.sleep(0.2)  # the replay is done and the live subscription made
        await log.emit(Authenticated(user="carol", entry="web", decision="allowed"))
        async with asyncio.timeout(5):
            while "carol" not in out.getvalue():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    finally:
        stop.set()
        await task
        await log.aclose()
        await nc.close()
    assert out.getvalue().count("\n") == 1 and "authenticated" in out.getvalue()


async def test_the_auditor_reads_but_cannot_change_the_trail(server: tuple[NatsServer, Credentials],
                                                            written: list[Any], tmp_path: Path) -> None:
    errors: list[Exception] = []

    async def on_error(e: Exception) -> None:
        errors.append(e)

    nc = await nats.connect(**_connect(_settings(server, AUDIT_USER, tmp_path)), error_cb=on_error)
    try:
        js = nc.jetstream(timeout=0.3)  # a refused request gets no answer; the server says why (below)
        for attempt in (js.purge_stream(S.stream_audit), js.delete_stream(S.stream_audit),
                        js.publish(S.audit("tool_call"), b"{}")):
            with pytest.raises(Exception):  # noqa: B017 - refused or unanswered, either way not done
                await attempt
        # A consumer (which could deliver the trail onto any subject, CHAT or JOBS) is not made.
        with pytest.raises(Exception):  # noqa: B017
            await js.add_consumer(S.stream_audit, ConsumerConfig(deliver_subject=S.chat_outbound))
        info = await nc.jetstream(timeout=2).stream_info(S.stream_audit)
        assert info.state.messages >= 3
        async with asyncio.timeout(3):
            while sum("permissions violation" in str(e).lower() for e in errors) < 4:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


def test_the_cli_reads_a_config_and_prints_lines(server: tuple[NatsServer, Credentials], written: list[Any],
                                                 tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = _settings(server, AUDIT_USER, tmp_path)
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump({"nats": settings.nats.model_dump()}))
    assert main(["audit", "tail", "--no-follow", "--since", "1h", "--kind", "job_finished", "--config", str(cfg)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert "job_finished" in line and "alice" in line and "job=j1" in line

    assert main(["audit", "tail", "--kind", "nonsense", "--config", str(cfg)]) == 2
    assert "unknown --kind" in capsys.readouterr().err


def test_since_reads_durations_and_times() -> None:
    now = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)
    assert parse_since("10m", now) == now - timedelta(minutes=10)
    assert parse_since("2d", now) == now - timedelta(days=2)
    assert parse_since("2026-01-02T11:00:00", now) == datetime(2026, 1, 2, 11, 0, tzinfo=UTC)
    with pytest.raises(ValueError, match="neither a duration"):
        parse_since("yesterday", now)
