"""The whole stack as separate processes, driven over HTTP as a user would.

Real nats-server, Valkey, simcluster over HTTPS, kube-mcp over MCP streamable HTTP, authz-cache,
agent and gateway: the same processes `make run` starts, on free ports.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import httpx2
import nats
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from sleuth.asyncapi import SERVICES as DOCUMENTED_SERVICES
from sleuth.commands.asyncapi import DEFAULT_DIR as ASYNCAPI_DIR
from sleuth.embedded import free_port
from sleuth.embedded.stack import Stack, StackPorts, StackSpec, restart_nats
from sleuth_common.messages.audit import JobFinished, ScheduleChanged, ToolCall, parse_audit_event
from tests.bus_wire import IGNORED_PREFIXES, WireSampler, load_documents, undocumented
from tests.fakes.mattermost import Channel, FakeMattermost, User
from tests.fakes.otlp import OtlpReceiver
from tests.snapshot_names import tenant_names
from tests.sse import take_events

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


class Chat:
    """The fake Mattermost server the stack's gateway answers in: the bot, alice and bob (as the
    demo cluster knows them), and a channel they share."""

    def __init__(self, mm: FakeMattermost) -> None:
        self.mm = mm
        self.bot: User = mm.add_user("sleuth", is_bot=True, system_admin=True)
        self.alice: User = mm.add_user("alice", email="alice@example.com")
        self.bob: User = mm.add_user("bob", email="bob@example.com")
        self.shared: Channel = mm.add_channel("incidents", members=[self.alice, self.bob, self.bot])

    def answer(self, question: dict, within: float = 50.0) -> dict:
        """The bot's finished answer in ``question``'s thread."""
        return self.mm.wait_for(lambda: next(
            (p for p in self.mm.posts_by(self.bot)
             if p["root_id"] == question["id"] and not p["message"].startswith("🔎")), None), within)


@pytest.fixture(scope="module")
def chat() -> Iterator[Chat]:
    with FakeMattermost() as mm:
        yield Chat(mm)


@pytest.fixture(scope="module")
def otlp() -> Iterator[OtlpReceiver]:
    """Where the stack's services send their traces (tracing is on for this whole module)."""
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, demo_snapshot: Path, chat: Chat, otlp: OtlpReceiver
) -> Iterator[Stack]:
    people = [{"email": "alice@example.com", "user": "alice", "groups": ["team-a"]},
              {"email": "bob@example.com", "user": "bob", "groups": ["team-b"]}]
    spec = StackSpec(
        snapshot=demo_snapshot,
        state_dir=tmp_path_factory.mktemp("stack"),
        ports=StackPorts.free(),
        nats_monitor_port=free_port(),  # /connz: what the services subscribe to (test_..._asyncapi_...)
        extra_env={"SLEUTH_MATTERMOST_TOKEN": chat.bot.token, **otlp.env()},
        extra_config={"agent": {"ack_wait": 4.0, "in_progress_interval": 1.0},
                      "knowledge": {"reload_interval": 0.5},
                      "gateway": {"answer_timeout": 45.0, "rate_limit_capacity": 1000,
                                  "mattermost": {"url": chat.mm.url, "people": people}}},
    )
    with Stack(spec) as s:
        yield s


@pytest.fixture(scope="module", autouse=True)
def wire(stack: Stack) -> Iterator[WireSampler]:
    """Every subscription the services hold while this module runs, read from nats-server's
    monitoring a few times a second (a job's own subscriptions live only while it runs)."""
    assert stack.nats is not None
    with WireSampler(stack.nats.monitor_url, set(DOCUMENTED_SERVICES)) as sampler:
        yield sampler


def ask(stack: Stack, user: str, question: str, timeout: float = 50.0) -> httpx.Response:
    return httpx.post(
        f"{stack.gateway_url}/v1/query",
        json={"query": question},
        headers={"Authorization": f"Bearer {stack.token(user)}"},
        timeout=timeout,
    )


def assert_no_names(payload: object, names: set[str]) -> None:
    text = json.dumps(payload)
    leaked = sorted(n for n in names if n in text)
    assert not leaked, f"foreign names leaked: {leaked}"


def test_whoami(stack: Stack) -> None:
    r = httpx.get(f"{stack.gateway_url}/v1/whoami", headers={"Authorization": f"Bearer {stack.token('alice')}"})
    assert r.status_code == 200
    assert r.json()["user"] == "alice"
    r = httpx.get(f"{stack.gateway_url}/v1/whoami", headers={"Authorization": "Bearer not-a-token"})
    assert r.status_code == 401
    assert "request_id" in r.json()


