"""``make bench`` — scope resolution on a big cluster (issue 16), next to the demo cluster.

Both clusters are simcluster processes (their own interpreter, as an API server is) serving over
HTTPS: ``scenarios/demo`` and :func:`sleuth.benches.big_snapshot.large_cluster` (2,000 namespaces,
50,000 pods, 500 users), generated into a temporary directory for this run.

- ``large_snapshot_generate`` / ``simcluster_load_*``: seconds to write the big snapshot, and for
  simcluster to load it and answer.
- ``rolebinding_index_build_<cluster>``: authz-cache listing every RoleBinding (paged) into the
  index of scope candidates (:mod:`sleuth_authz_cache.bindings`) — once per cluster per
  ``authz.rolebinding_index_ttl``, shared by everyone.
- ``cold_scope_<cluster>_<who>``: one scope resolution through authz-cache's own code
  (:class:`~sleuth_authz_cache.scope.ScopeResolver` over
  :class:`~sleuth_authz_cache.kubernetes.KubernetesBackend`, ``review_concurrency`` as configured by
  default, the RoleBinding index built) for a team member, a member of two teams, a team lead, a
  cluster-wide viewer and an admin; with the number of SubjectAccessReviews it took.
  ``…_every_namespace``: the same person reviewed in every namespace (``authz.scope_candidates:
  all``, the way before issue 16), for comparison. Floor: one SubjectAccessReview round trip to the
  same server. Target (issue 16): < 2 s.
- ``warm_scope_<cluster>_local`` / ``_redis``: a cached lookup through
  :class:`~sleuth_authz_cache.service.AuthzService` with its real :class:`ScopeCache` on Valkey —
  served from the per-process copy, and from Valkey (the per-process copy dropped before each
  lookup, as on another replica or after its 2 s). Floors: a Valkey PING, and a Valkey GET of the
  same stored bytes. Target: < 1 ms.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sleuth.benches import emit
from sleuth.benches.big_snapshot import large_cluster

REPO = Path(__file__).resolve().parents[3]
TARGET_COLD = "< 2000 ms"
TARGET_WARM = "< 1 ms"


@dataclass(frozen=True)
class Cluster:
    name: str
    url: str
    ca_file: str
    token_file: str


@dataclass(frozen=True)
class Asker:
    label: str
    user: str
    groups: tuple[str, ...]


@contextmanager
def _simcluster(name: str, snapshot: Path, state: Path) -> Iterator[Cluster]:
    """simcluster in its own process; yields once it answers (the load time is printed)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth_simcluster", "--snapshot", str(snapshot), "--state-dir", str(state),
         "--port", "0", "--log-level", "WARNING"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"simcluster for {snapshot} did not start (exit {proc.wait()})")
        ready = json.loads(line)
        print(json.dumps({"figure": f"simcluster_load_{name}", "value": round(time.perf_counter() - t0, 2),
                          "unit": "s"}), flush=True)
        yield Cluster(name, ready["url"], ready["ca_file"], str(state / "tokens" / "sleuth-authz"))
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _groups(snapshot: Path, user: str) -> tuple[str, ...]:
    import yaml

    users = yaml.safe_load((snapshot / "snapshot.yaml").read_text())["users"]
    return (*users[user]["groups"], "system:authenticated")


def _large_askers(snapshot: Path) -> list[Asker]:
    import yaml

    users = yaml.safe_load((snapshot / "snapshot.yaml").read_text())["users"]

    def first(pred: object) -> Asker:
        for name, spec in users.items():
            if name.startswith("user-") and pred(spec["groups"]):  # type: ignore[operator]
                return Asker("", name, (*spec["groups"], "system:authenticated"))
        raise LookupError("no such user in the large snapshot")

    def one(label: str, pred: object) -> Asker:
        a = first(pred)
        return Asker(label, a.user, a.groups)

    return [
        one("team_member", lambda g: len(g) == 1 and g[0].startswith("team-")),
        one("two_teams", lambda g: sum(not x.endswith("-leads") for x in g) == 2),
        one("team_lead", lambda g: any(x.endswith("-leads") for x in g)),
        one("cluster_viewer", lambda g: g == ["platform-viewers"]),
        one("admin", lambda g: g == ["platform-admins"]),
    ]


class _Counting:
    """Counts the SubjectAccessReviews a resolution makes (wraps the real backend)."""

    def __init__(self, backend: object) -> None:
        self._backend = backend
        self.reviews = 0

    async def access(self, *args: object) -> bool:
        self.reviews += 1
        return await self._backend.access(*args)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._backend, name)


