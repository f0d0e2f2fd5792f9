"""The investigator end to end over the demo snapshot (tools answered from the snapshot files,
the real scope filter applied): diagnoses, access answers, no leaks."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from sleuth_agent.rca import investigate
from sleuth_agent.settings import Settings
from sleuth_common.config import ClusterSettings
from sleuth_common.messages import ClusterScope, InvestigationJob, Requester, ScopeReply

_spec = importlib.util.spec_from_file_location(
    "agent_snapshot_tools", Path(__file__).parent / "snapshot_tools.py"
)
assert _spec and _spec.loader
snapshot_tools = importlib.util.module_from_spec(_spec)
sys.modules["agent_snapshot_tools"] = snapshot_tools
_spec.loader.exec_module(snapshot_tools)

SETTINGS = Settings(clusters=[ClusterSettings(name="demo", aliases=["dev"])])
SCOPES = {
    "alice": ScopeReply(user="alice", clusters={"demo": ClusterScope(namespaces=("team-a",))}),
    "bob": ScopeReply(user="bob", clusters={"demo": ClusterScope(namespaces=("team-b",))}),
    "carol": ScopeReply(
        user="carol",
        clusters={
            "demo": ClusterScope(namespaces=("default", "kube-system", "team-a", "team-b"), cluster_wide=True)
        },
    ),
    "carol-no-list": ScopeReply(user="carol", clusters={"demo": ClusterScope(cluster_wide=True)}),
    "nobody": ScopeReply(user="nobody"),
}


def team_names(snapshot: Path, namespace: str) -> set[str]:
    names = set()
    for o in snapshot_tools.load_objects(snapshot):
        if o["metadata"].get("namespace") == namespace and o["kind"] not in ("Event", "ServiceAccount"):
            names.add(o["metadata"]["name"])
    names.discard("default")
    return names


async def ask(snapshot: Path, user: str, question: str, **kw):
    job = InvestigationJob(requester=Requester(user=user), question=question)
    return await investigate(
        job, SCOPES[user], SETTINGS, tools_factory=snapshot_tools.factory(snapshot, **kw)
    )


async def test_alice_team_a_is_diagnosed_without_leaks(demo_snapshot: Path) -> None:
    result = await ask(demo_snapshot, "alice", "what is failing in team-a?")
    assert result.status == "diagnosed"
    assert result.root_cause is not None
    families = {result.root_cause.family, *(c.family for c in result.candidates)}
    assert {"oom_killed", "crash_loop_app_error"} <= families
    assert result.root_cause.resource == "Deployment/team-a/checkout-api"
    dumped = json.dumps(result.model_dump(mode="json"))
    for name in team_names(demo_snapshot, "team-b") | {"team-b"}:
        assert name not in dumped, name
    assert any("--limits=memory=512Mi" in a.command for a in result.actions)
    assert any("--previous" in e.command for e in result.evidence)
    assert any(
        e.command.startswith("kubectl get pod checkout-api-") and e.command.endswith("-n team-a -o yaml")
        for e in result.evidence
    )
    assert "E01" in result.answer_markdown and "**Actions**" in result.answer_markdown


async def test_alice_asking_about_team_b_workload_gets_access_answer(demo_snapshot: Path) -> None:
    for question in ("why is billing-api failing?", "why is inventory-db down in team-b?"):
        result = await ask(demo_snapshot, "alice", question)
        assert result.status == "denied", question
        dumped = json.dumps(result.model_dump(mode="json", exclude={"answer_markdown"}))
        for name in team_names(demo_snapshot, "team-b"):
            assert name not in dumped
            if name not in question:
                assert name not in result.answer_markdown


async def test_namespace_named_in_question_is_echoed_only_then(demo_snapshot: Path) -> None:
    result = await ask(demo_snapshot, "alice", "what is failing in namespace team-b?")
    assert result.status == "denied"
    assert "do not have access to namespace team-b" in result.answer_markdown


@pytest.mark.parametrize(
    ("question", "family", "resource"),
    [
        ("why is inventory-db not starting?", "image_pull", "StatefulSet/team-b/inventory-db"),
        # the fix belongs in the ConfigMap the pods reference (billing-api is the affected workload)
        ("what is wrong with billing-api", "missing_config", "ConfigMap/team-b/billing-config"),
        ("why is search-indexer pending", "unschedulable_resources", "Deployment/team-b/search-indexer"),
    ],
)
async def test_bob_team_b_families(demo_snapshot: Path, question: str, family: str, resource: str) -> None:
    result = await ask(demo_snapshot, "bob", question)
    assert result.status == "diagnosed"
    assert result.root_cause.family == family
    assert result.root_cause.resource == resource
    assert "checkout" not in json.dumps(result.model_dump(mode="json"))


async def test_named_workload_and_healthy(demo_snapshot: Path) -> None:
    result = await ask(demo_snapshot, "alice", "why is checkout crashing?")
    assert result.root_cause.family == "oom_killed"
    assert not result.candidates
    result = await ask(demo_snapshot, "alice", "is frontend ok?")
    assert result.status == "healthy"


async def test_carol_sees_both_tenants(demo_snapshot: Path) -> None:
    result = await ask(demo_snapshot, "carol", "why is billing-api failing?")
    assert result.root_cause.family == "missing_config"
    for who in ("carol", "carol-no-list"):
        result = await ask(demo_snapshot, who, "what is failing in team-a?")
        assert result.root_cause.resource == "Deployment/team-a/checkout-api"
    result = await ask(demo_snapshot, "carol", "what is failing?")
    assert {"ConfigMap/team-b/billing-config", "Deployment/team-a/checkout-api"} <= {
        result.root_cause.resource,
        *(c.resource for c in result.candidates),
    }


async def test_no_scope_and_broken_sources(demo_snapshot: Path) -> None:
    result = await ask(demo_snapshot, "nobody", "what is failing?")
    assert result.status == "denied"
    result = await ask(demo_snapshot, "alice", "what is failing in team-a?", broken={"pod_logs"})
    assert result.status == "diagnosed"
    assert result.unavailable and all("pod_logs" not in u or "kubectl logs" in u for u in result.unavailable)
