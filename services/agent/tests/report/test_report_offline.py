"""The report end to end, offline: simcluster and kube-mcp in-process over the demo snapshot, every
read as the asker through the scope filter (the same path as ``sleuth investigate``). alice sees
team-a only and nothing of team-b reaches her report; bob the reverse; carol every namespace. A
user who may not list some kinds gets a report with notes, not an error; a rule that raises on one
object leaves that object "not checked" and the rest of the report arrives."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from sleuth.cli import main
from sleuth.commands.report import report_offline
from sleuth.scenarios import OfflineCluster, offline_cluster
from sleuth_agent.report import RULES, Hit, Inventory, K8sObject, Rule, load_rules
from sleuth_agent.report._render import TOP
from sleuth_common.messages import ReportResult
from tests.snapshot_names import tenant_names

DEMO = Path(__file__).resolve().parents[4] / "scenarios" / "demo"

ALICE_EXPECTED = {
    ("rollout_stuck", "checkout-api"), ("rollout_stuck", "payments-worker"),
    ("no_spread", "checkout-api"), ("no_spread", "frontend"),
    ("probes_missing", "frontend"), ("probes_missing", "payments-worker"),
    ("single_replica_no_pdb", "payments-worker"),
    ("limits_far_above_requests", "frontend"), ("limits_far_above_requests", "payments-worker"),
    ("root_or_privileged", "checkout-api"), ("root_or_privileged", "frontend"),
    ("root_or_privileged", "payments-worker"), ("root_or_privileged", "reports-cron"),
}


@pytest.fixture(scope="module")
def demo() -> Iterator[OfflineCluster]:
    with offline_cluster(DEMO) as oc:
        yield oc


@pytest.fixture(scope="module")
def reports(demo: OfflineCluster) -> dict[str, ReportResult]:
    async def all_three() -> dict[str, ReportResult]:
        return {u: await report_offline(demo, u) for u in ("alice", "bob", "carol")}

    return asyncio.run(all_three())


def dumped(result: ReportResult) -> str:
    return json.dumps(result.model_dump(mode="json")).lower()


def test_alice_gets_team_a_findings_with_fixes_and_nothing_of_team_b(reports: dict[str, ReportResult]) -> None:
    r = reports["alice"]
    assert r.status == "ok" and r.user == "alice" and r.namespaces == {"demo": ("team-a",)}
    assert {(f.rule, f.name) for f in r.findings} == ALICE_EXPECTED
    assert all(f.namespace == "team-a" and f.cluster == "demo" for f in r.findings)
    assert r.counts == {"critical": 0, "high": 2, "medium": 5, "low": 6}
    by = {(f.rule, f.name): f for f in r.findings}
    assert "--selector=app.kubernetes.io/name=payments-worker" in by[("single_replica_no_pdb", "payments-worker")].fix
    assert by[("limits_far_above_requests", "frontend")].fix.endswith("-c frontend --requests=cpu=125m")
    assert "revision 14" in by[("rollout_stuck", "checkout-api")].why
    # the CronJob forbids overlapping runs, its one Job was read: no overlap finding
    assert ("cronjob_overlap", "reports-cron") not in by
    text = dumped(r) + r.answer_markdown.lower()
    for name in tenant_names(DEMO, "team-b") | {"team-b"}:
        assert name.lower() not in text, name


def test_bob_gets_team_b_only(reports: dict[str, ReportResult]) -> None:
    r = reports["bob"]
    assert r.namespaces == {"demo": ("team-b",)}
    found = {(f.rule, f.name) for f in r.findings}
    assert {("rollout_stuck", "billing-api"), ("rollout_stuck", "search-indexer"),
            ("single_replica_no_pdb", "inventory-db"), ("no_spread", "ledger")} <= found
    text = dumped(r) + r.answer_markdown.lower()
    for name in tenant_names(DEMO, "team-a") | {"team-a"}:
        assert name.lower() not in text, name


def test_carol_covers_every_namespace(reports: dict[str, ReportResult]) -> None:
    r = reports["carol"]
    every = sorted(d["metadata"]["name"] for d in yaml.safe_load_all((DEMO / "cluster" / "00-namespaces.yaml").read_text())
                   if d and d.get("kind") == "Namespace")
    assert list(r.namespaces["demo"]) == every
    assert {"team-a", "team-b", "kube-system", "monitoring"} <= {f.namespace for f in r.findings}
    assert ("resources_missing", "kube-proxy") in {(f.rule, f.name) for f in r.findings}
    alice = {(f.rule, f.name) for f in reports["alice"].findings}
    assert alice <= {(f.rule, f.name) for f in r.findings if f.namespace == "team-a"}


def test_every_report_says_what_it_could_not_check_and_lists_fixes(reports: dict[str, ReportResult]) -> None:
    for r in reports.values():
        assert r.not_checked == ()
        assert any("pvc_near_full" in n and "no Prometheus tool" in n for n in r.notes)
        assert r.rules == tuple(load_rules())
        md = r.answer_markdown
        assert md.startswith(f"**Best-practice report** for {r.user}")
        assert "**Top findings**" in md and "```yaml" in md
        for f in r.findings[:TOP]:  # every fix shown is in a code span or block, as written
            first = f.fix.splitlines()[0]
            assert f"`{first}`" in md if "\n" not in f.fix else f"    {first}\n" in md
        assert r.counts and sum(r.counts.values()) == len(r.findings)
        assert all(f.why.endswith(".") and f.fix for f in r.findings)


def boom(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    if obj.name == "frontend":
        raise TypeError("odd object")
    return iter(())


def test_a_rule_crashing_on_one_object_leaves_it_not_checked(demo: OfflineCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    load_rules()
    monkeypatch.setitem(RULES, "explodes", Rule("explodes", "Explodes", "low", ("Deployment",), boom, module=__name__))
    r = asyncio.run(report_offline(demo, "alice"))
    assert r.status == "ok"
    assert [(n.rule, n.name, n.reason) for n in r.not_checked] == [("explodes", "frontend", "TypeError: odd object")]
    assert {(f.rule, f.name) for f in r.findings} == ALICE_EXPECTED
    assert "**Not checked** (1)" in r.answer_markdown


def test_the_cli_prints_markdown_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--snapshot", str(DEMO), "--as", "alice", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["user"] == "alice" and len(body["findings"]) == len(ALICE_EXPECTED)
    assert main(["report", "--snapshot", str(DEMO), "--as", "mallory"]) == 2
    assert "no user 'mallory'" in capsys.readouterr().err


# -- a user who may list only some kinds ---------------------------------------------------------
TINY = """
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: narrow, namespace: shop}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
- {apiGroups: [apps], resources: [deployments, statefulsets, daemonsets, replicasets], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: narrow, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: narrow}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: dev}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart, namespace: shop, creationTimestamp: "2026-11-01T00:00:00Z"}
spec:
  replicas: 1
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers: [{name: cart, image: "shop/cart:latest"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ledger-sync, namespace: other, creationTimestamp: "2026-11-01T00:00:00Z"}
spec:
  replicas: 1
  selector: {matchLabels: {app: ledger-sync}}
  template:
    metadata: {labels: {app: ledger-sync}}
    spec:
      containers: [{name: ledger-sync, image: "other/ledger-sync"}]
"""


def test_kinds_the_user_may_not_list_are_notes_not_errors(tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "all.yaml").write_text(TINY)
    (tmp_path / "snapshot.yaml").write_text(
        'name: tiny\ncluster: {name: tiny}\nnow: "2026-11-30T09:00:00Z"\nusers:\n  dana: {groups: [dev]}\n')
    with offline_cluster(tmp_path) as oc:
        r = asyncio.run(report_offline(oc, "dana"))
    assert r.status == "ok" and r.namespaces == {"tiny": ("shop",)}
    assert {(f.rule, f.name) for f in r.findings} == {
        ("image_tag_mutable", "cart"), ("probes_missing", "cart"), ("resources_missing", "cart"),
        ("root_or_privileged", "cart")}
    for kind in ("PodDisruptionBudgets", "HorizontalPodAutoscalers", "PersistentVolumeClaims", "CronJobs", "Jobs"):
        assert any(n.startswith(f"{kind} could not be listed in shop on tiny (your access does not allow it)")
                   for n in r.notes), kind
    assert any("single_replica_no_pdb" in n and "skipped in shop" in n for n in r.notes)
    assert "ledger-sync" not in dumped(r) and "other/" not in dumped(r)
