"""The whole stack with the LLM loop on: every process as `make run` starts it, with
SLEUTH_LLM_* pointing at the fake model server (no real model). A question is answered through
the loop, with progress, and nothing of another tenant or any secret value ever reaches the
model; with the model failing, the deterministic answer still arrives and says so."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from sleuth.embedded.stack import Stack, StackPorts, StackSpec
from sleuth_common.scope import DATA_OPEN
from tests.fakes.model_server import FakeModelServer, call, cite_everything, fail
from tests.snapshot_names import tenant_names

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeModelServer]:
    with FakeModelServer(model="fake-sonnet") as server:
        yield server


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, demo_snapshot: Path, fake: FakeModelServer
) -> Iterator[Stack]:
    spec = StackSpec(
        snapshot=demo_snapshot,
        state_dir=tmp_path_factory.mktemp("llm-stack"),
        ports=StackPorts.free(),
        extra_env={
            "SLEUTH_LLM_BASE_URL": fake.url,
            "SLEUTH_LLM_API_KEY": "sk-e2e-fake-key",
            "SLEUTH_LLM_MODEL": "fake-sonnet",
        },
        extra_config={
            "agent": {"llm": {"retries": 1, "backoff": 0.01, "timeout": 10}},
            "gateway": {"answer_timeout": 45.0, "rate_limit_capacity": 1000},
        },
    )
    with Stack(spec) as s:
        yield s


def secret_values(snapshot: Path) -> set[str]:
    """Every Secret data value in the snapshot, encoded and decoded."""
    values: set[str] = set()
    for f in (snapshot / "cluster").glob("*.yaml"):
        for doc in yaml.safe_load_all(f.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "Secret":
                for v in (doc.get("data") or {}).values():
                    values.add(str(v))
                    values.add(base64.b64decode(str(v)).decode("utf-8", "replace"))
    return {v for v in values if len(v) >= 10}  # ("checkout", a username, is also a workload name)


def ask_streaming(stack: Stack, user: str, question: str) -> tuple[list[dict], dict]:
    progress: list[dict] = []
    result: dict = {}
    with httpx.stream(
        "POST",
        f"{stack.gateway_url}/v1/query?stream=1",
        json={"query": question},
        headers={"Authorization": f"Bearer {stack.token(user)}"},
        timeout=60,
    ) as r:
        assert r.status_code == 200
        event = ""
        for line in r.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:])
                if event == "progress":
                    progress.append(data)
                elif event in ("result", "error"):
                    result = {"event": event, **data}
    return progress, result


def test_alice_is_answered_through_the_loop_and_nothing_foreign_reaches_the_model(
    stack: Stack, fake: FakeModelServer, demo_snapshot: Path
) -> None:
    fake.add(
        call(
            ("list_pods", {"namespace": "team-a"}),
            ("list_events", {"namespace": "team-a"}),
            ("get_resource", {"namespace": "team-a", "kind": "Secret", "name": "checkout-api-db"}),
            ("list_events", {}),
        ),
        cite_everything("checkout-api is OOM-killed at its 256Mi limit"),
    )
    progress, result = ask_streaming(stack, "alice", "what is failing in team-a?")
    assert result["event"] == "result", result
    answer = result["answer"]
    assert "checkout-api is OOM-killed at its 256Mi limit" in answer
    assert "Investigated with an AI model (fake-sonnet)" in answer
    assert result["result"]["root_cause"]["family"] in {"oom_killed", "crash_loop_app_error"}
    ids = [e["id"] for e in result["result"]["evidence"]]
    assert len(ids) == len(set(ids)) and all(i in answer for i in ids)
    stages = [p["stage"] for p in progress]
    assert "llm" in stages and any(
        p["stage"] == "tool_calls" and "demo: kubectl" in p["message"] for p in progress
    )

    assert len(fake.requests) >= 2
    assert all(r.headers.get("authorization") == "Bearer sk-e2e-fake-key" for r in fake.requests)
    bodies = fake.bodies()
    assert DATA_OPEN in bodies, "tool results reached the model, inside data markers"
    foreign = tenant_names(demo_snapshot, "team-b") | {"team-b", "kube-system", "monitoring"}
    leaked = sorted(n for n in foreign if n in bodies)
    assert not leaked, f"reached the model: {leaked}"
    secrets = sorted(v for v in secret_values(demo_snapshot) if v in bodies)
    assert not secrets, "secret values reached the model"

    metrics = httpx.get(f"http://127.0.0.1:{stack.spec.ports.agent_metrics}/metrics").text
    assert 'sleuth_llm_requests_total{outcome="ok"}' in metrics
    assert 'sleuth_llm_turns_total{outcome="answered"}' in metrics


def test_with_the_model_failing_the_deterministic_answer_arrives_and_says_so(
    stack: Stack, fake: FakeModelServer
) -> None:
    fake.add(fail(503), fail(503))
    _, result = ask_streaming(stack, "alice", "why is checkout-api crashing?")
    assert result["event"] == "result", result
    assert result["result"]["status"] == "diagnosed"
    assert "E01" in result["answer"]
    assert "The AI model was unavailable (it answered HTTP 503)" in result["answer"]


def test_nothing_of_team_a_reaches_bobs_model(
    stack: Stack, fake: FakeModelServer, demo_snapshot: Path
) -> None:
    start = len(fake.requests)
    fake.add(
        call(("list_pods", {"namespace": "team-b"}), ("list_events", {})), cite_everything("bob's answer")
    )
    _, result = ask_streaming(stack, "bob", "what is failing in team-b?")
    assert "bob's answer" in result["answer"]
    bodies = "\n".join(r.raw for r in fake.requests[start:])
    leaked = sorted(n for n in tenant_names(demo_snapshot, "team-a") | {"team-a"} if n in bodies)
    assert not leaked, f"reached bob's model: {leaked}"


def test_a_model_trying_traversal_and_cluster_scoped_reads_gets_nothing_foreign(
    stack: Stack, fake: FakeModelServer, demo_snapshot: Path
) -> None:
    """The model (as a prompt-injected attacker would) steers alice's reads at team-b through
    name arguments, and at cluster-scoped kinds; kube-mcp refuses the names, reads as alice
    (the API server refuses the rest), and the filter withholds what it cannot prove."""
    start = len(fake.requests)
    pod = sorted((demo_snapshot / "logs" / "team-b").iterdir())[0].name
    fake.add(
        call(
            ("pod_logs", {"namespace": "team-a", "name": f"../../team-b/pods/{pod}"}),
            ("get_pod", {"namespace": "team-a", "name": f"..%2F..%2Fteam-b%2Fpods%2F{pod}"}),
            ("get_resource", {"namespace": "team-a", "kind": "Secret", "name": "../../team-b/secrets/x"}),
            ("get_resource", {"kind": "Namespace", "name": "team-b"}),
            ("get_resource", {"kind": "ClusterRoleBinding", "name": "cluster-admin"}),
            ("list_storage", {}),
            ("list_resources", {"namespace": "team-a", "kind": "rolebindings"}),
            ("list_events", {"namespace": "team-a", "involved_object_name": "x,involvedObject.namespace=team-b"}),
        ),
        cite_everything("nothing of team-b here"),
    )
    _, result = ask_streaming(stack, "alice", "what is failing in team-a?")
    assert result["event"] == "result", result
    # What Sleuth sent the model besides the model's own words (its tool calls echo the names
    # it typed, which it already knows): the system prompt and every tool result.
    sent = "\n".join(
        json.dumps(block.get("content"))
        for r in fake.requests[start:]
        for m in r.messages
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )
    assert sent.count("tool_use_id") == 0 and len(sent) > 200, "the tool results were recorded"
    assert "is not a valid Kubernetes name" in sent or "must be a DNS-1123" in sent
    refused_names = {f"../../team-b/pods/{pod}", f"..%2F..%2Fteam-b%2Fpods%2F{pod}", "../../team-b/secrets/x"}
    for name in refused_names:  # the refusal may quote what the model typed; strip that first
        sent = sent.replace(json.dumps(name)[1:-1], "").replace(repr(name)[1:-1], "")
    # "team-b" itself the model typed (the API's 403 quotes it back, as kubectl would show alice);
    # nothing that exists there may come back.
    foreign = tenant_names(demo_snapshot, "team-b") | {"kube-system", "monitoring"}
    leaked = sorted(n for n in foreign if n in sent)
    assert not leaked, f"reached alice's model: {leaked}: " + "; ".join(
        sent[max(0, sent.find(n) - 150): sent.find(n) + 80] for n in leaked)
