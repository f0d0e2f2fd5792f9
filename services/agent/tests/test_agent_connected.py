"""The agent against real processes: nats-server with JetStream, Valkey, simcluster over HTTPS
serving scenarios/demo, kube-mcp over streamable HTTP. The only fake is the authz responder
(alice → team-a, bob → team-b, carol → cluster-wide)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from nats.aio.client import Client as Nats

from sleuth_agent import Settings, build
from sleuth_agent.handlers import AUTHZ_UNAVAILABLE
from sleuth_agent.worker import JobWorker
from sleuth_common.identity import IdentitySigner, generate_keypair
from sleuth_common.messages import (
    AlertRef,
    ClusterScope,
    InventoryReply,
    InventoryRequest,
    InvestigationJob,
    InvestigationResult,
    JobProgress,
    Requester,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.subjects import Subjects

pytestmark = pytest.mark.connected

SUBJECTS = Subjects("sleuth")
SCOPES = {
    "alice": {"demo": ClusterScope(namespaces=("team-a",))},
    "bob": {"demo": ClusterScope(namespaces=("team-b",))},
    "carol": {
        "demo": ClusterScope(namespaces=("default", "kube-system", "team-a", "team-b"), cluster_wide=True)
    },
}


def team_b_names(snapshot: Path) -> set[str]:
    """Object names of team-b, read from the snapshot (not hard-coded)."""
    names: set[str] = set()
    for f in (snapshot / "cluster").glob("*.yaml"):
        for doc in yaml.safe_load_all(f.read_text()):
            for obj in (doc or {}).get("items", [doc]) if doc else []:
                meta = obj.get("metadata") or {}
                if meta.get("namespace") == "team-b" and obj.get("kind") not in ("Event",):
                    names.add(meta["name"])
    names.discard("default")
    assert len(names) > 5
    return names


@pytest.fixture
def stack(tmp_path: Path, demo_snapshot: Path) -> Iterator[dict[str, Any]]:
    from sleuth_kube_mcp import Settings as KubeSettings
    from sleuth_kube_mcp import serve_in_thread
    from sleuth_simcluster import SimCluster

    private, public = generate_keypair()
    (tmp_path / "agent.key").write_bytes(private)
    (tmp_path / "agent.pub").write_bytes(public)
    (tmp_path / "authz.pub").write_bytes(AUTHZ.public_pem())
    with SimCluster(demo_snapshot, tmp_path / "sim", host="127.0.0.1", port=0) as sim:
        kube_settings = KubeSettings(
            kube_mcp={
                "host": "127.0.0.1",
                "port": 0,
                "kubeconfig": str(sim.kubeconfig("sleuth-reader")),
                "cluster_name": "demo",
            },
            identity={"verify_key_files": [str(tmp_path / "agent.pub")], "verify_keys_env": ""},
        )
        with serve_in_thread(kube_settings) as mcp:
            yield {"mcp_url": mcp.url, "signing_key": str(tmp_path / "agent.key"),
                   "authz_pub": str(tmp_path / "authz.pub")}


def agent_settings(stack: dict[str, Any], nats_url: str, redis_url: str, **agent: Any) -> Settings:
    return Settings(
        nats={"url": nats_url},
        redis={"url": redis_url},
        authz={"request_timeout": 1.0},
        clusters=[
            {"name": "demo", "aliases": ["dev"],
             "mcp_servers": [{"name": "kube", "url": stack["mcp_url"], "identity": True}]}
        ],
        identity={"signing_key_file": stack["signing_key"], "signing_key_env": "",
                  "job_issuers": {"sleuth-authz": [stack["authz_pub"]]}},
        agent={"metrics_port": 0, "ack_wait": 2.0, "in_progress_interval": 0.5, **agent},
    )


@contextlib.asynccontextmanager
async def authz_responder(nc: Nats) -> AsyncIterator[None]:
    async def reply(msg: Any) -> None:
        req = ScopeRequest.model_validate_json(msg.data)
        out = ScopeReply(user=req.user, groups=req.groups, clusters=SCOPES.get(req.user, {}))
        await msg.respond(out.to_bytes())

    async def inventory(msg: Any) -> None:  # authz-cache's name inventory, from the demo snapshot's objects
        req = InventoryRequest.model_validate_json(msg.data)
        await msg.respond(InventoryReply(cluster=req.cluster, names=_demo_inventory()).to_bytes())

    sub = await nc.subscribe(SUBJECTS.authz_scope, queue="authz", cb=reply)
    inv = await nc.subscribe(SUBJECTS.authz_inventory, queue="authz", cb=inventory)
    try:
        yield
    finally:
        await sub.unsubscribe()
        await inv.unsubscribe()


@functools.cache
def _demo_inventory() -> dict[str, tuple[str, ...]]:
    names: dict[str, set[str]] = {}
    for f in (Path(__file__).resolve().parents[3] / "scenarios" / "demo" / "cluster").glob("*.yaml"):
        for doc in yaml.safe_load_all(f.read_text()):
            for obj in (doc or {}).get("items", [doc]) if doc else []:
                meta = obj.get("metadata") or {}
                if meta.get("namespace") and obj.get("kind") != "Event":
                    names.setdefault(meta["namespace"], set()).add(meta["name"])
    return {ns: tuple(sorted(n)) for ns, n in names.items()}


@contextlib.asynccontextmanager
async def running_agent(settings: Settings) -> AsyncIterator[Any]:
    agent = build(settings)
    await agent.start()
    try:
        yield agent
    finally:
        await agent.stop()
        await agent.broker.stop()


class Asker:
    def __init__(self, nc: Nats) -> None:
        self.nc = nc
        self.results: dict[str, list[InvestigationResult]] = {}
        self.progress: dict[str, list[JobProgress]] = {}
        self.answered: dict[str, asyncio.Event] = {}

    async def submit(self, job: InvestigationJob) -> None:
        answered = self.answered.setdefault(job.id, asyncio.Event())

        async def on_done(msg: Any) -> None:
            self.results.setdefault(job.id, []).append(InvestigationResult.model_validate_json(msg.data))
            answered.set()

        async def on_progress(msg: Any) -> None:
            self.progress.setdefault(job.id, []).append(JobProgress.model_validate_json(msg.data))

        await self.nc.subscribe(SUBJECTS.jobs_done(job.id), cb=on_done)
        await self.nc.subscribe(SUBJECTS.jobs_progress(job.id), cb=on_progress)
        await self.nc.flush()
        js = self.nc.jetstream()
        from sleuth_agent.worker import ensure_jobs_stream

        await ensure_jobs_stream(js, SUBJECTS)
        await js.publish(SUBJECTS.jobs_investigate, job.to_bytes())

    async def result(self, job: InvestigationJob, wait: float = 30.0) -> InvestigationResult:
        async with asyncio.timeout(wait):
            await self.answered[job.id].wait()
        return self.results[job.id][0]


# Signs job identities as authz-cache does for a person's login.
AUTHZ = IdentitySigner.from_pem(generate_keypair()[0], issuer="sleuth-authz", ttl=300)


# The demo snapshot's groups: kube-mcp reads as the requester, so the cluster's RBAC applies.
GROUPS = {"alice": ("team-a",), "bob": ("team-b",), "carol": ("platform-admins",)}


def job_for(user: str, question: str, *, signer: IdentitySigner | None = AUTHZ, **kw: Any) -> InvestigationJob:
    groups = GROUPS.get(user, ())
    job = InvestigationJob(requester=Requester(user=user, groups=groups), question=question, **kw)
    if signer is None:
        return job
    return job.model_copy(update={"identity": signer.mint(user, groups, audience="sleuth-agent")})


async def test_alice_gets_a_diagnosis_and_never_a_team_b_name(
    stack, nats_server, valkey, demo_snapshot
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        async with authz_responder(nc), running_agent(agent_settings(stack, nats_server.url, valkey.url)):
            asker = Asker(nc)
            job = job_for("alice", "what is failing in team-a?")
            await asker.submit(job)
            result = await asker.result(job)
            assert result.status == "diagnosed", result.answer_markdown
            families = {result.root_cause.family, *(c.family for c in result.candidates)}
            assert families & {"oom_killed", "crash_loop_app_error"}
            assert result.root_cause.resource.startswith("Deployment/team-a/")
            dumped = json.dumps(result.model_dump(mode="json"))
            leaked = [n for n in team_b_names(demo_snapshot) | {"team-b"} if n in dumped]
            assert not leaked
            assert any(e.command.startswith("kubectl ") for e in result.evidence)
            stages = [p.stage for p in asker.progress.get(job.id, [])]
            assert "scope" in stages and "collecting" in stages

            job = job_for("alice", "why is billing-api crashing?")
            await asker.submit(job)
            result = await asker.result(job)
            assert result.status == "denied"
            body = json.dumps(result.model_dump(mode="json", exclude={"answer_markdown"}))
            assert not [n for n in team_b_names(demo_snapshot) if n in body]
            assert not [
                n for n in team_b_names(demo_snapshot) if n != "billing-api" and n in result.answer_markdown
            ]

            job = job_for("carol", "why is billing-api crashing?")
            await asker.submit(job)
            result = await asker.result(job)
            assert result.root_cause is not None and result.root_cause.family == "missing_config"
    finally:
        await nc.drain()


async def test_authz_unavailable_is_an_error_answer(stack, nats_server, valkey) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        async with running_agent(agent_settings(stack, nats_server.url, valkey.url)):
            asker = Asker(nc)
            job = job_for("alice", "what is failing in team-a?")
            await asker.submit(job)
            result = await asker.result(job)
            assert result.status == "error"
            assert result.answer_markdown == AUTHZ_UNAVAILABLE
            assert not result.evidence
    finally:
        await nc.drain()


async def test_unacked_job_is_redelivered_and_answered_once(stack, nats_server, valkey) -> None:
    settings = agent_settings(stack, nats_server.url, valkey.url)
    nc = await nats.connect(nats_server.url)
    try:
        async with authz_responder(nc):
            asker = Asker(nc)
            job = job_for("alice", "why is checkout crashing?")
            # A first worker takes the job and "dies" without acking (its task never finishes).
            stuck = asyncio.Event()
            dead_nc = await nats.connect(nats_server.url)
            from sleuth_agent.metrics import Metrics

            async def hang(_job: InvestigationJob) -> None:
                stuck.set()
                await asyncio.Event().wait()

            dead = JobWorker(dead_nc, SUBJECTS, settings.agent, hang, Metrics(), fetch_timeout=0.5)
            await dead.start()
            await asker.submit(job)
            async with asyncio.timeout(10):
                await stuck.wait()
            await dead.stop(grace=0)
            await dead_nc.close()  # like SIGKILL: no ack, no more in-progress signals

            async with running_agent(settings) as agent:
                result = await asker.result(job, wait=30)
                assert result.root_cause.family == "oom_killed"
                assert agent.metrics.redeliveries._value.get() >= 1
                # The same job delivered again (e.g. published twice) is not answered twice.
                await nc.jetstream().publish(SUBJECTS.jobs_investigate, job.to_bytes())
                await asyncio.sleep(2.0)
                assert len(asker.results[job.id]) == 1
    finally:
        await nc.drain()


async def test_malformed_job_is_terminated(stack, nats_server, valkey) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        async with running_agent(agent_settings(stack, nats_server.url, valkey.url)) as agent:
            js = nc.jetstream()
            await js.publish(SUBJECTS.jobs_investigate, b"{not json")
            async with asyncio.timeout(10):
                while agent.metrics.rejected._value.get() < 1:  # noqa: ASYNC110 (a counter, not an event)
                    await asyncio.sleep(0.05)
            info = await js.consumer_info(SUBJECTS.stream_jobs, SUBJECTS.agent_durable)
            assert info.num_ack_pending == 0
    finally:
        await nc.drain()


async def test_jobs_without_a_valid_identity_of_their_requester_are_refused(stack, nats_server, valkey) -> None:
    """The bus is not trusted: a job that names carol as its requester is answered only when a
    job issuer signed carol's identity for it."""
    nc = await nats.connect(nats_server.url)
    forger = IdentitySigner.from_pem(generate_keypair()[0], issuer="sleuth-authz")
    try:
        async with authz_responder(nc), running_agent(agent_settings(stack, nats_server.url, valkey.url)):
            asker = Asker(nc)
            alice = job_for("alice", "what is failing in team-a?")
            as_carol = InvestigationJob(requester=Requester(user="carol", groups=GROUPS["carol"]),
                                        question="what is failing in team-b?", identity=alice.identity)
            replayed = job_for("alice", "what is failing in team-a?").model_copy(update={"identity": alice.identity})
            cases = {
                "no identity": job_for("carol", "what is failing in team-b?", signer=None),
                "another key": job_for("carol", "what is failing in team-b?", signer=forger),
                "alice's identity, carol named": as_carol,
            }
            await asker.submit(alice)
            assert (await asker.result(alice)).status == "diagnosed"
            cases["alice's identity replayed on another job"] = replayed
            for name, job in cases.items():
                await asker.submit(job)
                result = await asker.result(job)
                assert result.status == "denied", name
                assert "valid signed identity" in result.answer_markdown and not result.evidence, name
                assert "team-b" not in json.dumps(result.model_dump(mode="json", exclude={"answer_markdown"}))
    finally:
        await nc.drain()