def test_access_whoami_and_diagnostics_with_the_real_authz_cache(stack: Stack, demo_snapshot: Path) -> None:
    def get(user: str, path: str) -> dict:
        r = httpx.get(f"{stack.gateway_url}{path}", headers={"Authorization": f"Bearer {stack.token(user)}"})
        assert r.status_code == 200, r.text
        return r.json()

    alice = get("alice", "/v1/whoami")["access"]
    assert alice == {"demo": {"cluster_wide": False, "namespaces": ["team-a"]}}
    answer = ask(stack, "alice", "access please").json()["answer"]
    assert "**demo**: namespaces `team-a`" in answer
    assert_no_names(answer, tenant_names(demo_snapshot, "team-b"))
    refused = ask(stack, "alice", "diagnostics").json()["answer"]
    assert "for cluster admins" in refused
    assert get("carol", "/v1/whoami")["access"]["demo"]["cluster_wide"] is True

    # The gateway's own NATS user may ask for scopes and read stream state (no permission
    # violation turning into a timeout), and nothing of its credentials shows.
    report = ask(stack, "carol", "diagnostics").json()["answer"]
    assert "**demo** `kube`" in report and "/healthz 200 ok" in report and "/readyz 200 ok" in report
    assert "`SLEUTH_JOBS`" in report and "`agent`:" in report and "`SLEUTH_ALERTS`" in report
    assert "no answer" not in report and "consumers not readable" not in report
    assert "**Redis**: PING" in report  # used memory: INFO is not among its Redis user's commands
    for secret in (*stack.credentials.nats.values(), *stack.credentials.redis.values()):
        assert secret not in report


