"""The scheduler with only its own permissions (sleuth.embedded.access): a nats-server that
allows each user just its subjects, and a Valkey whose ACL allows the scheduler only
``<prefix>:scheduler:*`` and no SCAN. Everything a schedule does — commands, a run, its answer,
its post, the audit event — works, and nats-server refuses nothing."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import nats
import pytest
from nats.aio.msg import Msg

from sleuth.embedded import NatsServer, ValkeyServer, free_port
from sleuth.embedded.access import Credentials, nats_authorization, redis_acl_file
from sleuth_common.messages import ScheduleReply, ScheduleRequest
from sleuth_common.messages.audit import parse_audit_event
from sleuth_common.subjects import Subjects
from sleuth_scheduler import Clock, Settings, build

from .conftest import ALICE, CAROL, NO_ENV, FakeAgent, Keys

pytestmark = pytest.mark.connected


async def test_everything_works_within_the_schedulers_permissions(tmp_path: Path, keys: Keys,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    creds = Credentials.generate()
    nats_srv = NatsServer(tmp_path / "nats", log_path=tmp_path / "nats.log",
                          authorization=nats_authorization(creds.nats)).start()
    valkey = ValkeyServer(tmp_path / "valkey", acl=redis_acl_file(creds.redis)).start()
    try:
        monkeypatch.setenv("SLEUTH_NATS_PASSWORD", creds.nats["scheduler"])
        monkeypatch.setenv("SLEUTH_REDIS_PASSWORD", creds.redis["scheduler"])
        settings = Settings(
            nats={"url": nats_srv.url, "user": "scheduler", "retry_interval": 0.2},
            redis={"url": valkey.url, "username": "scheduler", "retry_interval": 0.2},
            identity={"signing_key_file": str(keys.private), **NO_ENV},
            scheduler={"port": free_port(), "tick": 3600.0, "jitter": 0.0},
        )
        clock = Clock()
        service = build(settings, clock=clock)
        await service.start()

        def login(user: str) -> dict[str, object]:
            return {"servers": [nats_srv.url], "user": user, "password": creds.nats[user],
                    "inbox_prefix": f"_INBOX.{user}"}

        gateway = await nats.connect(**login("gateway"))
        agent_nc = await nats.connect(**login("agent"))
        audit_nc = await nats.connect(**login("audit"))
        audit: list[bytes] = []

        async def heard(msg: Msg) -> None:
            audit.append(msg.data)

        await audit_nc.subscribe("sleuth.audit.>", cb=heard)
        agent = await FakeAgent(agent_nc, Subjects("sleuth"), reader=gateway).start(make_streams=False)

        async def ask(op: str, **kw: object) -> ScheduleReply:
            req = ScheduleRequest(op=op, user="alice", groups=("team-a",), target="web:team-a-alerts",  # type: ignore[arg-type]
                                  members=(ALICE, CAROL), **kw)
            msg = await gateway.request(Subjects("sleuth").schedules(op), req.to_bytes(), timeout=5)
            return ScheduleReply.model_validate_json(msg.data)

        try:
            made = await ask("create", text="every 5 minutes what is failing in team-a?")
            assert made.ok, made.text
            sid = made.schedules[0].id
            assert [s.id for s in (await ask("list")).schedules] == [sid]
            assert (await ask("run", id=sid)).ok
            await agent.wait_posts(1)
            clock.offset += datetime.fromisoformat(made.schedules[0].next_runs[0]).timestamp() + 1 - clock()
            assert service.firer is not None
            await service.firer.tick()
            await agent.wait_posts(2)
            assert (await ask("pause", id=sid)).ok and (await ask("resume", id=sid)).ok
            assert (await ask("delete", id=sid)).ok
            async with asyncio.timeout(5):
                while len(audit) < 6:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
            events = [parse_audit_event(a) for a in audit]
            assert sorted((e.kind, getattr(e, "op", ""), e.user) for e in events) == [
                ("audit.schedule_changed", op, "alice") for op in ("created", "deleted", "paused", "resumed")
            ] + [("audit.schedule_fired", "", "alice")] * 2
        finally:
            await agent.stop()
            for nc in (gateway, agent_nc, audit_nc):
                await nc.close()
            await service.stop()
            await service.broker.stop()
        refused = [line for line in (tmp_path / "nats.log").read_text().splitlines() if "Violation" in line]
        assert not refused, refused
    finally:
        valkey.stop()
        nats_srv.stop()
