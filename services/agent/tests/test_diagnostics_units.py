"""The pieces of the agent's ``diagnostics`` answer that need no process: short reasons without
credentials, and the LLM report of a client with and without a backup (the real clients)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sleuth_agent.diagnostics import _reason, llm_report, shown_url
from sleuth_agent.llm import LlmInvestigator
from sleuth_agent.metrics import Metrics, MetricsObserver
from sleuth_agent.settings import Settings
from sleuth_common.config import McpServerSettings
from sleuth_common.llm import LlmSettings, build_client

URL = "https://probe:Pa55word@mcp.example:8443/mcp?token=T0ken123&x=1"


@dataclass(frozen=True)
class Case:
    error: str
    shown: str


CASES = [
    Case("unavailable: kube: ConnectError: All connection attempts failed", "cannot connect"),
    Case("unavailable: kube did not answer within 2s", "kube did not answer within 2s"),
    Case(f"unavailable: kube: HTTPStatusError: Server error '502 Bad Gateway' for url '{URL}'\n"
         "For more information check: https://developer.mozilla.org/",
         "HTTPStatusError: Server error '502 Bad Gateway' for url 'https://mcp.example:8443/mcp'"),
    Case("unavailable: kube: RuntimeError: token T0ken123 and Pa55word refused for probe",
         "RuntimeError: token *** and *** refused for probe"),
    Case("unavailable: kube: " + "x" * 400, "x" * 159 + "…"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.shown[:30])
def test_a_reason_is_short_and_names_no_credential(case: Case) -> None:
    assert _reason(case.error, McpServerSettings(name="kube", url=URL)) == case.shown


def test_urls_are_shown_without_user_password_or_query() -> None:
    assert shown_url(URL) == "https://mcp.example:8443/mcp"


def _llm(**fallback: object) -> LlmInvestigator:
    metrics = Metrics()
    primary = LlmSettings(base_url="https://u:pw@llm.example/v1?key=k", model="m1", api_key_env="NOPE")
    backup = LlmSettings(provider="openai", base_url="http://ollama:11434/v1", model="m2") if fallback else None
    client = build_client(primary, fallback=backup, observer=MetricsObserver(metrics), failure_threshold=2)
    return LlmInvestigator(Settings(), client, metrics, None)


def test_no_model_no_backup_and_a_backup_with_its_circuit() -> None:
    assert llm_report(None, Metrics()).primary is None

    single = _llm()
    report = llm_report(single, single.metrics)
    assert report.primary is not None and report.primary.endpoint == "https://llm.example/v1"
    assert report.backup is None and report.circuit == "none"

    failover = _llm(backup=True)
    failover.metrics.llm_requests.labels("network").inc(2)
    failover.client.breaker.failure()  # type: ignore[attr-defined]
    report = llm_report(failover, failover.metrics)
    assert report.backup is not None and report.backup.model == "m2"
    assert (report.circuit, report.consecutive_failures, report.failure_threshold) == ("closed", 1, 2)
    assert report.requests == {"network": 2}
    failover.client.breaker.failure()  # type: ignore[attr-defined]
    assert llm_report(failover, failover.metrics).circuit == "open"
    assert "pw" not in report.model_dump_json() and "key=" not in report.model_dump_json()