async def test_an_answer_never_goes_to_a_reply_subject_the_publisher_chose(stack, nats_server, valkey) -> None:
    nc = await nats.connect(nats_server.url)
    overheard: list[bytes] = []
    try:
        async def eavesdrop(msg: Any) -> None:
            overheard.append(msg.data)

        sub = await nc.subscribe("eavesdrop.>", cb=eavesdrop)
        async with authz_responder(nc), running_agent(agent_settings(stack, nats_server.url, valkey.url)):
            asker = Asker(nc)
            job = job_for("alice", "what is failing in team-a?", reply_subject="eavesdrop.answers")
            await asker.submit(job)
            result = await asker.result(job)  # on its own done subject
            assert result.status == "diagnosed" and not overheard
        await sub.unsubscribe()
    finally:
        await nc.drain()


async def eventually(condition: Any, within: float = 10.0) -> None:
    """Wait until ``condition()`` holds (polled every 50 ms), failing after ``within`` seconds."""
    for _ in range(int(within / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not true within {within:g}s")


RUNBOOKS = {
    # tagged for team-a's failure: alice's answer links it
    "oom-team-a": "---\ntitle: Memory limits in team-a\ntags: [family:oom_killed, namespace:team-a]\n---\n"
                  "1. Compare the container's memory use with its limit.\n2. Raise the memory limit of the "
                  "deployment and watch the memory graph.\n",
    # the same family, but team-b's: never shown to alice, though its tags match her answer best
    "oom-team-b": "---\ntitle: Ledger sizing for team-b\ntags: [family:oom_killed, workload:checkout-api, "
                  "namespace:team-b]\n---\n1. The ledger-replayer in team-b needs 2Gi; raise the memory limit.\n",
    "crashing-alert": "---\ntitle: Crash looping pods\ntags: [alert:KubePodCrashLooping]\n---\n"
                      "1. Read the previous logs of the container.\n",
    "broken": "---\ntitle: no body\n---\n",
}


async def test_answers_link_the_runbook_their_tags_match_and_only_one_the_asker_may_see(
        stack, nats_server, valkey, tmp_path) -> None:
    from redis.asyncio import Redis

    from sleuth_agent.knowledge import RunbookStore, parse_runbook

    books = tmp_path / "runbooks"
    books.mkdir()
    for id, text in RUNBOOKS.items():
        (books / f"{id}.md").write_text(text)
    settings = agent_settings(stack, nats_server.url, valkey.url)
    settings = settings.model_copy(update={"knowledge": settings.knowledge.model_copy(
        update={"runbooks_dir": str(books), "reload_interval": 0.2})})
    nc = await nats.connect(nats_server.url)
    redis = Redis.from_url(valkey.url)
    try:
        async with authz_responder(nc), running_agent(settings) as agent:
            asker = Asker(nc)
            job = job_for("alice", "what is failing in team-a?")
            await asker.submit(job)
            result = await asker.result(job)
            assert result.root_cause is not None and result.root_cause.family == "oom_killed"
            # step 1 shares the most words with the finding (container, memory, limit)
            assert "**Runbook:** *Memory limits in team-a* (`oom-team-a`) — step 1 applies: Compare the container's " \
                "memory use with its limit." in result.answer_markdown
            assert "team-b" not in result.answer_markdown and "ledger" not in result.answer_markdown.lower()
            assert len(agent.knowledge.index) == 3  # the broken one skipped, the others loaded

            # an alert's name matches a runbook's alert: tag
            job = job_for("alice", "", alerts=(AlertRef(labels={"alertname": "KubePodCrashLooping",
                                                                 "namespace": "team-a"}),))
            await asker.submit(job)
            assert "*Crash looping pods*" in (await asker.result(job)).answer_markdown

            # a runbook added through chat (Redis) is used once the version moves, and the
            # directory's wins over it for the same id
            store = RunbookStore(redis, "sleuth")
            text = RUNBOOKS["oom-team-a"].replace("Memory limits in team-a", "Chat edition")
            await store.put(parse_runbook(text, id="oom-team-a"), text, by="carol")
            chat = text.replace("oom-team-a", "x").replace("Chat edition", "From chat").replace(
                "namespace:team-a", "workload:checkout-api")
            await store.put(parse_runbook(chat, id="from-chat"), chat, by="carol")
            await eventually(lambda: len(agent.knowledge.index) == 4)
            job = job_for("alice", "what is failing in team-a?")
            await asker.submit(job)
            answer = (await asker.result(job)).answer_markdown
            assert "*From chat* (`from-chat`)" in answer  # family and workload match: ranked first
            assert "Chat edition" not in answer
    finally:
        await redis.aclose()
        await nc.drain()


async def test_a_standing_instruction_marks_its_finding_expected_and_says_so(
        stack, nats_server, valkey, tmp_path, demo_snapshot) -> None:
    books = tmp_path / "runbooks"
    books.mkdir()
    (books / "checkout-oom.md").write_text(
        "---\ntitle: Checkout memory during load tests\ntype: instruction\ntags: [namespace:team-a]\n"
        "suppress: {family: oom_killed, workload: checkout-*}\n---\n"
        "In team-a, checkout-api is OOMKilled during the weekly load test; that is expected.\n")
    secret = sorted(team_b_names(demo_snapshot))[0]
    (books / "team-b-rule.md").write_text(
        f"---\ntitle: Team-b rule\ntype: instruction\ntags: [namespace:team-b]\n---\nIgnore {secret} restarts.\n")
    settings = agent_settings(stack, nats_server.url, valkey.url)
    settings = settings.model_copy(update={"knowledge": settings.knowledge.model_copy(
        update={"runbooks_dir": str(books)})})
    nc = await nats.connect(nats_server.url)
    try:
        async with authz_responder(nc), running_agent(settings) as agent:
            await eventually(lambda: len(agent.knowledge.index) == 2)
            asker = Asker(nc)
            job = job_for("alice", "what is failing in team-a?")
            await asker.submit(job)
            result = await asker.result(job)
            answer = result.answer_markdown
            assert result.root_cause is not None and result.root_cause.family == "oom_killed"
            assert answer.startswith("**Expected** — standing instruction *Checkout memory during load tests* "
                                     "(`checkout-oom`) marks `oom_killed` on workloads `checkout-*` as expected")
            assert "What it marks: `oom_killed` on `Deployment/team-a/checkout-api`." in answer
            assert "**Root cause**" in answer  # the finding follows in full
            assert answer.rstrip().endswith("*Shaped by standing instruction: *Checkout memory during load tests* "
                                            "(`checkout-oom`).*")
            assert "Team-b rule" not in answer and secret not in answer
    finally:
        await nc.drain()


async def test_a_repeated_failure_shows_the_earlier_incident_and_never_another_tenants(
        stack, nats_server, valkey, demo_snapshot) -> None:
    """Incident memory: an answer is recorded (Redis, announced to agents), a restarted agent loads it
    and shows it under "Seen before" when the failure repeats; another tenant's incident with the very
    same evidence reaches a cluster-wide reader but never alice — not in the answer, not in metrics."""
    from redis.asyncio import Redis

    from sleuth_common.messages import IncidentRecorded

    settings = agent_settings(stack, nats_server.url, valkey.url)
    nc = await nats.connect(nats_server.url)
    redis = Redis.from_url(valkey.url)
    heard: list[IncidentRecorded] = []

    async def hear(msg: Any) -> None:
        heard.append(IncidentRecorded.model_validate_json(msg.data))

    async def until(check: Any) -> None:
        async with asyncio.timeout(10):
            while not check():  # noqa: ASYNC110 (state of another task, no event to wait on)
                await asyncio.sleep(0.05)

    try:
        await nc.subscribe(SUBJECTS.incidents_recorded, cb=hear)
        async with authz_responder(nc):
            asker = Asker(nc)
            async with running_agent(settings):
                first = job_for("alice", "what is failing in team-a?")
                await asker.submit(first)
                r1 = await asker.result(first)
                assert r1.status == "diagnosed" and "Seen before" not in r1.answer_markdown
                await until(lambda: heard)
            mine = heard[0].incident
            assert (mine.job_id, mine.user, mine.resource, mine.namespaces) == (
                first.id, "alice", r1.root_cause.resource, ("team-a",))
            assert mine.signature and all(len(s) <= 160 for s in mine.signature)
            # For `sleuth incidents export`: the question, and what the decisive evidence ran (never its output).
            assert mine.question == "what is failing in team-a?"
            assert mine.commands and all(c.startswith("kubectl ") and "-n team-a" in c for c in mine.commands)
            assert {k.decode() for k in await redis.keys("sleuth:agent:incidents:*")} == {
                "sleuth:agent:incidents:by_time", f"sleuth:agent:incidents:doc:{first.id}"}

            async with running_agent(settings) as agent:  # a restarted agent: its index comes from Redis
                await until(lambda: agent.incidents.loaded and first.id in agent.incidents.index)
                # team-b's incident with the same evidence, as another agent announces it
                names_b = sorted(team_b_names(demo_snapshot))
                foreign = mine.model_copy(update={
                    "job_id": "b-1", "namespaces": ("team-b",), "user": "bob",
                    "resource": f"Deployment/team-b/{names_b[0]}", "summary": f"MARKER-B {names_b[1]} failed."})
                await nc.publish(SUBJECTS.incidents_recorded, IncidentRecorded(incident=foreign).to_bytes())
                await until(lambda: "b-1" in agent.incidents.index)

                second = job_for("alice", "what is failing in team-a?")
                await asker.submit(second)
                r2 = await asker.result(second)
                section = r2.answer_markdown[r2.answer_markdown.index("**Seen before** (in your scope):"):]
                assert f"the same failure of `{mine.resource}` ({mine.family})" in section, section
                assert section.count("\n- ") == 1  # the earlier one only: not itself, not team-b's
                dumped = json.dumps(r2.model_dump(mode="json"))
                assert "MARKER-B" not in dumped and not [n for n in team_b_names(demo_snapshot) if n in dumped]
                assert agent.metrics.seen_before_hits.labels(mine.family)._value.get() == 1

                third = job_for("carol", "what is failing in team-a?")  # cluster-wide: sees both
                await asker.submit(third)
                r3 = await asker.result(third)
                assert "MARKER-B" in r3.answer_markdown and f"`{mine.resource}`" in r3.answer_markdown
                metrics = agent.metrics.registry.get_sample_value
                # recorded after each answer is out: r2's and r3's
                await until(lambda: metrics("sleuth_agent_incidents_recorded_total",
                                            {"family": mine.family, "stored": "yes"}) == 2)
                assert {h.incident.job_id for h in heard} == {first.id, "b-1", second.id, third.id}
    finally:
        await redis.aclose()
        await nc.drain()
