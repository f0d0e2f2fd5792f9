"""``report`` from request to chat and inbox, against real nats-server, Valkey and SMTP: the reply
names the report, the agent gets one signed job for the asker and every other reader, the target
gets the summary and the full list in the thread with their readers, and each address set for
the target gets one email with an HTML part (counts, chart, every finding) and a plain part."""

from __future__ import annotations

import asyncio
import json
import re
from email.message import EmailMessage
from typing import Any

import pytest

from sleuth_common.channels import audience_claims
from sleuth_common.messages import InvestigationJob, InvestigationResult, ReportTask

from .conftest import (
    ADDRESSES,
    ALICE,
    CAROL,
    CHANNEL,
    SUBJECTS,
    TEAM_A,
    answer,
    ask,
    eventually,
    report_result,
    state_of,
)

pytestmark = pytest.mark.connected


def parts(msg: EmailMessage) -> tuple[str, str]:
    plain = msg.get_body(("plain",))
    html = msg.get_body(("html",))
    assert plain is not None and html is not None
    return plain.get_content(), html.get_content()


def metric(text: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{{want}}}" if labels else f"{name} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_a_report_is_posted_in_the_thread_and_emailed_once(start_reporter: Any, smtp: Any) -> None:
    async with start_reporter() as r:
        reply = await ask(r.nc, thread="root-1")
        assert reply.ok and reply.id and f"`{reply.id}`" in reply.text and "2 address(es)" in reply.text
        await r.bus.until(lambda: len(r.bus.posts) >= 2 and smtp.box.messages)

        # one job, for alice, read by the channel's other members, signed by the reporter
        [job], [who] = r.bus.jobs, r.bus.identities
        assert job.origin == "report" and job.requester == ALICE and set(job.audience) == {TEAM_A, CAROL}
        assert who.issuer == "sleuth-reporter" and who.user == "alice" and who.job == job.id
        assert set(who.members) == set(audience_claims(job.audience))
        assert job.reply_subject == SUBJECTS.jobs_done(job.id) and job.chat_target == CHANNEL

        readers = json.loads(r.bus.post(f"report-{reply.id}").meta["readers"])
        assert readers == list(audience_claims((ALICE, TEAM_A, CAROL)))
        summary, full = r.bus.post(f"report-{reply.id}"), r.bus.post(f"report-{reply.id}-all")
        for post in (summary, full):
            assert post.target == CHANNEL and post.origin == "report"
            assert post.meta["thread"] == "root-1" and post.meta["report"] == reply.id
        assert summary.text.startswith("**Best-practice report** for alice")
        assert "every finding follows in this thread" in summary.text and "emailed to 2 address(es)" in summary.text
        assert full.meta["reply_to"] == summary.id
        assert all(f"`team-a/app-{i}`" in full.text for i in range(14))

        await asyncio.sleep(0.5)  # nothing more comes
        [msg] = smtp.box.messages
        assert sorted(smtp.box.envelopes[0]) == sorted(ADDRESSES)
        assert msg["Message-ID"] == f"<report-{reply.id}@example.com>"
        assert "14 finding(s)" in msg["Subject"] and "#team-a-alerts" in msg["Subject"]
        plain, html = parts(msg)
        assert all(f"Deployment team-a/app-{i} " in plain for i in range(14))
        assert "kubectl scale deploy/app-13 -n team-a --replicas=2" in plain and "<" not in plain.split("\n")[0]
        svg = re.search(r"<svg\b.*?</svg>", html, re.S)
        assert svg is not None and "<script" not in html
        counts = report_result("alice").counts
        assert svg.group(0).count('class="value"') and all(
            f">{counts[s]}<" in svg.group(0) for s in counts)  # each severity's bar says its count
        assert 'aria-label="Findings by severity: 4 critical, 4 high, 3 medium, 3 low"' in html
        assert all(f"team-a/app-{i}<" in html for i in range(14))

        await eventually(lambda: _is(state_of(r.nc, reply.id), "done"))
        status = await ask(r.nc, "status", id=reply.id)
        assert status.ok and status.report is not None and status.report.state == "done"
        assert status.report.email == "sent" and "14 finding(s)" in status.text and "email sent" in status.text
        latest = await ask(r.nc, "status", groups=("team-a",), user="dave")  # a member through team-a
        assert latest.ok and latest.id == reply.id

        body = (await r.get("/metrics")).text
        assert metric(body, "sleuth_reports_total", outcome="ok") == 1
        assert metric(body, "sleuth_report_emails_total", outcome="sent") == 1
        assert metric(body, "sleuth_report_findings_total", rule="rule_0", severity="critical") == 2
        assert (await r.get("/healthz")).status_code == 200
        ready = await r.get("/readyz")
        assert ready.status_code == 200 and ready.json()["nats"] == "ok"


