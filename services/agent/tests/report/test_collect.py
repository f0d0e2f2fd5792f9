"""The collector over a fake toolbox answering with kube-mcp's own records: what it reads, and
what it says when a kind cannot be listed, an object cannot be read, or metrics exist."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from report_objects import container, pdb, pod, pod_spec, pvc, workload

from sleuth_agent.report import Inventory, Reads, collect, run_rules
from sleuth_common.mcp import ToolInfo, ToolResult
from sleuth_kube_mcp import shaping

NS = "team-a"


class FakeTools:
    """Answers list_* and get_resource from raw objects, as kube-mcp shapes them."""

    def __init__(self, objects: list[dict[str, Any]], *, missing: tuple[str, ...] = (),
                 denied: tuple[tuple[str, str], ...] = (), broken: tuple[str, ...] = (),
                 workload_errors: tuple[str, ...] = (), prometheus: list[dict[str, Any]] | None = None) -> None:
        self.objects, self.missing, self.denied, self.broken = objects, missing, denied, broken
        self.workload_errors, self.prometheus = workload_errors, prometheus
        self.calls: list[tuple[str, dict[str, Any]]] = []
        names = ["list_workloads", "list_pods", "list_resources", "list_pvcs", "get_resource"]
        self.tools = [ToolInfo(n) for n in names if n not in missing]
        if prometheus is not None:
            self.tools.append(ToolInfo("execute_query", "Run a PromQL query against Prometheus",
                                       {"properties": {"query": {"type": "string"}}}))

    def has_tool(self, name: str) -> bool:
        return any(t.name == name for t in self.tools)

    def _of(self, *kinds: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] in kinds]

    async def call(self, tool: str, args: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> ToolResult:  # noqa: ASYNC109
        args = dict(args or {})
        self.calls.append((tool, args))
        key = (tool, str(args.get("kind") or ""))
        if key in self.denied:
            return ToolResult(tool=tool, status="error", args=args, error='forbidden: {"code":403}', server_error=True)
        if tool == "list_workloads":
            kinds = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
            data: Any = {"workloads": [shaping.workload_summary(o, o["kind"]) for o in self._of(*kinds)]}
            if self.workload_errors:
                data["errors"] = [{"kind": k, "code": 403, "reason": "Forbidden"} for k in self.workload_errors]
        elif tool == "list_pods":
            data = {"pods": [shaping.pod_summary(o) for o in self._of("Pod")]}
        elif tool == "list_pvcs":
            data = {"pvcs": [shaping.pvc_record(o) for o in self._of("PersistentVolumeClaim")]}
        elif tool == "list_resources":
            kind = {"pdb": "PodDisruptionBudget", "hpa": "HorizontalPodAutoscaler"}[args["kind"]]
            data = {"items": [shaping.resource_record(o, kind) for o in self._of(kind)]}
        elif tool == "get_resource":
            if args["name"] in self.broken:
                return ToolResult(tool=tool, status="error", args=args, error="unavailable: timed out")
            data = next(o for o in self.objects if o["metadata"]["name"] == args["name"] and o["kind"] == args["kind"])
        else:
            data = {"status": "success", "data": {"resultType": "vector", "result": self.prometheus}}
        return ToolResult(tool=tool, status="ok", args=args, data=data)


async def gather(tools: FakeTools) -> tuple[Inventory, Reads]:
    inv, reads = Inventory("demo", [NS]), Reads()
    await collect(tools, inv, reads)
    return inv, reads


async def test_reads_every_kind_and_the_judged_objects_in_full() -> None:
    tools = FakeTools([workload(replicas=1), pod("web-1", owner=("ReplicaSet", "web-7d9")), pod("debug"), pvc(), pdb()])
    inv, reads = await gather(tools)
    assert {k: sorted(v) for k, v in inv.listed.items()}["PodDisruptionBudget"] == [NS]
    fetched = sorted(a["name"] for t, a in tools.calls if t == "get_resource")
    assert fetched == ["debug", "web"]  # the ReplicaSet's pod is judged through its Deployment
    assert inv.get("Deployment", NS, "web").data["spec"]["replicas"] == 1  # type: ignore[union-attr]
    assert reads.calls == 7 and reads.notes("demo") == []
    assert inv.pvc_usage is None and "no Prometheus tool" in inv.metrics_note
    assert str(inv.now) == "2026-11-01 00:00:00+00:00"  # the latest time the data carries


async def test_a_kind_that_cannot_be_listed_is_absent_and_said_so() -> None:
    tools = FakeTools([workload(replicas=1)], denied=(("list_resources", "pdb"),), missing=("list_pvcs",),
                      workload_errors=("cronjobs",))
    inv, reads = await gather(tools)
    assert not inv.readable("PodDisruptionBudget", NS) and not inv.readable("CronJob", NS)
    assert inv.readable("Deployment", NS) and inv.readable("HorizontalPodAutoscaler", NS)
    notes = reads.notes("demo")
    assert "PodDisruptionBudgets could not be listed in team-a on demo (your access does not allow it): " \
           "none of them is in this report" in notes
    assert any(n.startswith("CronJobs could not be listed in team-a") for n in notes)
    assert "The tools of demo offer no list_pvcs: what it reads is not in this report" in notes
    out = run_rules(inv)
    assert not any(f.rule == "single_replica_no_pdb" for f in out.findings)
    assert any("single_replica_no_pdb" in n and "skipped in team-a" in n for n in out.notes)


async def test_an_object_that_cannot_be_read_in_full_is_not_checked() -> None:
    tools = FakeTools([workload("Deployment", "web"), workload("Deployment", "api",
                                                                spec=pod_spec(container("api", "api:latest")))],
                      broken=("web",))
    inv, reads = await gather(tools)
    assert [(n.kind, n.name, n.rule) for n in reads.not_checked] == [("Deployment", "web", "")]
    assert "could not be read in full" in reads.not_checked[0].reason
    out = run_rules(inv)
    assert {f.name for f in out.findings} == {"api"}


async def test_volume_usage_from_a_prometheus_tool_feeds_the_pvc_rule() -> None:
    sample = {"metric": {"namespace": NS, "persistentvolumeclaim": "data"}, "value": [1764493200, "0.93"]}
    odd = {"metric": {"namespace": NS}, "value": [1, "x"]}
    tools = FakeTools([pvc()], prometheus=[sample, odd])
    inv, _ = await gather(tools)
    assert inv.pvc_usage == {(NS, "data"): 0.93}
    assert ("execute_query", {"query": "kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes"}) in tools.calls
    (f,) = [f for f in run_rules(inv).findings if f.rule == "pvc_near_full"]
    assert f.severity == "high" and f.name == "data"
