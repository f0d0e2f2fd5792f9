"""``make bench`` — one deterministic investigation on a big cluster (issue 16), next to the demo cluster.

Every part runs as in a deployment, each in its own process: simcluster serving the snapshot over
HTTPS (``scenarios/demo``, and :func:`sleuth.benches.big_snapshot.large_cluster`: 2,000
namespaces, 50,000 pods, 500 users), kube-mcp reading it as the asker (impersonation, signed
identity, lists paged), and the agent: a fresh interpreter running ``sleuth_agent.investigate()``
(the code the agent worker and ``sleuth investigate`` run) through the scope filter, with the
names inventory authz-cache would send it. The agent process measures itself.

Per cluster and asker (a team member asking about their namespace; a cluster-wide viewer — on the
demo cluster, the admin — asking about the whole cluster):

- ``investigate_<cluster>_<who>``: wall time of the investigation (median of 3 in one agent
  process; the first, cold one as ``first_ms``). Floor on the demo cluster: one ``list_pods`` call
  through the same scoped MCP client; on the large one: the same asker's investigation on the demo
  cluster in this run (the ratio is what the cluster's size costs). Target (issue 16): < 2 s.
- ``investigate_<cluster>_<who>_rss``: the agent process's peak RSS (``VmHWM``). Floor: its RSS
  once the agent code is imported, before any investigation. Target: < 300 MB.
- ``scope_<cluster>_<who>``: the scope resolution the job needs (authz-cache's
  :class:`~sleuth_authz_cache.scope.ScopeResolver` against the same simcluster), its share reported
  apart: it is authz-cache's work, cached between questions.
- ``kube_mcp_<cluster>_rss``: kube-mcp's peak RSS after the investigations (paged lists keep it
  flat as the cluster grows). Floor: the demo cluster's.

``python -m sleuth.benches.investigate_scale --agent SPEC.json`` is the agent side (used by run()).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sleuth.benches import emit

REPO = Path(__file__).resolve().parents[3]
TARGET_MS = "< 2000 ms"
TARGET_RSS = "< 300 MB"
RUNS = 3


# -- the agent process -----------------------------------------------------------------------------
def _status_mb(field: str, pid: int | str = "self") -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of a process, in MB. Not ``ru_maxrss``: Linux carries that
    over ``execve`` from the parent that forked the process (here: the bench, holding the snapshot)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def _agent(spec_file: str) -> None:
    """Run one asker's investigation ``RUNS`` times in this (fresh) process; print the figures."""
    from sleuth_agent import Settings as AgentSettings
    from sleuth_agent import investigate
    from sleuth_agent.tools import open_cluster_tools
    from sleuth_common.config import ClusterSettings, IdentitySettings
    from sleuth_common.mcp import use_inventory
    from sleuth_common.messages import InvestigationJob, Requester, ScopeReply
    from sleuth_common.scope import Scope

    spec = json.loads(Path(spec_file).read_text())
    baseline = _status_mb("VmRSS")
    cluster = ClusterSettings.model_validate(spec["cluster"])
    settings = AgentSettings(clusters=[cluster], identity=IdentitySettings.model_validate(spec["identity"]))
    scope = ScopeReply.model_validate(spec["scope"])
    names: dict[str, Any] = {}
    raw_inventory = Path(spec["inventory"]).read_text()

    async def inventory(_cluster: str) -> dict[str, Any]:
        # authz-cache's reply as the agent receives it (parsed once, then reused as bus_inventory does)
        if not names:
            names.update(json.loads(raw_inventory))
        return names

    def job() -> InvestigationJob:
        return InvestigationJob(origin="api", requester=Requester(user=spec["user"], groups=tuple(spec["groups"])),
                                question=spec["question"], deadline=time.time() + 60)

    async def main() -> dict[str, Any]:
        times, result = [], None
        with use_inventory(inventory):
            for _ in range(RUNS):
                t0 = time.perf_counter()
                result = await investigate(job(), scope, settings)
                times.append((time.perf_counter() - t0) * 1e3)
            cscope = Scope.from_cluster_scope(scope.clusters[cluster.name])
            async with open_cluster_tools(cluster, cscope, job(), settings, None, None) as tools:
                calls = []
                for _ in range(20):
                    t0 = time.perf_counter()
                    r = await tools.call("list_pods", {"namespace": spec["namespace"]})
                    calls.append((time.perf_counter() - t0) * 1e3)
                    assert r.ok, r.error
        assert result is not None
        return {"first_ms": times[0], "median_ms": statistics.median(times), "call_ms": statistics.median(calls[5:]),
                "status": result.status, "tool_calls": result.tool_calls, "evidence": len(result.evidence),
                "answer_chars": len(result.answer_markdown)}

    out = asyncio.run(main())
    out |= {"baseline_mb": baseline, "peak_mb": _status_mb("VmHWM")}
    print(json.dumps(out), flush=True)