def test_runbooks_through_chat_are_scoped_and_linked(stack: Stack, demo_snapshot: Path) -> None:
    """`kb` over the real bus permissions: cluster admins edit, everyone lists and reads only what their
    scope allows, and an answer links the runbook its root cause matches — never another tenant's."""
    team_b = tenant_names(demo_snapshot, "team-b")
    secret_name = sorted(team_b)[0]
    b_book = ("kb add team-b-notes\n---\ntitle: Notes on team-b\ntags: [family:oom_killed, family:crash_loop_app_error, "
              f"namespace:team-b]\n---\n1. Restart {secret_name} and raise the memory limit.\n")
    a_book = ("kb add memory-limits\n---\ntitle: Memory limits\ntags: [family:oom_killed, "
              "family:crash_loop_app_error, namespace:team-a]\n---\n1. Raise the memory limit, then watch it.\n")
    assert "Only cluster admins" in ask(stack, "alice", a_book).json()["answer"]
    assert ask(stack, "carol", "kb add broken\n---\ntitle: x\n---\n").json()["answer"].startswith(
        "Not added: the body is empty")
    assert "Added `team-b-notes`" in ask(stack, "carol", b_book).json()["answer"]
    assert "Added `memory-limits`" in ask(stack, "carol", a_book).json()["answer"]

    alice_list = ask(stack, "alice", "kb list").json()["answer"]
    assert "`memory-limits`" in alice_list and "team-b-notes" not in alice_list
    hidden = ask(stack, "alice", "kb show team-b-notes").json()["answer"]
    assert hidden == ask(stack, "alice", "kb show no-such-book").json()["answer"].replace("no-such-book", "team-b-notes")
    assert_no_names([alice_list, hidden], team_b)
    assert secret_name in ask(stack, "bob", "kb show team-b-notes").json()["answer"]

    deadline = time.monotonic() + 20  # every agent reloads within knowledge.reload_interval
    while True:
        body = ask(stack, "alice", "what is failing in team-a?").json()
        if "**Runbook:** *Memory limits* (`memory-limits`)" in body["answer"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "**Runbook:** *Memory limits* (`memory-limits`) — step 1 applies" in body["answer"], body["answer"]
    assert_no_names(body, team_b)
    assert "Removed `team-b-notes`" in ask(stack, "carol", "kb rm team-b-notes").json()["answer"]
    assert "Removed `memory-limits`" in ask(stack, "carol", "kb rm memory-limits").json()["answer"]


def test_alice_gets_a_scoped_diagnosis(stack: Stack, demo_snapshot: Path) -> None:
    r = ask(stack, "alice", "what is failing in team-a?")
    assert r.status_code == 200, r.text
    body = r.json()
    result = body["result"]
    assert result["status"] == "diagnosed"
    assert result["root_cause"]["family"] in {"oom_killed", "crash_loop_app_error"}
    assert result["root_cause"]["resource"].split("/")[1] == "team-a"
    assert result["evidence"], "a diagnosis cites evidence"
    assert all(e["id"].startswith("E") and e["command"].startswith("kubectl ") for e in result["evidence"])
    assert "E01" in body["answer"]
    assert_no_names(body, tenant_names(demo_snapshot, "team-b"))


def test_feedback_reaches_seen_before_and_is_taken_only_from_who_got_the_answer(stack: Stack) -> None:
    """POST /v1/feedback through the real gateway, bus permissions and agent: alice's 👎 and fix on her
    answer show under "Seen before" when she asks again; bob, who did not get it, is told what an unknown
    job id gets and learns nothing of it."""
    question = "what is failing in team-a?"
    first = ask(stack, "alice", question).json()
    assert first["result"]["status"] == "diagnosed", first
    job_id, family = first["job_id"], first["result"]["root_cause"]["family"]
    resource = first["result"]["root_cause"]["resource"]
    fix = "FIX-17 raised the memory limit to 1Gi"

    def give(user: str, job: str, **body: str) -> httpx.Response:
        return httpx.post(f"{stack.gateway_url}/v1/feedback", json={"job_id": job, **body},
                          headers={"Authorization": f"Bearer {stack.token(user)}"}, timeout=10)

    deadline = time.monotonic() + 10  # the incident is recorded just after the answer is out
    while (taken := give("alice", job_id, verdict="down", fixed_by=fix)).status_code == 404 \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert taken.status_code == 200 and taken.json()["ok"], taken.text

    other = give("bob", job_id, verdict="up", fixed_by="nothing to see")
    unknown = give("bob", "0" * 32, verdict="up", fixed_by="nothing to see")
    assert other.status_code == unknown.status_code == 404
    assert other.json()["error"] == unknown.json()["error"].replace("0" * 32, job_id)
    assert family not in other.text and resource not in other.text and resource.split("/")[-1] not in other.text

    again = ask(stack, "alice", question).json()["answer"]
    assert f"Fixed by: `{fix}`" in again[again.index("**Seen before**"):], again


def test_alice_asking_about_team_b_gets_an_access_answer(stack: Stack, demo_snapshot: Path) -> None:
    team_b = tenant_names(demo_snapshot, "team-b")
    workload = sorted(n for n in team_b if "-" in n)[0]
    r = ask(stack, "alice", f"why is {workload} failing in team-b?")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["result"]["status"] in {"denied", "insufficient_evidence"}
    assert "access" in body["answer"].lower()
    # The question named one workload; nothing else of team-b may come back.
    assert_no_names(body, team_b - {workload})


def test_carol_sees_both_tenants(stack: Stack, demo_snapshot: Path) -> None:
    for ns in ("team-a", "team-b"):
        r = ask(stack, "carol", f"what is failing in {ns}?")
        assert r.status_code == 200, r.text
        result = r.json()["result"]
        assert result["status"] == "diagnosed"
        assert result["root_cause"]["resource"].split("/")[1] == ns


def test_one_question_is_one_trace_across_the_services(stack: Stack, otlp: OtlpReceiver, chat: Chat) -> None:
    """The caller's traceparent is honoured by the gateway and carried over NATS and MCP: the
    question's spans from gateway, authz-cache, agent and kube-mcp share its trace id. No span
    anywhere carries a credential."""
    trace_id = secrets.token_hex(16)
    r = httpx.post(
        f"{stack.gateway_url}/v1/query",
        json={"query": "what is failing in team-a?"},
        headers={"Authorization": f"Bearer {stack.token('alice')}", "traceparent": f"00-{trace_id}-{'1' * 16}-01"},
        timeout=50,
    )
    assert r.status_code == 200, r.text
    services = {"sleuth-gateway", "sleuth-authz-cache", "sleuth-agent", "sleuth-kube-mcp"}

    def whole(spans: list) -> list | None:
        mine = [s for s in spans if s.trace_id == trace_id]
        answered = any(s.service == "sleuth-gateway" and ".jobs.done." in s.name for s in mine)
        # The agent's job span ends after the answer is published: it may come in a later batch.
        finished = any(s.service == "sleuth-agent" and s.name == "investigate job" for s in mine)
        return mine if answered and finished and {s.service for s in mine} >= services else None

    mine = otlp.wait_for(whole, within=20)
    names = {(s.service, s.name) for s in mine}
    assert ("sleuth-agent", "investigate job") in names
    assert any(svc == "sleuth-agent" and n.startswith("execute_tool ") for svc, n in names)
    assert any(svc == "sleuth-kube-mcp" and n.startswith("tools/call ") for svc, n in names)
    assert any(svc == "sleuth-authz-cache" and n.endswith(" process") for svc, n in names)
    secrets_ = {stack.token(u) for u in ("alice", "bob", "carol", "sleuth-authz")} | {chat.bot.token}
    secrets_ |= {*stack.credentials.nats.values(), *stack.credentials.redis.values()}
    bodies = otlp.raw()
    assert not [t for t in secrets_ if len(t) >= 8 and any(t.encode() in b for b in bodies)]


async def test_mcp_client_asks_as_alice_through_the_whole_stack(stack: Stack, demo_snapshot: Path) -> None:
    """An MCP client (the SDK a person's AI client uses) against the gateway's /mcp as alice: a
    diagnosis of team-a with progress on the way, nothing of team-b, and how long it took next to
    the same question over POST /v1/query (printed; timing is measured, never asserted)."""
    question = "what is failing in team-a?"
    team_b = tenant_names(demo_snapshot, "team-b")
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    headers = {"Authorization": f"Bearer {stack.token('alice')}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{stack.gateway_url}/mcp", http_client=http)) as client,
    ):
        # An AI client lists the tools when it connects (and the SDK validates answers against them).
        assert sorted(t.name for t in (await client.list_tools()).tools) == ["ask", "feedback", "whoami"]
        # First (it also takes the client's one-time cost of its first answer off the timing
        # below): naming a team-b workload.
        workload = sorted(n for n in team_b if "-" in n)[0]
        foreign = await client.call_tool("ask", {"question": f"why is {workload} failing in team-b?"})
        t0 = time.perf_counter()
        result = await client.call_tool("ask", {"question": question}, progress_callback=on_progress)
        mcp_seconds = time.perf_counter() - t0
    async with httpx.AsyncClient(headers=headers, timeout=60) as api:
        t0 = time.perf_counter()
        r = await api.post(f"{stack.gateway_url}/v1/query", json={"query": question})
        api_seconds = time.perf_counter() - t0
    print(f"\nlatency of {question!r} as alice: MCP ask {mcp_seconds * 1000:.0f} ms, "
          f"POST /v1/query {api_seconds * 1000:.0f} ms")

    assert not result.is_error, result
    answer = result.structured_content
    assert answer is not None and answer["user"] == "alice"
    assert answer["result"]["status"] == "diagnosed"
    assert answer["result"]["root_cause"]["resource"].split("/")[1] == "team-a"
    assert "E01" in result.content[0].text
    assert progress and progress[0] == "accepted: investigating" and len(progress) >= 3, progress
    assert r.status_code == 200 and r.json()["result"]["root_cause"] == answer["result"]["root_cause"]
    assert_no_names([answer, progress], team_b)
    # Naming a team-b workload gets the access answer, and nothing else of team-b.
    assert foreign.structured_content["result"]["status"] in {"denied", "insufficient_evidence"}
    assert "access" in foreign.content[0].text.lower()
    assert_no_names(foreign.model_dump(mode="json"), team_b - {workload})


