"""The real third-party Kubernetes MCP server (npm ``kubernetes-mcp-server`` 0.0.67, run with
``--read-only --toolsets core --list-output yaml``) against SimCluster serving scenarios/demo,
with the cluster-wide ``sleuth-reader`` kubeconfig: alice, through the scoped tools, never sees
team-b — not through YAML lists, events text, logs, errors or the tool list.

The server narrows an omitted namespace to its kubeconfig's (or reads all of them), so a call
without one fans out over alice's namespaces; ``make test-tools`` installs the server.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from sleuth.embedded import free_port, wait_for_port
from sleuth_common.audit import tool_call_event
from sleuth_common.config import ClusterSettings, McpServerSettings
from sleuth_common.mcp import ClusterTools, ToolAuditEvent, ToolResult
from sleuth_common.scope import Scope
from tests.snapshot_names import tenant_names

pytestmark = pytest.mark.connected

REPO = Path(__file__).resolve().parents[1]
BINARY = REPO / "tools" / "npm" / "node_modules" / ".bin" / "kubernetes-mcp-server"


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is missing: run `make test-tools` (npm install of kubernetes-mcp-server 0.0.67)")
    from sleuth_simcluster import SimCluster

    state = tmp_path_factory.mktemp("sim")
    with SimCluster(REPO / "scenarios" / "demo", state, host="127.0.0.1", port=0) as sim:
        port = free_port()
        proc = subprocess.Popen(
            [str(BINARY), "--read-only", "--toolsets", "core", "--list-output", "yaml",
             "--port", str(port), "--bind-address", "127.0.0.1",
             "--kubeconfig", str(sim.kubeconfig("sleuth-reader"))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port("127.0.0.1", port, 30, proc)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@pytest.fixture
async def alice(server_url: str) -> AsyncIterator[tuple[ClusterTools, list[ToolAuditEvent]]]:
    cluster = ClusterSettings(name="demo", mcp_servers=[McpServerSettings(name="k8s", url=server_url, timeout=20)])
    events: list[ToolAuditEvent] = []
    async with ClusterTools(cluster, Scope.of(["team-a"]), user="alice", on_audit=events.append,
                            connect_timeout=20) as tools:
        assert not tools.unavailable
        yield tools, events


def _shown(r: ToolResult) -> str:
    return "\n".join([r.for_model(), r.text, r.error, json.dumps(r.data, default=str)])


def _assert_no_team_b(text: str) -> None:
    for name in tenant_names(REPO / "scenarios" / "demo", "team-b") | {"team-b"}:
        assert name not in text, name


CALLS: list[tuple[str, dict[str, object], str]] = [
    ("pods_list", {}, "ok"),  # every namespace, YAML: filtered record by record
    ("events_list", {}, "ok"),  # YAML text behind a comment line; fans out
    ("namespaces_list", {}, "ok"),
    ("resources_list", {"apiVersion": "v1", "kind": "Service"}, "ok"),
    ("resources_list", {"apiVersion": "apps/v1", "kind": "Deployment"}, "ok"),
    ("pods_list_in_namespace", {"namespace": "team-b"}, "denied"),
    ("events_list", {"namespace": "team-b"}, "denied"),
    ("pods_get", {"name": "billing-api-84f7c9d6b5-r9t2w"}, "error"),  # asked in team-a only: not found
    ("pods_log", {"name": "checkout-api-7d9f8c6b5d-q8m7n", "namespace": "team-b"}, "denied"),
    ("nodes_top", {}, "denied"),
    ("pods_get", {}, "denied"),  # the schema requires a name
]


async def test_alice_never_sees_team_b(alice: tuple[ClusterTools, list[ToolAuditEvent]]) -> None:
    tools, events = alice
    names = {t.name for t in tools.tools}
    assert {"pods_list", "events_list", "pods_log", "resources_list"} <= names
    assert not {"nodes_top", "nodes_log", "nodes_stats_summary"} & names
    _assert_no_team_b(json.dumps([t.description for t in tools.tools]))
    for tool, args, status in CALLS:
        r = await tools.call(tool, args)
        assert r.status == status, (tool, args, r.status, r.error)
        shown = _shown(r)
        for typed in args.values():  # a refusal or error may echo what alice typed, nothing more
            shown = shown.replace(str(typed), "")
        _assert_no_team_b(shown)
    assert len(events) == len(CALLS)
    assert {e.outcome for e in events} >= {"filtered", "denied"}
    # The audit trail's events of these calls (results full of team-b, arguments naming it): counts
    # and codes, none of those names, not even the ones alice typed.
    published = [tool_call_event(e, job_id="j1", entry="api") for e in events]
    assert {e.decision for e in published} >= {"filtered", "refused"}
    assert any(e.counts["removed"] for e in published)
    _assert_no_team_b("\n".join(e.model_dump_json() for e in published))


async def test_yaml_lists_keep_alices_records(alice: tuple[ClusterTools, list[ToolAuditEvent]]) -> None:
    tools, _ = alice
    pods = await tools.call("pods_list", {})
    assert pods.status == "ok" and pods.removed > 0
    assert {p["metadata"]["namespace"] for p in pods.data} == {"team-a"}
    assert any(p["metadata"]["name"].startswith("checkout-api-") for p in pods.data)
    events = await tools.call("events_list", {})
    assert events.ok and events.calls == 1 and events.data
    assert {e["Namespace"] for e in events.data} == {"team-a"}
    namespaces = await tools.call("namespaces_list", {})
    assert [n["metadata"]["name"] for n in namespaces.data] == ["team-a"]


async def test_logs_fan_out_over_alices_namespaces(alice: tuple[ClusterTools, list[ToolAuditEvent]]) -> None:
    tools, _ = alice
    r = await tools.call("pods_log", {"name": "checkout-api-7d9f8c6b5d-q8m7n", "previous": True})
    assert r.status == "ok" and isinstance(r.data, str) and r.data.strip()
    assert r.args == {"name": "checkout-api-7d9f8c6b5d-q8m7n", "previous": True}
    _assert_no_team_b(_shown(r))