# -- the parent: clusters, kube-mcp, scopes ---------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _kube_mcp(name: str, state: Path, identity: Any, work: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """kube-mcp in its own process, as deployed: the reader's kubeconfig, identity required."""
    import httpx
    import yaml

    port = _free_port()
    config = work / f"kube-mcp-{name}.yaml"
    config.write_text(yaml.safe_dump({
        "kube_mcp": {"host": "127.0.0.1", "port": port, "kubeconfig": str(state / "kubeconfig" / "sleuth-reader.yaml"),
                     "cluster_name": name, "require_identity": True},
        "identity": {"verify_key_files": list(identity.verify_key_files), "verify_keys_env": ""},
        "logging": {"level": "WARNING"},
    }))
    proc = subprocess.Popen([sys.executable, "-m", "sleuth_kube_mcp", "--config", str(config)])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kube-mcp for {name} did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


async def _scope(cluster: Any, user: str, groups: tuple[str, ...]) -> tuple[Any, float]:
    """The asker's scope through authz-cache's own resolver; (ScopeReply, ms)."""
    from sleuth_authz_cache.kubernetes import KubernetesBackend
    from sleuth_authz_cache.metrics import Metrics
    from sleuth_authz_cache.scope import ScopeResolver
    from sleuth_common.config import AuthzSettings, ClusterSettings
    from sleuth_common.messages import ScopeReply

    settings = ClusterSettings(name=cluster.name, api_server=cluster.url, ca_file=cluster.ca_file,
                               authz_token_file=cluster.token_file)
    backend = KubernetesBackend([settings], timeout=30)
    try:
        resolver = ScopeResolver([cluster.name], backend, concurrency=AuthzSettings().review_concurrency,
                                 metrics=Metrics())
        t0 = time.perf_counter()
        reply = await resolver.resolve(user, groups)
        ms = (time.perf_counter() - t0) * 1e3
    finally:
        await backend.aclose()
    if reply.errors:
        raise RuntimeError(f"scope of {user} on {cluster.name}: {reply.errors}")
    return ScopeReply(user=user, groups=groups, clusters=dict(reply.clusters)), ms


async def _inventory(cluster: Any, token: str) -> dict[str, list[str]]:
    """The names index authz-cache builds and sends the agent (its own code), read as authz-cache."""
    import ssl

    import httpx

    from sleuth_authz_cache.inventory import capped_reply
    from sleuth_authz_cache.resolve import build_index

    ctx = ssl.create_default_context(cafile=cluster.ca_file)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=cluster.url, verify=ctx, headers=headers, timeout=60) as http:
        pods, services = await asyncio.gather(http.get("/api/v1/pods"), http.get("/api/v1/services"))
    index = build_index(pods.json().get("items") or [], services.json().get("items") or [])
    reply = capped_reply(cluster.name, index.inventory, 900_000)
    return {ns: list(names) for ns, names in reply.names.items()}


