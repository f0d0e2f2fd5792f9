"""A reporter killed (SIGKILL) while the agent makes its report leaves the report to another
replica, which posts it once and emails it once; and the whole path with the real agent: its
report job handler over simcluster and kube-mcp (every read as the asker), alice's report in a
channel carol also reads shows team-a only, in chat and in the email."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from nats.aio.msg import Msg

from sleuth.embedded import free_port
from sleuth_common.messages import (
    InventoryReply,
    InventoryRequest,
    InvestigationJob,
    InvestigationResult,
    Requester,
    ScopeRequest,
)
from sleuth_reporter import Settings, build
from tests.snapshot_names import tenant_names

from .conftest import (
    ALICE,
    CAROL,
    SUBJECTS,
    Bus,
    answer,
    ask,
    eventually,
    report_result,
    reporter_config,
    state_of,
    wait_ready,
)

pytestmark = pytest.mark.connected

DEMO = Path(__file__).resolve().parents[3] / "scenarios" / "demo"


@asynccontextmanager
async def reporter(cfg: dict[str, Any]) -> AsyncIterator[Any]:
    service = build(Settings(**cfg))
    try:
        await service.start()
        await wait_ready(service.settings)
        yield service
    finally:
        await service.stop()
        await service.broker.stop()


async def test_a_reporter_killed_mid_report_leaves_it_to_another(nats_server, valkey, keys, smtp, tmp_path) -> None:
    cfg = reporter_config(nats_server.url, valkey.url, keys, smtp.port, ack_wait=1.0)
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(cfg))

    async def first_never_answered(job: InvestigationJob) -> InvestigationResult | None:
        return None if job is bus.jobs[0] else answer(job, report_result(job.requester.user))

    nc = await nats.connect(nats_server.url)
    bus = await Bus(nc, keys.verifier(), first_never_answered).start()
    log = (tmp_path / "a.log").open("wb")
    a = await asyncio.create_subprocess_exec(sys.executable, "-m", "sleuth_reporter", "--config",
                                             str(tmp_path / "a.yaml"), stdout=log, stderr=subprocess.STDOUT)
    try:
        await wait_ready(Settings(**cfg))
        reply = await ask(nc)
        assert reply.ok
        await bus.until(lambda: len(bus.jobs) == 1)  # A is waiting for the agent
        a.send_signal(signal.SIGKILL)
        await asyncio.wait_for(a.wait(), 10)
        assert not bus.posts and not smtp.box.messages

        cfg_b = {**cfg, "reporter": {**cfg["reporter"], "port": free_port()}}
        async with reporter(cfg_b) as b:
            await bus.until(lambda: smtp.box.messages and any(p.id == f"report-{reply.id}" for p in bus.posts),
                            within=15)
            await asyncio.sleep(1.5)  # past another ack_wait: nothing comes twice
            first, second = bus.jobs
            assert first.id != second.id and first.requester == second.requester == ALICE
            assert [p.id for p in bus.posts].count(f"report-{reply.id}") == 1
            assert len(smtp.box.messages) == 1
            await eventually(lambda: _done(nc, reply.id))
            status = await ask(nc, "status", id=reply.id)
            assert status.report is not None and status.report.email == "sent"
            assert b.metrics.reports.labels("ok")._value.get() == 1
    finally:
        if a.returncode is None:
            a.kill()
            await asyncio.wait_for(a.wait(), 10)
        log.close()
        await bus.stop()
        await nc.close()


async def test_alice_s_report_through_the_real_agent_shows_nothing_of_team_b(
    nats_server, valkey, keys, smtp, tmp_path
) -> None:
    from sleuth.scenarios import offline_cluster
    from sleuth_agent import Settings as AgentSettings
    from sleuth_agent import build as build_agent

    with offline_cluster(DEMO) as oc:
        nc = await nats.connect(nats_server.url)

        async def scope(msg: Msg) -> None:  # authz-cache: each reader's scope from simcluster's RBAC
            req = ScopeRequest.model_validate_json(msg.data)
            await msg.respond((await oc.scope_for(req.user)).to_bytes())

        async def inventory(msg: Msg) -> None:
            req = InventoryRequest.model_validate_json(msg.data)
            names = {ns: tuple(n) for ns, n in (await oc.inventory(req.cluster)).items()}
            await msg.respond(InventoryReply(cluster=req.cluster, names=names).to_bytes())

        await nc.subscribe(SUBJECTS.authz_scope, cb=scope)
        await nc.subscribe(SUBJECTS.authz_inventory, cb=inventory)
        chat = await Bus(nc, keys.verifier()).start(agent=False)  # the real agent takes the jobs
        identity = oc.identity.model_copy(update={"job_issuers": {"sleuth-reporter": [str(keys.public)]}})
        agent = build_agent(AgentSettings(nats={"url": nats_server.url}, redis={"url": valkey.url},
                                          clusters=[oc.cluster], identity=identity,
                                          agent={"metrics_port": 0, "ack_wait": 5.0}))
        await agent.start()
        cfg = reporter_config(nats_server.url, valkey.url, keys, smtp.port, report_timeout=30.0)
        try:
            async with reporter(cfg):
                reply = await ask(nc, members=(ALICE, CAROL))
                await chat.until(lambda: smtp.box.messages and any(p.id == f"report-{reply.id}" for p in chat.posts),
                                 within=40)
                summary = chat.post(f"report-{reply.id}")
                assert summary.meta["status"] == "ok" and "(demo)" in summary.text and "team-a" in summary.text
                [msg] = smtp.box.messages
                plain = msg.get_body(("plain",)).get_content()
                html = msg.get_body(("html",)).get_content()
                assert "rollout_stuck" in plain and "checkout-api" in html
                text = json.dumps([p.text for p in chat.posts]).lower() + plain.lower() + html.lower()
                leaked = [n for n in tenant_names(DEMO, "team-b") | {"team-b"} if n.lower() in text]
                assert not leaked
                assert msg["Subject"].startswith("Sleuth best-practice report for #team-a-alerts: 13 finding(s)")

                # bob reads the channel too: what alice and bob may both read is nothing
                shared = await ask(nc, members=(ALICE, Requester(user="bob", groups=("team-b",))))
                await chat.until(lambda: any(p.id == f"report-{shared.id}" for p in chat.posts), within=20)
                denied = chat.post(f"report-{shared.id}")
                assert denied.meta["status"] == "denied" and "do not have read access" in denied.text
                assert len(smtp.box.messages) == 1
        finally:
            await chat.stop()
            await agent.stop()
            await agent.broker.stop()
            await nc.close()


async def _done(nc: Any, report_id: str) -> bool:
    return await state_of(nc, report_id) == "done"