async def test_the_email_goes_once_when_the_task_comes_again(start_reporter: Any, smtp: Any) -> None:
    """A replica that sent the email and died before the ack: the task comes again, finds the
    email sent (Redis SET NX), and sends nothing, posts nothing new."""
    async with start_reporter() as r:
        reply = await ask(r.nc)
        await eventually(lambda: _is(state_of(r.nc, reply.id), "done"))
        assert len(smtp.box.messages) == 1
        posts = len(r.bus.posts)
        store = r.reporter.worker.store  # type: ignore[union-attr]
        # As if the replica died after sending, before recording the report as done:
        await store.update(reply.id, state="posted", result=InvestigationResult.model_validate(
            answer(r.bus.jobs[0], report_result("alice"))).model_dump_json())
        task = ReportTask(id=reply.id, request=(await _request(r)), emails=tuple(ADDRESSES))
        await r.nc.jetstream().publish(SUBJECTS.reports_queued(reply.id), task.to_bytes())
        await r.bus.until(lambda: metric_sync(r, "sleuth_report_emails_total", outcome="duplicate") == 1)
        await asyncio.sleep(0.5)
        assert len(smtp.box.messages) == 1 and len(r.bus.posts) == posts and len(r.bus.jobs) == 1


async def _is(value: Any, expected: str) -> bool:
    return await value == expected


async def _request(r: Any) -> Any:
    from sleuth_common.messages import ReportRequest

    return ReportRequest(op="run", user="alice", groups=("team-a",), target=CHANNEL, members=(ALICE, TEAM_A, CAROL))


def metric_sync(r: Any, name: str, **labels: str) -> float:
    from prometheus_client import generate_latest

    return metric(generate_latest(r.reporter.metrics.registry).decode(), name, **labels)


async def test_smtp_down_the_report_is_posted_and_the_failure_said_once(start_reporter: Any, smtp: Any) -> None:
    smtp.stop()  # connection refused from the first try to the last
    async with start_reporter() as r:
        reply = await ask(r.nc, thread="t-9")
        await r.bus.until(lambda: any(p.id == f"report-{reply.id}-email" for p in r.bus.posts))
        assert r.bus.post(f"report-{reply.id}").text.startswith("**Best-practice report**")
        notice = r.bus.post(f"report-{reply.id}-email")
        assert "could not be sent after 3 tries" in notice.text and "could not be reached" in notice.text
        assert notice.meta["thread"] == "t-9" and notice.target == CHANNEL
        await asyncio.sleep(0.8)  # no fourth try, no second notice
        assert metric_sync(r, "sleuth_report_emails_total", outcome="failed") == 3
        assert metric_sync(r, "sleuth_report_emails_total", outcome="gave_up") == 1
        assert [p.id for p in r.bus.posts].count(notice.id) == 1
        await eventually(lambda: _is(state_of(r.nc, reply.id), "done"))
        status = await ask(r.nc, "status", id=reply.id)
        assert status.report is not None and status.report.email == "failed"


async def test_a_temporary_smtp_refusal_is_retried_and_sent_once(start_reporter: Any, smtp: Any) -> None:
    smtp.box.refuse = 1  # 451 to the first try
    async with start_reporter() as r:
        reply = await ask(r.nc)
        await r.bus.until(lambda: bool(smtp.box.messages))
        await asyncio.sleep(0.6)
        assert smtp.box.tries == 2 and len(smtp.box.messages) == 1
        assert not any(p.id == f"report-{reply.id}-email" for p in r.bus.posts)
        assert metric_sync(r, "sleuth_report_emails_total", outcome="failed") == 1