def test_mattermost_answers_fit_everyone_who_reads_them(stack: Stack, chat: Chat, demo_snapshot: Path) -> None:
    """Through the real agent, kube-mcp and authz-cache: alice's direct message is answered from
    team-a; in the channel bob shares with alice, bob's question about his own team is answered
    with what *both* may read, so neither tenant's names reach the channel."""
    team_a, team_b = tenant_names(demo_snapshot, "team-a"), tenant_names(demo_snapshot, "team-b")
    chat.mm.wait_for(lambda: chat.mm.connected(chat.bot), 20)
    dm = chat.mm.dm_channel(chat.alice, chat.bot)
    t0 = time.perf_counter()
    mine = chat.answer(chat.mm.post_as(chat.alice, dm, "what is failing in team-a?"))
    print(f"\nMattermost DM through the whole stack: answered in {time.perf_counter() - t0:.2f} s")
    assert "checkout-api" in mine["message"], mine["message"]
    assert_no_names(mine["message"], team_b)

    shared = chat.answer(chat.mm.post_as(chat.bob, chat.shared, "@sleuth what is failing in team-b?"))
    assert_no_names(shared["message"], team_a | team_b)
    assert "access" in shared["message"].lower(), shared["message"]
    # Everything the bot said in the channel, every progress edit included.
    said = [p for p in chat.mm.posts_in(chat.shared) if p["user_id"] == chat.bot.id]
    edits = [c.body for p in said for c in chat.mm.calls("PUT", f"/api/v4/posts/{p['id']}/patch")]
    assert said and edits
    assert_no_names([said, edits], team_a | team_b)


