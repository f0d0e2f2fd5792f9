"""Incident memory (issue 17 part 3): what an incident keeps, who may see it again, how "seen before"
ranks, retention in Redis (real Valkey) and in the index, and that failures never reach an answer."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from redis.asyncio import Redis

from sleuth_agent.incidents import (
    IncidentIndex,
    IncidentMemory,
    IncidentStore,
    incident_of,
    normalise,
    seen_before_section,
    visible_to,
)
from sleuth_agent.settings import IncidentsSettings
from sleuth_common.messages import (
    Action,
    ClusterScope,
    Evidence,
    Incident,
    InvestigationJob,
    InvestigationResult,
    Requester,
    RootCause,
    ScopeReply,
)

NOW = 1_800_000_000.0


def scope(namespaces: tuple[str, ...] = ("team-a",), *, cluster: str = "prod-1", wide: bool = False) -> ScopeReply:
    return ScopeReply(user="u", clusters={cluster: ClusterScope(namespaces=namespaces, cluster_wide=wide)})


ALICE, BOB = scope(("team-a",)), scope(("team-b",))
ADMIN = scope(("team-a", "team-b"), wide=True)


def result(ns: str = "team-a", name: str = "api", pod: str = "api-7d9f8c6b5d-q8m7n", ip: str = "10.96.87.14",
           family: str = "oom_killed") -> InvestigationResult:
    return InvestigationResult(
        status="diagnosed",
        root_cause=RootCause(family=family, resource=f"Deployment/{ns}/{name}", confidence="high",
                             summary=f"Container {name} of Deployment/{ns}/{name} is OOMKilled (exit code 137) at "
                                     "its 256Mi limit. It restarted 7 times."),
        evidence=(
            Evidence(id="E01", tool="list_pods", command=f"kubectl get pods -n {ns} -o wide",
                     highlights=(f"{pod}: CrashLoopBackOff",)),
            Evidence(id="E02", tool="get_pod", command=f"kubectl get pod {pod} -n {ns} -o yaml",
                     highlights=("last terminated: OOMKilled", "exit code 137", "7 restarts", "limits.memory=256Mi",
                                 f"back-off 5m0s restarting failed container={name} pod={pod}_{ns}"
                                 "(b98587e2-5675-5211-96d4-e56269758d57)")),
            Evidence(id="E03", tool="pod_logs", command=f"kubectl logs {pod} -n {ns} --previous",
                     highlights=(f"connect ECONNREFUSED {ip}:5432",)),
        ),
        actions=(Action(text=f"Raise the memory limit of {name} from 256Mi to 512Mi.",
                        command=f"kubectl set resources deployment/{name} -n {ns} --limits=memory=512Mi"),),
        answer_markdown="**Problem:** one workload is failing.\n\n**Root cause** (oom_killed): … [E02]\n\n"
                        "**Evidence**\n\n- **E01** …\n- **E03** …",
    )


def job(user: str = "alice", id: str = "j1", clusters: tuple[str, ...] = ()) -> InvestigationJob:
    return InvestigationJob(id=id, requester=Requester(user=user), question="what is failing?", clusters=clusters)


def incident(id: str, ns: str = "team-a", name: str = "api", *, at: float = NOW - 3600, s: ScopeReply = ALICE,
             **kw: object) -> Incident:
    made = incident_of(job(id=id), result(ns, name, **kw), s, now=at)  # type: ignore[arg-type]
    assert made is not None
    return made


# -- what an incident keeps --------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    a: str
    b: str
    same: bool


@pytest.mark.parametrize("case", [
    Case("pod=api-7d9f8c6b5d-q8m7n_team-a(b98587e2-5675-5211-96d4-e56269758d57)",
         "pod=api-5c6d7e8f9a-mt4zq_team-a(0f0e2a1c-1111-2222-3333-444455556666)", True),
    Case("connect ECONNREFUSED 10.96.87.14:5432", "connect ECONNREFUSED 10.0.0.7:6379", True),
    Case("7 restarts", "12 restarts", True),
    Case("pulling image sha256:ab12cd34ef56 failed", "pulling image sha256:99ffee0011aa failed", True),
    Case("exit code 137", "exit code 1", False),  # the exit code is the point
    Case("last terminated: OOMKilled", "last terminated: Error", False),
])
def test_a_signature_item_is_what_stays_the_same_when_a_failure_repeats(case: Case) -> None:
    assert (normalise(case.a) == normalise(case.b)) is case.same, (normalise(case.a), normalise(case.b))
    for raw in (case.a, case.b):
        assert not any(x in normalise(raw) for x in ("10.96.87.14", "b98587e2", "q8m7n", "ab12cd34ef56"))


def test_an_incident_keeps_the_cited_evidence_signature_and_names_its_namespaces() -> None:
    i = incident("j1")
    assert i.clusters == ("prod-1",) and i.namespaces == ("team-a",) and not i.cluster_wide_only
    assert i.family == "oom_killed" and i.resource == "Deployment/team-a/api" and i.user == "alice"
    # only E02 is cited by the root cause: E01's pod list and E03's log are not its signature
    assert "exit code 137" in i.signature and "last terminated: oomkilled" in i.signature
    assert not any("econnrefused" in s or "crashloopbackoff" in s for s in i.signature)
    assert i.actions == ("Raise the memory limit of api from 256Mi to 512Mi.",)
    # an answer that cites nothing: all the evidence is decisive, still normalised
    uncited = result().model_copy(update={"answer_markdown": "no citations"})
    j = incident_of(job(), uncited, ALICE)
    assert j is not None and "connect econnrefused <ip>" in j.signature and "api-<id>-<id>: crashloopbackoff" in j.signature


def test_what_an_incident_names_decides_who_may_see_it() -> None:
    r = result()
    # the summary names a Service of team-c (in the recorder's scope): team-c joins the namespaces
    mentions = r.model_copy(update={"root_cause": r.root_cause.model_copy(  # type: ignore[union-attr]
        update={"summary": "Connections refused at Service/team-c/db."})})
    wide = scope(("team-a", "team-c"))
    i = incident_of(job(), mentions, wide)
    assert i is not None and i.namespaces == ("team-a", "team-c")
    assert visible_to(i, wide) and not visible_to(i, ALICE)
    # decisive evidence read across namespaces (or a cluster-scoped kind): cluster-wide readers only
    across = r.model_copy(update={"evidence": (Evidence(id="E02", tool="get_node", command="kubectl get node n1",
                                                        highlights=("NotReady",)),)})
    k = incident_of(job(), across, ALICE)
    assert k is not None and k.cluster_wide_only and not visible_to(k, ALICE) and visible_to(k, ADMIN)
    # a cluster-scoped root cause
    node = r.model_copy(update={"root_cause": RootCause(family="node_not_ready", resource="Node/n1")})
    n = incident_of(job(), node, ADMIN)
    assert n is not None and n.cluster_wide_only and not visible_to(n, ALICE)
    # another cluster, or one the reader has no scope on
    assert not visible_to(incident("j2"), scope(("team-a",), cluster="prod-2"))


def test_only_diagnoses_are_remembered() -> None:
    for status in ("healthy", "insufficient_evidence", "denied", "error"):
        assert incident_of(job(), result().model_copy(update={"status": status}), ALICE) is None
    # a job whose namespace is on none of the asker's clusters (it cannot be placed)
    assert incident_of(job(), result(ns="team-z"), ALICE) is None


def test_a_namespace_on_several_clusters_needs_the_reader_on_each() -> None:
    two = ScopeReply(user="u", clusters={"prod-1": ClusterScope(namespaces=("team-a",)),
                                         "prod-2": ClusterScope(namespaces=("team-a",))})
    i = incident_of(job(), result(), two)
    assert i is not None and i.clusters == ("prod-1", "prod-2")
    assert visible_to(i, two) and not visible_to(i, ALICE)
    named = incident_of(job(clusters=("prod-2",)), result(), two)
    assert named is not None and named.clusters == ("prod-2",)


# -- seen before -----------------------------------------------------------------------------------

def test_seen_before_ranks_the_same_failure_then_the_object_then_close_evidence() -> None:
    index = IncidentIndex()
    index.add([
        incident("same-failure", at=NOW - 7200),
        incident("same-object", family="crash_loop_app_error", at=NOW - 600),
        incident("elsewhere", name="worker", pod="worker-5c6d7e8f9a-mt4zq", at=NOW - 60),
        incident("b-same", ns="team-b", s=BOB, at=NOW - 30),  # identical evidence, another tenant
    ], now=NOW)
    index.rebuild()
    query = incident("now", at=NOW)
    hits = index.search(query, ALICE)
    assert [h.incident.job_id for h in hits] == ["same-failure", "same-object", "elsewhere"]
    assert [h.rank for h in hits] == [3, 2, 1]
    # never the job being answered, and k bounds the list
    index.add([query], now=NOW)
    assert "now" not in [h.incident.job_id for h in index.search(query, ALICE, k=10)]
    assert len(index.search(query, ALICE, k=1)) == 1
    # the other tenant sees only its own; a cluster-wide reader sees both
    assert [h.incident.job_id for h in index.search(incident("q", ns="team-b", s=BOB), BOB, k=10)] == ["b-same"]
    assert {h.incident.job_id for h in index.search(query, ADMIN, k=10)} >= {"b-same", "same-failure"}


def test_added_incidents_are_found_before_the_bm25_index_is_rebuilt() -> None:
    index = IncidentIndex()
    index.add([incident("old-1", name="worker", pod="worker-5c6d7e8f9a-mt4zq")], now=NOW)
    index.rebuild()
    index.add([incident("new-1", name="cron", pod="cron-5c6d7e8f9a-abc12")], now=NOW)
    assert index.pending == 1
    found = {h.incident.job_id for h in index.search(incident("q", at=NOW), ALICE, k=5)}
    assert found == {"old-1", "new-1"}
    # a signature that shares too little is not "seen before"
    other = incident_of(job(id="q2"), result().model_copy(update={"evidence": (
        Evidence(id="E02", tool="x", command="kubectl get pod p -n team-a", highlights=("exit code 1", "x")),)}),
        ALICE)
    assert other is not None and index.search(other.model_copy(update={"resource": "Deployment/team-a/z"}), ALICE) == []


def test_the_index_keeps_the_newest_within_its_age_and_count() -> None:
    index = IncidentIndex(max_incidents=3, max_age=86400)
    assert index.add([incident(f"j{n}", at=NOW - 1000 + n) for n in range(5)], now=NOW) == 5
    assert sorted(index._state.docs) == ["j2", "j3", "j4"]
    assert index.add([incident("j4", at=NOW - 1000 + 4)], now=NOW) == 0  # idempotent by job id
    index.add([incident("ancient", at=NOW - 2 * 86400)], now=NOW)
    assert "ancient" not in index and len(index) == 3
    loaded = IncidentIndex(max_incidents=2, max_age=86400)  # Redis gives the newest first
    loaded.add([incident(f"r{n}", at=NOW - 100 + n) for n in reversed(range(4))], now=NOW)
    assert list(loaded._state.docs) == ["r2", "r3"]


def test_the_section_says_when_and_what_fixed_it() -> None:
    from sleuth_agent.incidents import SeenBefore

    i = incident("j1", at=NOW - 3 * 86400).model_copy(update={"fixed_by": "raised the limit to 1Gi"})
    text = seen_before_section([SeenBefore(i, 3, 1.0)], now=NOW)
    assert text.startswith("**Seen before** (in your scope):\n- 2027-01-12 ")
    assert "(3 d ago) — the same failure of `Deployment/team-a/api` (oom_killed): Container api" in text
    assert "Fixed by: `raised the limit to 1Gi`" in text
    assert seen_before_section([]) == ""


# -- Redis and failures ----------------------------------------------------------------------------

async def test_redis_keeps_the_newest_incidents_within_the_limits(valkey) -> None:
    redis = Redis.from_url(valkey.url)
    try:
        store = IncidentStore(redis, "sleuth", max_incidents=3, max_age=86400)
        now = time.time()
        for n in range(5):
            await store.put(incident(f"j{n}", at=now - 100 + n), now=now)
        await store.put(incident("old", at=now - 90_000), now=now)  # already past the age limit
        assert [i.job_id for i in await store.recent(now=now)] == ["j4", "j3", "j2"]
        assert await redis.exists("sleuth:agent:incidents:doc:j0") == 0  # dropped, not only unlisted
        assert 0 < await redis.ttl("sleuth:agent:incidents:doc:j4") <= 86400
        assert set(await redis.keys("sleuth:agent:incidents:*")) <= {
            f"sleuth:agent:incidents:{k}".encode() for k in ("by_time", "doc:j2", "doc:j3", "doc:j4", "doc:old")}
        await redis.set("sleuth:agent:incidents:doc:j3", "not json")
        assert [i.job_id for i in await store.recent(now=now)] == ["j4", "j2"]  # a broken one is skipped

        memory = IncidentMemory(store, IncidentsSettings())
        assert await memory.load() and len(memory.index) == 2
        assert await memory.record(incident("j9", at=now)) and await store.get("j9") is not None
    finally:
        await redis.aclose()


async def test_redis_down_means_no_history_never_a_failed_or_slow_answer() -> None:
    from redis.asyncio import Redis as R

    dead = R(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    heard: list[str] = []
    memory = IncidentMemory(IncidentStore(dead, "sleuth", max_incidents=10, max_age=86400),
                            IncidentsSettings(redis_timeout=0.5))

    async def announce(m):  # type: ignore[no-untyped-def]
        heard.append(m.incident.job_id)

    memory.announce_with(announce)
    t0 = time.perf_counter()
    assert not await memory.load() and not memory.loaded
    assert await memory.search(incident("q", at=time.time()), ALICE) == []
    assert not await memory.record(incident("j1", at=time.time()))  # not stored, still announced and indexed
    assert time.perf_counter() - t0 < 2.0 and heard == ["j1"] and "j1" in memory.index
    await dead.aclose()


async def test_a_slow_search_is_dropped_not_waited_for(monkeypatch) -> None:
    memory = IncidentMemory(None, IncidentsSettings(search_timeout=0.05))
    memory.index.add([incident("j1", at=time.time())])
    monkeypatch.setattr(IncidentIndex, "search", lambda *a, **k: time.sleep(0.5) or ["late"])
    t0 = time.perf_counter()
    assert await memory.search(incident("q", at=time.time()), ALICE) == []
    assert time.perf_counter() - t0 < 0.4