async def test_a_permanent_smtp_refusal_is_not_retried(start_reporter: Any, smtp: Any) -> None:
    smtp.box.refuse, smtp.box.refusal = 5, "554 5.7.1 relaying denied"
    async with start_reporter() as r:
        reply = await ask(r.nc)
        await r.bus.until(lambda: any(p.id == f"report-{reply.id}-email" for p in r.bus.posts))
        notice = r.bus.post(f"report-{reply.id}-email")
        assert "will not be retried" in notice.text and "SMTP 554" in notice.text
        assert smtp.box.tries == 1 and not smtp.box.messages


async def test_no_answer_is_a_not_finished_post_and_the_channel_is_free_again(start_reporter: Any, smtp: Any) -> None:
    async def silent(job: InvestigationJob) -> InvestigationResult | None:
        return None

    async with start_reporter(behaviour=silent, report_timeout=0.5, answer_grace=0.3) as r:
        reply = await ask(r.nc)
        again = await ask(r.nc)  # while it runs: the same report
        assert again.ok and again.id == reply.id and "already being made" in again.text
        await r.bus.until(lambda: bool(r.bus.posts))
        [post] = r.bus.posts
        assert post.id == f"report-{reply.id}" and "did not finish" in post.text
        assert post.meta["status"] == "not_finished" and not smtp.box.messages
        await eventually(lambda: _is(state_of(r.nc, reply.id), "failed"))  # recorded right after the post
        later = await ask(r.nc)
        assert later.ok and later.id != reply.id


async def test_a_refused_report_is_posted_as_said_and_not_emailed(start_reporter: Any, smtp: Any) -> None:
    async def refuse(job: InvestigationJob) -> InvestigationResult:
        return InvestigationResult(job_id=job.id, status="denied", answer_markdown="This request was refused.")

    async with start_reporter(behaviour=refuse) as r:
        reply = await ask(r.nc)
        await r.bus.until(lambda: bool(r.bus.posts))
        await asyncio.sleep(0.4)
        [post] = r.bus.posts
        assert post.text.startswith("This request was refused.") and post.meta["status"] == "denied"
        assert not smtp.box.messages
        assert metric_sync(r, "sleuth_reports_total", outcome="denied") == 1
        await eventually(lambda: _is(state_of(r.nc, reply.id), "done"))
        status = await ask(r.nc, "status", id=reply.id)
        assert status.report is not None and status.report.email == "none"


async def test_who_may_ask_where(start_reporter: Any, smtp: Any) -> None:
    async with start_reporter() as r:
        private = await ask(r.nc, target="conversation:alice")
        assert private.ok and "emailed" not in private.text
        await r.bus.until(lambda: bool(r.bus.posts))
        [job] = r.bus.jobs
        assert job.audience == () and job.chat_target == "conversation:alice"
        assert json.loads(r.bus.posts[0].meta["readers"]) == list(audience_claims((ALICE,)))

        refusals = [
            await ask(r.nc, target="mattermost:abc", members=()),  # readers unknown
            await ask(r.nc, target="conversation:bob"),  # someone else's conversation
            await ask(r.nc, target="conversation:alice", members=(ALICE, CAROL)),
            await ask(r.nc, emails=("me@evil.example",)),  # not an address of this channel
        ]
        assert [x.ok for x in refusals] == [False] * 4
        assert "who reads this channel" in refusals[0].text and "reporter.emails" in refusals[3].text
        only_one = await ask(r.nc, emails=(ADDRESSES[1],))
        assert only_one.ok and "1 address(es)" in only_one.text
        await r.bus.until(lambda: bool(smtp.box.messages))
        assert smtp.box.envelopes == [[ADDRESSES[1]]]

        # bob reads neither: alice's report is as unknown to him as a made-up id
        for req in ({"id": private.id}, {"id": "0123456789ab"}):
            nope = await ask(r.nc, "status", user="bob", groups=("team-b",), target=CHANNEL, **req)
            assert not nope.ok and nope.report is None and "no report" in nope.text
        malformed = await r.nc.request(SUBJECTS.reports("run"), b"{}", timeout=5)
        assert malformed.headers is not None and malformed.headers["Sleuth-Error"] == "permanent"
        assert b'"temporary":false' in malformed.data
