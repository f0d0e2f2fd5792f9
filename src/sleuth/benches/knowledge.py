"""``make bench`` — runbook search (issue 17): 1,000 runbooks, BM25 + tags, visibility by scope.

- ``runbooks_index_1000``: building the index of 1,000 generated runbooks (once per change of the
  knowledge base). Floor: parsing the same 1,000 documents (front matter + checks), which any
  index must do first.
- ``runbooks_search_1000``: one search (median of 300) with text and tags, as an answer makes it,
  for a tenant who may see a third of the namespace-tagged runbooks. Floor: tokenising the query
  and scanning the 1,000 runbooks' tags once in Python — the least any search that honours tags and
  visibility must do. Target: < 5 ms (an answer must not wait for it).
"""

from __future__ import annotations

import random
import statistics
import time

from sleuth.benches import emit

_WORDS = ("pod container restart crash loop oom memory limit cpu throttle disk volume pvc full dns lookup "
          "timeout certificate expired ingress service endpoint node pressure eviction image pull secret "
          "config map mount probe readiness liveness deploy rollout rollback replica scale hpa quota "
          "postgres redis kafka nginx queue backlog latency error rate wal archive ledger billing").split()
_FAMILIES = ("crashloop", "oom", "image_pull", "disk_full", "dns", "probe_failure", "pending", "config")


def _runbooks(n: int) -> list[str]:
    rng = random.Random(17)
    docs = []
    for i in range(n):
        tags = [f"family:{rng.choice(_FAMILIES)}", f"workload:app-{i % 97}"]
        if i % 3:
            tags.append(f"namespace:team-{i % 40:02d}")
        if i % 5 == 0:
            tags.append(f"alert:Alert{i}")
        steps = "\n".join(f"{s}. {' '.join(rng.choices(_WORDS, k=14))}" for s in range(1, 7))
        docs.append(f"---\ntitle: {' '.join(rng.choices(_WORDS, k=4))} {i}\ntags: [{', '.join(tags)}]\n---\n"
                    f"{' '.join(rng.choices(_WORDS, k=60))}\n\n{steps}\n")
    return docs


def run() -> None:
    from sleuth_agent.knowledge import RunbookIndex, Visibility, parse_runbook, query_tags, tokens

    texts = _runbooks(1000)
    t0 = time.perf_counter()
    parsed = [parse_runbook(t, id=f"rb-{i}") for i, t in enumerate(texts)]
    floor_parse = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = RunbookIndex(parsed)
    build = time.perf_counter() - t0
    emit("runbooks_index_1000", build * 1e3, "ms", "parsing the same 1,000 runbooks", floor_parse * 1e3, "< 1000 ms")

    visible = Visibility("prod-1", frozenset(f"team-{i:02d}" for i in range(0, 40, 3)))
    question = "why are the postgres pods in team-03 crash looping after the rollout, disk volume full?"
    tags = query_tags(family="crashloop", workload="app-12", alert="Alert35")

    def floor_once() -> None:
        words = set(tokens(question))
        sum(1 for r in index.runbooks if visible.allows(r) and (words & set(r.tags) or tags & set(r.tags)))

    def timed(fn: object, n: int) -> float:
        out = []
        for _ in range(n):
            t = time.perf_counter()
            fn()  # type: ignore[operator]
            out.append((time.perf_counter() - t) * 1e3)
        return statistics.median(out)

    floor = timed(floor_once, 300)
    hits: list[object] = []
    search = timed(lambda: hits.append(index.search(question, tags, visible=visible)), 300)
    found = hits[-1]
    emit("runbooks_search_1000", search, "ms", "tokenise + one scan of tags and visibility", floor, "< 5 ms",
         hits=len(found))  # type: ignore[arg-type]


if __name__ == "__main__":
    run()
