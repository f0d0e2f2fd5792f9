"""A name that matches two workloads resolves to nothing (DESIGN §3): "the exporter" when a
namespace runs two exporters is a question about one of them, and the answer names both instead
of widening to the namespace."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._cluster import analyse_cluster
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._plan import parse_question
from sleuth_agent.rca._report import build_result
from sleuth_agent.settings import AgentSettings
from sleuth_common.scope import Scope

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
rca_fakes = importlib.util.module_from_spec(_spec)
sys.modules["agent_rca_fakes"] = rca_fakes
_spec.loader.exec_module(rca_fakes)


def _pod(name: str, owner: str) -> dict:
    return {"namespace": "metrics", "name": name, "phase": "Running", "owner": {"kind": "ReplicaSet", "name": f"{owner}-6b7c8d9f5"},
            "containers": [{"name": "main", "image": "r/x:1", "ready": True, "state": {"running": {}}}]}


TOOLS = {
    ("list_pods", "metrics"): {"pods": [_pod("billing-exporter-6b7c8d9f5-aaaaa", "billing-exporter"),
                                        _pod("usage-exporter-6b7c8d9f5-bbbbb", "usage-exporter"),
                                        _pod("dashboard-6b7c8d9f5-ccccc", "dashboard")]},
    ("list_workloads", "metrics"): {"workloads": []},
    ("list_events", "metrics"): {"events": []},
    ("list_services", "metrics"): {"services": []},
}


def test_words_after_a_determiner_are_references_to_one_object() -> None:
    t = parse_question("is the exporter in metrics broken since our deploy?")
    assert "exporter" in t.referenced and "deploy" in t.referenced
    assert "metrics" not in parse_question("what is wrong in the metrics namespace").referenced


async def _answer(question: str):
    log = EvidenceLog()
    out = await analyse_cluster(
        rca_fakes.FakeTools(TOOLS), Scope.of(namespaces=["metrics"]), "c1", parse_question(question), AgentSettings(), log
    )
    return build_result([out], log, scope_text="metrics")


async def test_the_exporter_matching_two_workloads_is_ambiguous_and_names_both() -> None:
    r = await _answer("the exporter in metrics has been flaky, what is wrong with it?")
    assert r.status == "insufficient_evidence"
    assert "billing-exporter" in r.answer_markdown and "usage-exporter" in r.answer_markdown
    assert "dashboard" not in r.answer_markdown


async def test_a_namespace_question_without_a_meant_object_still_looks_at_everything() -> None:
    r = await _answer("is anything wrong in metrics since the exporter rollout?")
    assert r.status == "healthy"