async def _measure(cluster: Cluster, askers: list[Asker], redis_url: str) -> None:
    from redis.asyncio import Redis

    from sleuth_authz_cache.backend import Access
    from sleuth_authz_cache.kubernetes import KubernetesBackend
    from sleuth_authz_cache.metrics import Metrics
    from sleuth_authz_cache.scope import ScopeResolver
    from sleuth_common.config import AuthzSettings, ClusterSettings

    concurrency = AuthzSettings().review_concurrency
    settings = ClusterSettings(name=cluster.name, api_server=cluster.url, ca_file=cluster.ca_file,
                               authz_token_file=cluster.token_file)
    backend = KubernetesBackend([settings], timeout=30)
    counting = _Counting(backend)
    redis = Redis.from_url(redis_url)
    try:
        probe = askers[0]
        sar = []
        for _ in range(60):
            t0 = time.perf_counter()
            await backend.access(cluster.name, probe.user, probe.groups, Access("get", "pods", "", "default"))
            sar.append((time.perf_counter() - t0) * 1e3)
        floor = statistics.median(sar[10:])
        # As the service runs: one resolver whose RoleBinding index (one paged list per cluster, kept
        # authz.rolebinding_index_ttl) serves every person; the first resolution pays for the build.
        resolver = ScopeResolver([cluster.name], counting, concurrency=concurrency, metrics=Metrics())  # type: ignore[arg-type]
        counting.reviews = 0
        t0 = time.perf_counter()
        await resolver._bindings.candidates(cluster.name, "", ())  # type: ignore[union-attr]
        emit(f"rolebinding_index_build_{cluster.name}", (time.perf_counter() - t0) * 1e3, "ms",
             "one SubjectAccessReview round trip", floor, TARGET_COLD,
             bindings=resolver._bindings._built[cluster.name].index.bindings)  # type: ignore[union-attr]
        exhaustive = ScopeResolver([cluster.name], counting, concurrency=concurrency, metrics=Metrics(),  # type: ignore[arg-type]
                                   candidates="all")
        for a in askers:
            scopes = []
            for label, r in ((a.label, resolver), (f"{a.label}_every_namespace", exhaustive)):
                if r is exhaustive and a.label not in ("tenant", "team_member", "cluster_viewer"):
                    continue  # the old way, for comparison: a tenant and a cluster-wide reader are enough
                counting.reviews = 0
                t0 = time.perf_counter()
                reply = await r.resolve(a.user, a.groups)
                ms = (time.perf_counter() - t0) * 1e3
                if reply.errors:
                    raise RuntimeError(f"scope of {a.user} on {cluster.name}: {reply.errors}")
                scope = reply.clusters[cluster.name]
                scopes.append(scope)
                if len(scopes) == 2 and scopes[0] != scopes[1]:  # the index must never change a scope
                    raise RuntimeError(f"{a.user}: RoleBinding candidates gave {scopes[0]}, every namespace {scopes[1]}")
                emit(f"cold_scope_{cluster.name}_{label}", ms, "ms", "one SubjectAccessReview round trip", floor,
                     TARGET_COLD, reviews=counting.reviews, namespaces=len(scope.namespaces),
                     secret_namespaces=len(scope.secret_namespaces), cluster_wide=scope.cluster_wide,
                     review_concurrency=concurrency)
        await resolver.aclose()
        for a in (askers[0], askers[-1]):  # a tenant's scope, and the largest stored one (an admin's)
            await _warm(cluster, backend, redis, a, concurrency)
    finally:
        await backend.aclose()
        await redis.aclose()


async def _warm(cluster: Cluster, backend: object, redis: object, a: Asker, concurrency: int) -> None:
    """The service's real cache on Valkey: a lookup served from this process, and one from Valkey."""
    from sleuth_authz_cache.cache import ScopeCache
    from sleuth_authz_cache.metrics import Metrics
    from sleuth_authz_cache.service import AuthzService

    metrics = Metrics()
    cache = ScopeCache(redis, prefix="bench", ttl=600, token_ttl=60, metrics=metrics)  # type: ignore[arg-type]
    service = AuthzService([cluster.name], backend, cache, metrics, review_concurrency=concurrency)  # type: ignore[arg-type]
    try:
        first = await service.scope(a.user, a.groups)
        assert first.outcome == "miss", first.outcome
        key = cache.scope_key(a.user, first.reply.groups)
        stored = await redis.get(key)  # type: ignore[attr-defined]
        assert stored is not None, "the resolved scope was not stored"

        async def timed(n: int, fn: object, clear: bool = False) -> float:
            out = []
            for _ in range(n):
                if clear:
                    cache._local.clear()  # another replica's view: nothing in this process
                t0 = time.perf_counter()
                await fn()  # type: ignore[operator]
                out.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(out)

        async def lookup() -> None:
            hit = await service.scope(a.user, a.groups)
            assert hit.outcome == "hit"

        local = await timed(500, lookup)
        ping = await timed(500, redis.ping)  # type: ignore[attr-defined]
        emit(f"warm_scope_{cluster.name}_{a.label}_local", local, "ms", "Valkey PING round trip", ping,
             TARGET_WARM, namespaces=len(first.reply.clusters[cluster.name].namespaces))
        from_redis = await timed(200, lookup, clear=True)
        get = await timed(200, lambda: redis.get(key))  # type: ignore[attr-defined]
        emit(f"warm_scope_{cluster.name}_{a.label}_redis", from_redis, "ms", "Valkey GET of the same stored scope",
             get, TARGET_WARM, stored_bytes=len(stored))
    finally:
        await service.aclose()


def run() -> None:
    from sleuth.embedded.procs import ValkeyServer

    with tempfile.TemporaryDirectory(prefix="sleuth-bench-scale-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        large = large_cluster(root / "large")
        print(json.dumps({"figure": "large_snapshot_generate", "value": round(time.perf_counter() - t0, 2),
                          "unit": "s", "namespaces": 2000, "pods": 50_000, "users": 500}), flush=True)
        valkey = ValkeyServer(root / "valkey").start()
        try:
            demo = REPO / "scenarios" / "demo"
            with _simcluster("demo", demo, root / "demo-state") as cluster:
                asyncio.run(_measure(cluster, [Asker("tenant", "alice", _groups(demo, "alice")),
                                               Asker("admin", "carol", _groups(demo, "carol"))], valkey.url))
            with _simcluster("large", large, root / "large-state") as cluster:
                asyncio.run(_measure(cluster, _large_askers(large), valkey.url))
        finally:
            valkey.stop()


if __name__ == "__main__":
    run()