def _conversation_until(stack: Stack, user: str, found: Callable[[str], bool], within: float = 40.0) -> str:
    """What other services posted into ``user``'s conversation (a schedule's answers, reports:
    not the person's own questions), as text, once ``found`` says it holds what we wait for."""
    deadline = time.monotonic() + within
    while True:
        r = httpx.get(f"{stack.gateway_url}/v1/conversation",
                      headers={"Authorization": f"Bearer {stack.token(user)}"}, timeout=10)
        posted = [m for m in r.json()["messages"] if m.get("origin") in ("schedule", "report")]
        text = json.dumps(posted)
        if found(text) or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def test_schedules_and_reports_in_the_web_chat(stack: Stack, demo_snapshot: Path) -> None:
    """Issue 14's walk-through: alice schedules a question every 5 minutes, sees it, runs it now
    and removes it; bob sees none of hers; ``report`` as alice lists team-a findings and nothing
    of team-b; as carol it covers the cluster."""
    team_a, team_b = tenant_names(demo_snapshot, "team-a"), tenant_names(demo_snapshot, "team-b")
    made = ask(stack, "alice", "schedule every 5 minutes what is failing in team-a?").json()["answer"]
    match = re.search(r"`([a-z2-9]{10})`", made)
    assert match, made
    sid = match.group(1)
    assert sid in ask(stack, "alice", "schedules").json()["answer"]
    assert sid not in ask(stack, "bob", "schedules").json()["answer"]
    assert sid not in ask(stack, "bob", f"run {sid}").json()["answer"].replace(f"`{sid}`", "")
    ask(stack, "alice", f"run {sid}")
    ran = _conversation_until(stack, "alice", lambda t: "checkout-api" in t and sid in t)
    assert "checkout-api" in ran, ran
    assert_no_names(ran, team_b)
    assert ask(stack, "alice", f"unschedule {sid}").status_code == 200
    assert sid not in ask(stack, "alice", "schedules").json()["answer"]

    started = time.perf_counter()
    assert ask(stack, "alice", "report").status_code == 200
    mine = _conversation_until(stack, "alice", lambda t: "single_replica" in t or "Findings" in t or "finding" in t)
    print(f"\nreport for alice through the stack: {time.perf_counter() - started:.2f} s")
    assert "payments-worker" in mine, mine
    assert_no_names(mine, team_b)
    assert ask(stack, "carol", "report").status_code == 200
    everyone = _conversation_until(stack, "carol", lambda t: "kube-system" in t or "monitoring" in t)
    assert "kube-system" in everyone or "monitoring" in everyone, everyone
    assert any(n in everyone for n in team_a) and any(n in everyone for n in team_b)


def _audit_events(stack: Stack, until: Callable[[list[dict]], bool], within: float = 15.0) -> list[dict]:
    """Every event of the AUDIT stream, read as the read-only ``audit`` user the way ``sleuth audit
    tail --json --no-follow`` does, from the login file ``sleuth up`` writes (``audit.yaml``)."""
    import asyncio
    import io

    from sleuth.commands.audit import TailOptions, tail
    from sleuth_common.config import ServiceSettings, load_settings

    settings = load_settings(ServiceSettings, stack.state / "audit.yaml")
    deadline = time.monotonic() + within
    while True:
        out = io.StringIO()
        asyncio.run(tail(settings, TailOptions(since=datetime.now(UTC) - timedelta(hours=1), follow=False, json=True),
                         out))
        events = [json.loads(line) for line in out.getvalue().splitlines()]
        if until(events) or time.monotonic() > deadline:
            return events
        time.sleep(0.2)