def _askers(name: str, snapshot: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    from sleuth.benches.scope_scale import _groups, _large_askers

    if name == "demo":
        return [("team_member", "alice", _groups(snapshot, "alice")), ("cluster_viewer", "carol", _groups(snapshot, "carol"))]
    return [(a.label, a.user, a.groups) for a in _large_askers(snapshot) if a.label in ("team_member", "cluster_viewer")]


def _measure(name: str, snapshot: Path, work: Path, identity: Any, demo: dict[str, float]) -> None:
    from sleuth.benches.scope_scale import _simcluster
    from sleuth_common.config import ClusterSettings, McpServerSettings

    with _simcluster(name, snapshot, work / f"{name}-state") as cluster, \
            _kube_mcp(name, work / f"{name}-state", identity, work) as (mcp_url, mcp_proc):
        inventory = work / f"{name}-inventory.json"
        inventory.write_text(json.dumps(asyncio.run(_inventory(cluster, Path(cluster.token_file).read_text().strip()))))
        settings = ClusterSettings(name=name, api_server=cluster.url, ca_file=cluster.ca_file,
                                   mcp_servers=[McpServerSettings(name="kube", url=mcp_url, timeout=10.0, identity=True)])
        for label, user, groups in _askers(name, snapshot):
            scope, scope_ms = asyncio.run(_scope(cluster, user, groups))
            cs = scope.clusters[name]
            own = sorted(cs.namespaces)
            namespace = next((ns for ns in own if ns.startswith("team")), own[0])
            question = (f"is anything wrong in {namespace}?" if label == "team_member"
                        else "is anything failing in the cluster?")
            spec = work / f"{name}-{label}.json"
            spec.write_text(json.dumps({
                "cluster": settings.model_dump(mode="json"), "identity": identity.model_dump(mode="json"),
                "scope": scope.model_dump(mode="json"), "inventory": str(inventory), "user": user,
                "groups": list(groups), "question": question, "namespace": namespace,
            }))
            out = subprocess.run([sys.executable, "-m", "sleuth.benches.investigate_scale", "--agent", str(spec)],
                                 capture_output=True, text=True, timeout=600, check=False)
            if out.returncode != 0:
                raise RuntimeError(f"the agent process failed for {name}/{label}:\n{out.stderr[-3000:]}")
            got = json.loads(out.stdout.strip().splitlines()[-1])
            what = {"asker": label, "question": question, "namespaces_in_scope": len(cs.namespaces),
                    "cluster_wide": cs.cluster_wide, "status": got["status"], "tool_calls": got["tool_calls"],
                    "evidence": got["evidence"], "first_ms": round(got["first_ms"], 1)}
            key = f"{label}"
            if name == "demo":
                demo[key] = got["median_ms"]
                emit(f"investigate_{name}_{label}", got["median_ms"], "ms", "one list_pods call through the same "
                     "scoped MCP client", got["call_ms"], TARGET_MS, **what)
            else:
                emit(f"investigate_{name}_{label}", got["median_ms"], "ms", "the same asker's investigation on the "
                     "demo cluster (this run)", demo.get(key, 0.0), TARGET_MS, **what)
            emit(f"investigate_{name}_{label}_rss", got["peak_mb"], "MB", "the agent process's RSS with its code "
                 "imported, before investigating", got["baseline_mb"], TARGET_RSS)
            emit(f"scope_{name}_{label}", scope_ms, "ms", "the investigation it precedes (median, this run)",
                 got["median_ms"], "authz-cache's share, cached between questions")
        peak = _status_mb("VmHWM", mcp_proc.pid)
        if name == "demo":
            demo["kube_mcp_rss"] = peak
        emit(f"kube_mcp_{name}_rss", peak, "MB", "kube-mcp's peak RSS on the demo cluster (this run)",
             demo.get("kube_mcp_rss", peak), "flat as the cluster grows")


def run() -> None:
    from sleuth.benches.big_snapshot import large_cluster
    from sleuth.scenarios import _identity_keys

    with tempfile.TemporaryDirectory(prefix="sleuth-bench-investigate-") as tmp:
        work = Path(tmp)
        large = large_cluster(work / "large")
        identity = _identity_keys(work)
        demo: dict[str, float] = {}
        _measure("demo", REPO / "scenarios" / "demo", work, identity, demo)
        _measure("large", large, work, identity, demo)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--agent"]:
        os.environ.setdefault("PYTHONHASHSEED", "0")
        _agent(sys.argv[2])
    else:
        run()
