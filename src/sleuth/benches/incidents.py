"""``make bench`` — incident memory (issue 17): "seen before" over 10,000 incidents, and what an answer
spends on team knowledge.

- ``incidents_index_10000``: building the BM25 index of 10,000 generated incidents (in the
  background, every ``incidents.reindex_interval`` while new ones arrive). Floor: tokenising the same
  10,000 incidents, which any index must do first.
- ``incidents_search_10000``: one "seen before" search (median of 300) for a tenant who may read a
  third of the namespaces. Floor: one Python pass over the 10,000 signatures intersecting each with
  the query's — the plainest search without an index. Target: < 20 ms (``incidents.search_timeout``
  is 300 ms).
- ``answer_knowledge_overhead``: the time an answer spends on the runbook line and the "seen before"
  section (p50 of 200 answers, with 1,000 runbooks and 10,000 incidents loaded), as the agent's job
  handler runs them. Floor: encoding and decoding the same answer once, as publishing it does.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sleuth.benches import emit
from sleuth.benches.knowledge import _runbooks

_FAMILIES = ("oom_killed", "crash_loop_app_error", "image_pull", "probe_failure", "missing_config", "pvc_pending")
_HIGHLIGHTS = ("last terminated: OOMKilled", "exit code 137", "exit code 1", "{n} restarts", "limits.memory={n}Mi",
               "Back-off pulling image registry.internal/app-{n}:2.{n}", "Readiness probe failed: HTTP 503",
               "connect ECONNREFUSED 10.96.{n}.14:5432", "secret \"db-{n}\" not found", "0/3 nodes are available",
               "Liveness probe failed: timeout", "CrashLoopBackOff", "FailedMount: volume not attached")


def _result(rng: random.Random, i: int) -> tuple[Any, Any]:
    from sleuth_common.messages import (
        Action,
        Evidence,
        InvestigationJob,
        InvestigationResult,
        Requester,
        RootCause,
    )

    ns, app, family = f"team-{i % 40:02d}", f"app-{i % 97}", _FAMILIES[i % len(_FAMILIES)]
    highlights = tuple(h.format(n=rng.randint(1, 999)) for h in rng.sample(_HIGHLIGHTS, 4))
    result = InvestigationResult(
        status="diagnosed",
        root_cause=RootCause(family=family, resource=f"Deployment/{ns}/{app}", confidence="high",
                             summary=f"Container {app} of Deployment/{ns}/{app} fails: {highlights[0]}."),
        evidence=(Evidence(id="E01", tool="get_pod", command=f"kubectl get pod {app}-7d9f8c6b5d-q8m7n -n {ns} -o yaml",
                           highlights=highlights),),
        actions=(Action(text=f"Fix {app}.", command=f"kubectl rollout undo deployment/{app} -n {ns}"),),
        answer_markdown=f"**Problem:** {app} fails.\n\n**Root cause** ({family}): … [E01]\n\n**Evidence** …",
    )
    job = InvestigationJob(id=f"job-{i}", requester=Requester(user=f"user-{i % 500}"), question=f"why is {app} failing?")
    return job, result


def run() -> None:
    from sleuth_agent.incidents import IncidentIndex, incident_of
    from sleuth_agent.knowledge import tokens
    from sleuth_common.messages import ClusterScope, ScopeReply

    rng = random.Random(17)
    everyone = ScopeReply(user="admin", clusters={"prod-1": ClusterScope(
        namespaces=tuple(f"team-{n:02d}" for n in range(40)), cluster_wide=True)})
    now = time.time()
    incidents = []
    for i in range(10_000):
        job, result = _result(rng, i)
        made = incident_of(job, result, everyone, now=now - 86400 * 30 * (1 - i / 10_000))
        assert made is not None
        incidents.append(made)

    t0 = time.perf_counter()
    for made in incidents:
        tokens(" ".join((*made.signature, made.family)))
    floor_tokens = time.perf_counter() - t0
    index = IncidentIndex()
    index.add(incidents, now=now)
    t0 = time.perf_counter()
    index.rebuild()
    emit("incidents_index_10000", (time.perf_counter() - t0) * 1e3, "ms", "tokenising the same 10,000 incidents",
         floor_tokens * 1e3, "< 2000 ms")

    tenant = ScopeReply(user="alice", clusters={"prod-1": ClusterScope(
        namespaces=tuple(f"team-{n:02d}" for n in range(0, 40, 3)))})
    job, result = _result(rng, 10_003)
    query = incident_of(job, result, tenant)
    assert query is not None
    wanted = set(query.signature)

    def floor_once() -> None:
        sum(1 for other in incidents if wanted & set(other.signature))

    floor = _median(floor_once, 300)
    hits: list[Any] = []
    search = _median(lambda: hits.append(index.search(query, tenant)), 300)
    emit("incidents_search_10000", search, "ms", "one pass intersecting the 10,000 signatures", floor, "< 20 ms",
         hits=len(hits[-1]))
    asyncio.run(_answer_overhead(incidents, tenant))


def _median(fn: Any, n: int) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return statistics.median(out)


async def _answer_overhead(incidents: list[Any], tenant: Any) -> None:
    from sleuth_agent.handlers import JobHandler
    from sleuth_agent.incidents import IncidentMemory
    from sleuth_agent.knowledge import Knowledge
    from sleuth_agent.metrics import Metrics
    from sleuth_agent.settings import Settings
    from sleuth_common.messages import InvestigationResult

    settings = Settings(prefix="bench")
    with tempfile.TemporaryDirectory() as d:
        for i, text in enumerate(_runbooks(1000)):
            (Path(d) / f"rb-{i}.md").write_text(text)
        knowledge = Knowledge(d, None)
        await knowledge.refresh(force=True)
    memory = IncidentMemory(None, settings.incidents)
    memory.index.add(incidents)
    memory.index.rebuild()
    handler = JobHandler(None, settings, Metrics(), None, knowledge=knowledge, incidents=memory)  # type: ignore[arg-type]
    rng = random.Random(3)
    spent, floor = [], []
    for n in range(200):
        job, result = _result(rng, rng.randrange(10_000))
        job = job.model_copy(update={"id": f"answer-{n}"})
        t = time.perf_counter()
        InvestigationResult.model_validate_json(result.to_bytes())
        floor.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        out = await handler._with_runbook(job, tenant, result)
        out, _ = await handler._with_seen_before(job, tenant, out)
        spent.append((time.perf_counter() - t) * 1e3)
    emit("answer_knowledge_overhead", statistics.median(spent), "ms", "encoding + decoding the answer once",
         statistics.median(floor), "< 50 ms", p90=round(statistics.quantiles(spent, n=10)[-1], 2))


if __name__ == "__main__":
    run()