def test_every_service_audits_its_decisions_and_no_event_leaks(stack: Stack, demo_snapshot: Path) -> None:
    """After the questions, commands, schedules and reports above (a bearer token on every request;
    alice asked about a team-b workload by name; carol's tool results were full of both tenants'
    objects): each service wrote its typed events, and no event carries a token, a password, a
    signed identity or a name of any tenant's objects."""
    wanted = {("gateway", "audit.authenticated"), ("gateway", "audit.command"),
              ("authz-cache", "audit.scope_resolved"), ("authz-cache", "audit.token_reviewed"),
              ("agent", "audit.job_started"), ("agent", "audit.scope_resolved"), ("agent", "audit.tool_call"),
              ("agent", "audit.job_finished"), ("scheduler", "audit.schedule_changed"),
              ("scheduler", "audit.schedule_fired"), ("reporter", "audit.report_requested"),
              ("reporter", "audit.report_sent")}
    events = _audit_events(stack, lambda es: wanted <= {(e["service"], e["kind"]) for e in es})
    assert wanted <= {(e["service"], e["kind"]) for e in events}
    parsed = [parse_audit_event(e) for e in events]  # every one is a known, typed event
    alice = [e for e in parsed if e.user == "alice"]
    assert {"api"} <= {e.entry for e in alice if e.kind == "audit.authenticated" and e.decision == "allowed"}
    assert any(e.kind == "audit.authenticated" and e.decision == "refused" and e.reason == "invalid_token"
               for e in parsed)
    assert any(isinstance(e, JobFinished) and e.status in {"denied", "insufficient_evidence"} for e in alice)
    assert any(isinstance(e, ToolCall) and e.user == "carol" and e.decision == "allowed" for e in parsed)
    assert {("created", "alice"), ("deleted", "alice")} <= {(e.op, e.user) for e in parsed
                                                           if isinstance(e, ScheduleChanged)}

    text = json.dumps(events)
    secrets_ = {stack.token(u) for u in ("alice", "bob", "carol", "sleuth-authz")} | {"not-a-token"}
    secrets_ |= set(stack.credentials.nats.values()) | set(stack.credentials.redis.values())
    assert not [s for s in secrets_ if s in text], "an audit event carries a token or a password"
    assert "eyJ" not in text and "BEGIN " not in text, "an audit event carries a JWT or a key"
    names = tenant_names(demo_snapshot, "team-a") | tenant_names(demo_snapshot, "team-b")
    assert_no_names(events, names)


def test_bad_input_gets_clear_errors(stack: Stack) -> None:
    h = {"Authorization": f"Bearer {stack.token('alice')}"}
    r = httpx.post(f"{stack.gateway_url}/v1/query", content=b"{not json", headers=h)
    assert r.status_code == 400 and r.json()["request_id"]
    r = httpx.post(f"{stack.gateway_url}/v1/query", json={"query": "x" * 4001}, headers=h)
    assert r.status_code == 413
    r = httpx.post(f"{stack.gateway_url}/v1/query", json={"query": "hi"})
    assert r.status_code == 401


def _count_results(stack: Stack, stop: threading.Event, seen: list[str]) -> None:
    import asyncio

    async def run() -> None:
        assert stack.nats is not None
        nc = await nats.connect(**stack.nats_options("gateway"))  # who may read every job's result
        sub = await nc.subscribe("sleuth.jobs.done.*")
        while not stop.is_set():
            try:
                msg = await sub.next_msg(timeout=0.2)
            except nats.errors.TimeoutError:
                continue
            seen.append(msg.subject)
        await nc.close()

    asyncio.run(run())


def test_agent_killed_mid_job_answers_once_after_restart(stack: Stack) -> None:
    """SIGKILL the only agent while it is stuck on a tool call: the job is redelivered, answered once."""
    kube_mcp = next(p for p in stack.procs if p.name == "kube-mcp")
    agent = stack.agents[0]
    stop = threading.Event()
    seen: list[str] = []
    watcher = threading.Thread(target=_count_results, args=(stack, stop, seen), daemon=True)
    watcher.start()
    time.sleep(0.5)
    result: dict[str, httpx.Response] = {}
    kube_mcp.kill(signal.SIGSTOP)  # tool calls hang: the job is in flight
    try:
        asker = threading.Thread(target=lambda: result.update(r=ask(stack, "alice", "what is failing in team-a?")))
        asker.start()
        time.sleep(2.0)
        agent.kill(signal.SIGKILL)
        stack.agents.remove(agent)
        stack.procs.remove(agent)
    finally:
        kube_mcp.kill(signal.SIGCONT)
    stack.start_agent()
    asker.join(60)
    time.sleep(3.0)  # room for a duplicate answer to show up
    stop.set()
    watcher.join(5)
    assert "r" in result, "the question was never answered"
    assert result["r"].status_code == 200, result["r"].text
    assert result["r"].json()["result"]["status"] == "diagnosed"
    job_id = result["r"].json()["job_id"]
    assert seen.count(f"sleuth.jobs.done.{job_id}") == 1, seen


def _jobs_queued(stack: Stack) -> int:
    import asyncio

    async def count() -> int:
        nc = await nats.connect(**stack.nats_options("gateway"))  # who may read the JOBS stream's state
        try:
            return (await nc.jetstream().stream_info("SLEUTH_JOBS")).state.messages
        finally:
            await nc.close()

    return asyncio.run(count())


