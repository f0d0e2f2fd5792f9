"""A job of origin ``report`` (the reporter's, signed as ``sleuth-reporter``) runs the best-practice
report through the same identity and scope checks as an investigation: simcluster and kube-mcp
in-process over the demo, each reader's scope from simcluster's RBAC over a real nats-server.
The answer carries the structured report and its chat summary; a report too big for one message
is cut, least severe findings first, saying so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.msg import Msg

from sleuth.scenarios import OfflineCluster, offline_cluster
from sleuth_agent.handlers import JobHandler, fit_report
from sleuth_agent.metrics import Metrics
from sleuth_agent.settings import Settings
from sleuth_common.channels import audience_claims
from sleuth_common.identity import IdentitySigner, generate_keypair, job_verifier_from_settings
from sleuth_common.messages import (
    SEVERITIES,
    Finding,
    InvestigationJob,
    InvestigationResult,
    ReportResult,
    Requester,
    ScopeRequest,
)
from sleuth_common.subjects import Subjects
from tests.snapshot_names import tenant_names

DEMO = Path(__file__).resolve().parents[3] / "scenarios" / "demo"
ALICE = Requester(user="alice", groups=("team-a",))
BOB = Requester(user="bob", groups=("team-b",))
CAROL = Requester(user="carol", groups=("platform-admins",))


@pytest.fixture(scope="module")
def demo() -> Iterator[OfflineCluster]:
    with offline_cluster(DEMO) as oc:
        yield oc


@pytest.fixture
def reporter_key(tmp_path: Path) -> tuple[IdentitySigner, Path]:
    private, public = generate_keypair()
    (tmp_path / "reporter.pub").write_bytes(public)
    return IdentitySigner.from_pem(private, issuer="sleuth-reporter", ttl=300), tmp_path / "reporter.pub"


def report_job(signer: IdentitySigner, *audience: Requester, asker: Requester = ALICE) -> InvestigationJob:
    job = InvestigationJob(origin="report", requester=asker, question="best-practice report", unattended=True,
                           chat_target="web:team-a-alerts", audience=audience)
    identity = signer.mint(asker.user, asker.groups, audience="sleuth-agent", job=job.id,
                           members=audience_claims(audience))
    return job.model_copy(update={"identity": identity, "reply_subject": Subjects().jobs_done(job.id)})


@pytest.mark.connected
async def test_a_report_job_answers_with_the_report_fitted_to_every_reader(
    demo: OfflineCluster, nats_server: Any, reporter_key: tuple[IdentitySigner, Path]
) -> None:
    signer, public = reporter_key
    nc = await nats.connect(nats_server.url)

    async def scope(msg: Msg) -> None:
        req = ScopeRequest.model_validate_json(msg.data)
        await msg.respond((await demo.scope_for(req.user)).to_bytes())

    await nc.subscribe(Subjects().authz_scope, cb=scope)
    identity = demo.identity.model_copy(update={"job_issuers": {"sleuth-reporter": [str(public)]}})
    settings = Settings(nats={"url": nats_server.url}, clusters=[demo.cluster], identity=identity)
    handler = JobHandler(nc, settings, Metrics(), None, verifier=job_verifier_from_settings(identity))
    try:
        result = await handler.handle(report_job(signer, CAROL))  # carol reads it too: alice's scope is the narrower
        assert result is not None and result.status == "diagnosed" and result.report is not None
        r = result.report
        assert r.status == "ok" and r.user == "alice" and r.namespaces == {"demo": ("team-a",)}
        assert len(r.findings) == 13 and r.shown == 12 and sum(r.counts.values()) == 13
        assert result.answer_markdown == r.answer_markdown and "(the full list follows)" in r.answer_markdown
        sent = InvestigationResult.model_validate_json(result.to_bytes())  # what crosses the bus
        assert sent.report == r
        text = json.dumps(result.model_dump(mode="json")).lower()
        assert not [n for n in tenant_names(DEMO, "team-b") | {"team-b"} if n.lower() in text]

        shared = await handler.handle(report_job(signer, BOB))  # alice and bob share no namespace
        assert shared is not None and shared.status == "denied" and shared.report is not None
        assert shared.report.status == "denied" and not shared.report.findings

        forged = report_job(IdentitySigner.from_pem(generate_keypair()[0], issuer="sleuth-reporter", ttl=300))
        refused = await handler.handle(forged)
        assert refused is not None and refused.status == "denied" and refused.report is None
        assert "signed identity" in refused.answer_markdown
    finally:
        await nc.close()


def test_a_report_too_big_for_a_message_is_cut_least_severe_first() -> None:
    fs = tuple(Finding(rule="r", severity=SEVERITIES[min(i // 100, 3)], cluster="c", namespace="ns", kind="Pod",
                       name=f"p{i}", why="w" * 200, fix="f" * 200) for i in range(400))
    r = ReportResult(user="u", findings=fs, counts={s: 100 for s in SEVERITIES})
    assert fit_report(r, len(r.to_bytes())) is r
    cut = fit_report(r, 60_000)
    assert len(cut.to_bytes()) <= 60_000 and 0 < len(cut.findings) < 400
    assert cut.findings == fs[: len(cut.findings)] and cut.counts == r.counts  # most severe kept; counts of all
    assert f"{400 - len(cut.findings)} of its least severe finding(s)" in cut.notes[-1]
