"""Tool call metrics as an operator reads them: failures sorted into a few kinds, durations per
cluster/server/tool, truncations, connections — with labels that never carry a caller's
namespace, an object's name or a server's words."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from prometheus_client import generate_latest

from sleuth_agent.metrics import Metrics, ToolMetrics
from sleuth_common.mcp import (
    TOOL_ERROR_KINDS,
    ToolResult,
    current_tool_observer,
    error_kind,
    use_tool_observer,
)


@dataclass(frozen=True)
class Case:
    result: ToolResult
    kind: str | None


def _server(body: str) -> ToolResult:
    return ToolResult("get_pod", "error", error=body, reason="server_error", server_error=True)


CASES = [
    Case(ToolResult("get_pod", "ok"), None),
    Case(ToolResult("get_pod", "withheld", reason="unpinned_text"), None),
    Case(ToolResult("get_pod", "denied", reason="namespace_out_of_scope"), None),
    Case(ToolResult("get_pod", "denied", reason="invalid_arguments"), "bad_args"),
    Case(ToolResult("nope", "error", reason="unknown_tool"), "bad_args"),
    Case(ToolResult("get_pod", "error", error="unavailable: kube did not answer get_pod within 5s",
                    reason="unavailable"), "timeout"),
    Case(ToolResult("get_pod", "error", error="unavailable: kube: ConnectError: [Errno 111] refused",
                    reason="unavailable"), "unreachable"),
    Case(ToolResult("get_pod", "error", error="unavailable: kube: HTTPStatusError: Client error '401 Unauthorized'",
                    reason="unavailable"), "auth"),
    Case(ToolResult("get_pod", "error", error="unavailable: kube reads as the caller and needs a signed identity; "
                    "no signing key is configured", reason="unavailable"), "auth"),
    Case(_server('{"error":"pods \\"db-0\\" not found","code":404,"reason":"NotFound","command":"kubectl"}'), "not_found"),
    Case(_server('{"error":"forbidden: User \\"alice\\" cannot get pods","code":403,"reason":"Forbidden"}'), "auth"),
    Case(_server('{"error":"unavailable: connection refused","code":0,"reason":"Unavailable"}'), "unreachable"),
    Case(_server('{"error":"bad selector","code":400,"reason":"BadRequest"}'), "bad_args"),
    Case(_server('{"error":"etcdserver: request timed out","code":504}'), "timeout"),
    Case(_server('{"error":"' + "x" * 600 + '…'), "server_error"),  # cut before its code
    Case(_server('{"error":"' + "x" * 100 + '","code":500'), "server_error"),
    Case(_server("plain text from another server"), "server_error"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.result.status}-{c.result.reason}-{c.kind}")
def test_error_kind(case: Case) -> None:
    assert error_kind(case.result) == case.kind
    assert case.kind is None or case.kind in TOOL_ERROR_KINDS


def _sample(m: Metrics, name: str, **labels: str) -> float:
    value = m.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_calls_are_counted_with_bounded_labels_only() -> None:
    m = Metrics()
    obs = ToolMetrics(m)
    secret_ns, secret_pod = "team-secret-42", "payroll-db-0"
    failed = ToolResult("get_pod", "error", cluster="prod-1", server="kube", duration_ms=250.0,
                        error=f'{{"error":"pods \\"{secret_pod}\\" not found in {secret_ns}","code":404}}',
                        reason="server_error", server_error=True, args={"namespace": secret_ns, "name": secret_pod})
    obs.called(failed, listed=True)
    obs.called(ToolResult("made_up_tool_" + secret_pod, "error", cluster="prod-1", server="kube", reason="unknown_tool"),
               listed=False)
    obs.called(ToolResult("pod_logs", "ok", cluster="prod-1", server="kube", cut=1200, duration_ms=40.0), listed=True)
    obs.connected("prod-2", "kube", "unreachable")
    obs.connected("prod-1", "kube", None)

    assert _sample(m, "sleuth_tool_errors_total", cluster="prod-1", reason="not_found") == 1
    assert _sample(m, "sleuth_tool_errors_total", cluster="prod-1", reason="bad_args") == 1
    assert _sample(m, "sleuth_tool_call_seconds_count", cluster="prod-1", server="kube", tool="get_pod") == 1
    assert _sample(m, "sleuth_tool_call_seconds_sum", cluster="prod-1", server="kube", tool="get_pod") == 0.25
    assert _sample(m, "sleuth_tool_call_seconds_count", cluster="prod-1", server="kube", tool="unlisted") == 1
    assert _sample(m, "sleuth_tool_results_truncated_total", cluster="prod-1", server="kube") == 1
    assert _sample(m, "sleuth_mcp_connects_total", cluster="prod-2", server="kube", outcome="unreachable") == 1
    assert _sample(m, "sleuth_mcp_connects_total", cluster="prod-1", server="kube", outcome="ok") == 1
    text = generate_latest(m.registry).decode()
    assert secret_ns not in text and secret_pod not in text


def test_the_observer_is_set_per_context_and_a_failing_one_never_breaks_a_call() -> None:
    from sleuth_common.mcp._observe import observe_call

    class Broken:
        def called(self, result: ToolResult, *, listed: bool) -> None:
            raise RuntimeError("metrics backend gone")

        def connected(self, cluster: str, server: str, error: object) -> None:
            raise RuntimeError("metrics backend gone")

    assert current_tool_observer() is None
    with use_tool_observer(Broken()):
        observe_call(ToolResult("get_pod", "ok"), listed=True)  # logged, not raised
    assert current_tool_observer() is None