def _sse(stack: Stack, user: str, rid: str, question: str, until: set[str]) -> list[tuple[str, dict]]:
    """``POST /v1/query?stream=1`` with ``X-Request-Id: rid``: the events up to the first in ``until``."""
    events: list[tuple[str, dict]] = []
    headers = {"Authorization": f"Bearer {stack.token(user)}", "X-Request-Id": rid, "Accept": "text/event-stream"}
    with httpx.stream("POST", f"{stack.gateway_url}/v1/query?stream=1", json={"query": question},
                      headers=headers, timeout=60) as r:
        assert r.status_code == 200, r.read()
        buf = ""
        for chunk in r.iter_text():
            found, buf = take_events(buf + chunk)
            for name, data in found:
                events.append((name, data))
                if name in until:
                    return events
    return events


async def _mcp_ask(stack: Stack, rid: str, question: str, accepted: threading.Event | None = None) -> dict:
    """``ask`` over MCP as alice with ``X-Request-Id: rid``; ``accepted`` is set once the job runs."""
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if accepted is not None and (message or "").startswith("accepted"):
            accepted.set()

    headers = {"Authorization": f"Bearer {stack.token('alice')}", "X-Request-Id": rid}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{stack.gateway_url}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool("ask", {"question": question}, progress_callback=on_progress)
    assert not result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


def test_gateway_killed_mid_question_delivers_each_answer_once_after_restart(stack: Stack, chat: Chat) -> None:
    """SIGKILL the gateway while a web-chat question, an MCP ``ask`` and a Mattermost question wait
    (the agent held): after a restart the browser's reconnect (same X-Request-Id) and the MCP
    client's retry get the answers of the jobs already running, each investigated and stored in the
    conversation once, and the Mattermost answer lands in its thread once. Someone else sending
    alice's request id gets an investigation of their own, never hers."""
    import asyncio

    agent = stack.agents[0]
    question = "what is failing in team-a?"
    web_rid, mcp_rid = f"web-{secrets.token_hex(8)}", f"mcp-{secrets.token_hex(8)}"
    stop, seen = threading.Event(), []
    watcher = threading.Thread(target=_count_results, args=(stack, stop, seen), daemon=True)
    watcher.start()
    time.sleep(0.5)
    mcp_accepted = threading.Event()

    def first_mcp_call() -> None:
        with contextlib.suppress(Exception):  # the gateway dies under it
            asyncio.run(_mcp_ask(stack, mcp_rid, question, mcp_accepted))

    agent.kill(signal.SIGSTOP)  # both questions are in flight, unanswered
    try:
        accepted = _sse(stack, "alice", web_rid, question, until={"accepted"})
        web_job = accepted[-1][1]["job_id"]
        threading.Thread(target=first_mcp_call, daemon=True).start()
        assert mcp_accepted.wait(20), "the MCP ask never started"
        chat.mm.wait_for(lambda: chat.mm.connected(chat.bot), 20)
        in_dm = chat.mm.post_as(chat.alice, chat.mm.dm_channel(chat.alice, chat.bot), question)
        chat.mm.wait_for(lambda: _jobs_queued(stack) == 3, 20)  # all three submitted
        gateway = next(p for p in stack.procs if p.name == "gateway")
        gateway.kill(signal.SIGKILL)
        stack.procs.remove(gateway)
        t0 = time.monotonic()
        stack.start_gateway()
        print(f"\ngateway restarted in {time.monotonic() - t0:.1f} s")
    finally:
        agent.kill(signal.SIGCONT)

    events = _sse(stack, "alice", web_rid, question, until={"result", "error"})
    assert events[0][0] == "accepted" and events[0][1]["job_id"] == web_job and events[0][1]["resumed"] is True
    assert events[-1][0] == "result", events
    assert events[-1][1]["job_id"] == web_job and events[-1][1]["result"]["status"] == "diagnosed", events[-1]
    mcp = asyncio.run(_mcp_ask(stack, mcp_rid, question))
    assert mcp["result"]["status"] == "diagnosed" and mcp["job_id"] != web_job
    # Bob replaying alice's request id: his own job, his own answer.
    bob = httpx.post(f"{stack.gateway_url}/v1/query", json={"query": question}, timeout=50,
                     headers={"Authorization": f"Bearer {stack.token('bob')}", "X-Request-Id": web_rid})
    assert bob.status_code == 200, bob.text
    assert bob.json()["user"] == "bob" and bob.json()["job_id"] not in (web_job, mcp["job_id"])
    mm_answer = chat.answer(in_dm)
    assert "checkout-api" in mm_answer["message"], mm_answer["message"]
    time.sleep(1.0)  # room for a duplicate answer to show up
    stop.set()
    watcher.join(5)
    assert [p["id"] for p in chat.mm.posts_by(chat.bot) if p["root_id"] == in_dm["id"]] == [mm_answer["id"]]
    done = [s.rsplit(".", 1)[1] for s in seen]
    assert len(done) == len(set(done)) == 4, done  # one investigation each: web, MCP, Mattermost, bob
    assert {web_job, mcp["job_id"], bob.json()["job_id"]} <= set(done)
    conv = httpx.get(f"{stack.gateway_url}/v1/conversation", timeout=10,
                     headers={"Authorization": f"Bearer {stack.token('alice')}"}).json()["messages"]
    answers = [m["job_id"] for m in conv if m["role"] == "assistant" and m.get("job_id") in (web_job, mcp["job_id"])]
    assert sorted(answers) == sorted([web_job, mcp["job_id"]]), answers  # each stored once
    assert bob.json()["job_id"] not in json.dumps(conv)


def test_authz_unavailable_is_a_clear_answer_not_a_hang(stack: Stack) -> None:
    authz = next(p for p in stack.procs if p.name == "authz-cache")
    authz.kill(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        r = httpx.post(f"{stack.gateway_url}/v1/query", json={"query": "what is failing?"},
                       headers={"Authorization": "Bearer token-never-seen-before"}, timeout=30)
        assert time.monotonic() - t0 < 10
        assert r.status_code == 503
        assert "authorization is unavailable" in r.json()["error"]
    finally:
        authz.kill(signal.SIGCONT)


def test_services_reconnect_after_nats_restart(stack: Stack) -> None:
    restart_nats(stack)
    deadline = time.monotonic() + 40
    last = None
    while time.monotonic() < deadline:
        try:
            last = ask(stack, "alice", "what is failing in team-a?", timeout=20)
            if last.status_code == 200:
                break
        except httpx.HTTPError as e:
            last = e
        time.sleep(1)
    assert isinstance(last, httpx.Response) and last.status_code == 200, last
    assert last.json()["result"]["status"] == "diagnosed"


def test_services_subscribe_only_to_what_their_asyncapi_documents_declare(wire: WireSampler) -> None:
    """After the questions, commands, reports and restarts above: every subscription a service
    held (subject pattern and queue group, from /connz) is a receive channel of its
    docs/asyncapi/<service>.json. test_asyncapi checks the documents are what the code declares;
    this checks the declarations are what runs (a subscription added without declaring it, or a
    channel dropped from a document, fails here)."""
    wire.read()
    seen = wire.seen()
    assert {s.service for s in seen} == set(DOCUMENTED_SERVICES), f"connections seen: {seen}"
    # Not vacuous: every service held some subscription beyond its inboxes, and each was checked.
    assert {s.service for s in seen if not s.subject.startswith(IGNORED_PREFIXES)} == set(DOCUMENTED_SERVICES)
    drift = undocumented(seen, load_documents(ASYNCAPI_DIR, set(DOCUMENTED_SERVICES)))
    assert not drift, "subscriptions no AsyncAPI document declares (run `make asyncapi`, or declare them in " \
                      "sleuth.asyncapi):\n" + "\n".join(f"  {s.service}: {s.subject} queue={s.queue!r}" for s in drift)


def test_the_gateway_reads_the_jobs_queue_with_its_own_bus_permissions(stack: Stack) -> None:
    """Backpressure and the sleuth_jobs_* gauges read the agents' consumer as the gateway's NATS
    user (counts and the oldest job's time only; it may not read the jobs themselves)."""
    # A reading is kept for a few seconds: one taken while an earlier test restarted NATS or the
    # gateway may still be shown, so wait for a fresh one.
    deadline = time.monotonic() + 20
    while "sleuth_jobs_consumer_up 1.0" not in (lines := httpx.get(f"{stack.gateway_url}/metrics", timeout=10)
                                                .text.splitlines()):
        if time.monotonic() > deadline:
            unreadable = [line for line in (stack.logs / "gateway.log").read_text(errors="replace").splitlines()
                          if "JOBS queue not readable" in line]
            raise AssertionError(f"{[x for x in lines if x.startswith('sleuth_jobs_')]} {unreadable[-3:]}")
        time.sleep(1)


def test_no_service_was_refused_anything_on_the_bus(stack: Stack) -> None:
    """Runs last: every subject the services used above is in their NATS permissions
    (sleuth.embedded.access). nats-server logs a "Violation" for any publish, subscription or
    login it refused."""
    refused = [line for line in (stack.logs / "nats.log").read_text(errors="replace").splitlines()
               if "Violation" in line]
    assert not refused, "\n".join(refused[:10])
